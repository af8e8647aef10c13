"""Standard input and other streams named as input paths: ``-`` is how a command that can read a
stream takes one; a path naming a pipe (``/dev/stdin`` fed by a pipe, ``<(...)``, a FIFO) is
refused in one line that says to give ``-`` instead, where the command reads ``-``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from helpers import ENV, REPO

from ppaux.files import stdin_hint

DUMP = REPO / "fixtures" / "dumps" / "aux_list.pt"
LOG = REPO / "fixtures" / "logs" / "sglang-aux-list.log"
NOT_REGULAR = "is not a regular file (a FIFO, socket or device)"


def _piped(data: bytes, *args: str) -> subprocess.CompletedProcess[bytes]:
    """``ppaux ARGS`` in a child process whose standard input is a pipe carrying ``data``."""
    env = {**os.environ, **{k: v for k, v in ENV.items() if v is not None}}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "ppaux_cli", *args],
        input=data,
        capture_output=True,
        cwd=REPO,
        env=env,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("command", "data", "example"),
    [
        ("inspect", DUMP, "cat dump.pt | ppaux inspect -"),
        ("triage", LOG, "ppaux triage - < server.log"),
    ],
)
def test_dev_stdin_fed_by_a_pipe_suggests_dash(command, data, example):
    done = _piped(data.read_bytes(), command, "/dev/stdin")
    assert done.returncode == 2
    assert done.stderr.decode() == (
        f"ppaux: error: /dev/stdin: {NOT_REGULAR}; it is standard input: give - to read it "
        f"({example})\n"
    )


def test_dash_reads_the_same_pipe():
    done = _piped(DUMP.read_bytes(), "inspect", "-", "--format", "json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert [f["code"] for f in report["findings"]] == ["PP101"]
    assert report["findings"][0]["path"] == "<stdin>"


def test_a_command_that_cannot_read_dash_does_not_suggest_it():
    done = _piped(DUMP.read_bytes(), "replay", "/dev/stdin")
    assert done.returncode == 2
    assert f"ppaux: error: /dev/stdin: {NOT_REGULAR}\n" in done.stderr.decode()
    assert " - " not in done.stderr.decode()


def test_stdin_hint_names_a_fifo_and_nothing_else(tmp_path):
    fifo = tmp_path / "dump.pt"
    os.mkfifo(fifo)
    regular = tmp_path / "regular.pt"
    regular.write_bytes(b"x")
    assert stdin_hint(str(fifo), "EXAMPLE") == "; give - and send it on standard input (EXAMPLE)"
    assert stdin_hint(str(regular), "EXAMPLE") == ""
    assert stdin_hint(str(tmp_path), "EXAMPLE") == ""
    assert stdin_hint(str(tmp_path / "missing"), "EXAMPLE") == ""
