"""A report written to a pipe that something made non-blocking is still written whole; a stdout
that cannot take it (full, closed) is one error line and exit 2, a reader that leaves is quiet.

A pipe's file description is shared by every process that holds it; when one of them (a parent
tool, a library) sets it non-blocking, a plain write past the pipe's 64 KiB fails with EAGAIN as
soon as the reader lags, and a JSON report would end mid-document.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from helpers import REPO


def test_a_report_past_64_kib_reaches_a_slow_reader_of_a_non_blocking_pipe():
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    child = subprocess.Popen(
        [sys.executable, "-m", "ppaux_cli", "rules", "--format", "json"],  # about 88 KB
        cwd=REPO,
        stdout=write_end,
        stderr=subprocess.PIPE,
    )
    os.close(write_end)
    time.sleep(3)  # the reader lags: the child has long filled the pipe
    chunks = []
    with os.fdopen(read_end, "rb") as reader:
        while chunk := reader.read(65536):
            chunks.append(chunk)
    _, stderr = child.communicate(timeout=120)
    data = b"".join(chunks)
    assert child.returncode == 0, stderr.decode()
    assert b"BlockingIOError" not in stderr
    assert len(data) > 65536
    assert json.loads(data)["rules"][0]["code"] == "PP101"


def _stdout_to(args: str, target: str) -> subprocess.CompletedProcess[str]:
    # A shell sets up stdout as a user's would: '> /dev/full', '>&-'.
    command = f"exec {sys.executable} -m ppaux_cli {args} {target}"
    return subprocess.run(
        ["bash", "-c", command], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )


#: Commands that write to stdout, and what their error line calls what they write.
WRITERS = [
    pytest.param("rules --format json", "the rules", id="rules"),
    pytest.param(
        "tensorize fixtures/dumps/aux_list.pt -o -",
        "the rewritten dump",
        id="tensorize",
        marks=pytest.mark.torch,
    ),
]


@pytest.mark.parametrize(("args", "what"), WRITERS)
def test_a_full_stdout_is_one_error_line_and_exit_2(args, what):
    done = _stdout_to(args, "> /dev/full")
    assert (done.returncode, done.stderr) == (
        2,
        f"ppaux: error: stdout: cannot write {what}: No space left on device\n",
    )


@pytest.mark.parametrize(("args", "what"), WRITERS)
def test_a_closed_stdout_is_one_error_line_and_exit_2(args, what):
    done = _stdout_to(args, ">&-")
    assert (done.returncode, done.stderr) == (
        2,
        f"ppaux: error: cannot write {what}: stdout is closed; give a file with --output\n",
    )


def test_a_reader_that_leaves_early_ends_the_run_without_a_message():
    read_end, write_end = os.pipe()
    child = subprocess.Popen(
        [sys.executable, "-m", "ppaux_cli", "rules", "--format", "json"],
        cwd=REPO,
        stdout=write_end,
        stderr=subprocess.PIPE,
    )
    os.close(write_end)
    os.read(read_end, 10)  # as '| head -c 10' does, then leaves
    os.close(read_end)
    _, stderr = child.communicate(timeout=120)
    assert (child.returncode, stderr) == (1, b"")


@pytest.mark.parametrize("target", ["2>&-", "2> /dev/full"])
def test_a_stderr_that_takes_no_line_leaves_the_exit_codes_as_they_are(target):
    missing = _stdout_to("inspect fixtures/no-such-dump.pt", f"> /dev/null {target}")
    assert missing.returncode == 2  # an input that cannot be read
    found = _stdout_to("inspect fixtures/dumps/aux_list.pt", f"> /dev/null {target}")
    assert found.returncode == 1  # findings at error


def test_a_closed_stdout_does_not_stop_a_report_given_to_output(tmp_path):
    report = tmp_path / "report.json"
    done = _stdout_to(f"inspect fixtures/dumps/aux_list.pt --format json -o {report}", ">&-")
    assert (done.returncode, done.stderr) == (1, "")
    assert json.loads(report.read_text())["command"] == "inspect"


def test_a_closed_stdin_reads_as_empty():
    done = _stdout_to("inspect -", "> /dev/null <&-")
    assert (done.returncode, done.stderr) == (2, "ppaux: error: <stdin>: empty file\n")


def test_a_full_stdout_still_names_the_inputs_that_could_not_be_used():
    done = _stdout_to("inspect fixtures/corrupt/empty.pt fixtures/dumps/aux_list.pt", "> /dev/full")
    assert (done.returncode, done.stderr.splitlines()) == (
        2,
        [
            "ppaux: error: stdout: cannot write the report: No space left on device",
            "ppaux: error: fixtures/corrupt/empty.pt: empty file",
        ],
    )


@pytest.mark.parametrize(
    "args",
    [
        "inspect fixtures/dumps/aux_list.pt",
        "rules",
        pytest.param("tensorize fixtures/dumps/aux_list.pt", marks=pytest.mark.torch),
    ],
)
def test_an_empty_output_path_is_named_as_such(args):
    done = _stdout_to(args, "-o ''")
    assert (done.returncode, done.stderr) == (
        2,
        "ppaux: error: --output: an empty path; give a file name, or - for stdout\n",
    )
