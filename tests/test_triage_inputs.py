"""Every input ``ppaux triage`` is given is read or refused by its content: compressed (gzip,
several members; bzip2; xz; zstd where installed), UTF-16/32 with or without a byte-order mark;
binary data, a file that is no sglang log and a decompression bomb are one error line, exit 2."""

from __future__ import annotations

import bz2
import gzip
import importlib.util
import json
import lzma
import os
import shutil
from pathlib import Path
from xml.etree import ElementTree

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppaux.limits import Limits
from ppaux.report.formats import Format, render
from ppaux.triage import triage_paths
from ppaux.triage.scanner import MARKERS
from ppaux_cli.app import app

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
ROOT_LOG = LOGS / "sglang-aux-list.log"
NON_TENSOR = "received a non-tensor auxiliary PP output"


def _root(report):
    (root,) = [f for f in report.findings if f.code == "PP801"]
    return root


ENCODED = {
    "bzip2": lambda b: bz2.compress(b),
    "xz": lambda b: lzma.compress(b),
    "gzip-two-members": lambda b: gzip.compress(b[: len(b) // 2]) + gzip.compress(b[len(b) // 2 :]),
    "utf-16-le-no-bom": lambda b: b.decode().encode("utf-16-le"),
    "utf-16-be-no-bom": lambda b: b.decode().encode("utf-16-be"),
    "utf-16-bom": lambda b: b.decode().encode("utf-16"),
    "utf-32-bom": lambda b: b.decode().encode("utf-32"),
    "utf-32-le-no-bom": lambda b: b.decode().encode("utf-32-le"),
    "gzip-of-utf-16": lambda b: gzip.compress(b.decode().encode("utf-16-le")),
}


@pytest.mark.parametrize("form", sorted(ENCODED))
def test_compressed_and_wide_logs_are_read_by_content(form, tmp_path):
    log = tmp_path / "server"  # no suffix: the content alone says what it is
    log.write_bytes(ENCODED[form](ROOT_LOG.read_bytes()))
    report = triage_paths([str(log)])
    assert not report.problems
    root = _root(report)
    assert root.key == "PP0"
    assert root.sglang_error == NON_TENSOR


def _cli(*args: str):
    return CliRunner().invoke(app, ["triage", *args])


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (os.urandom(1) * 0 + bytes(range(256)) * 40, "binary data, not a text log"),
        # NULs alone are a hole (copytruncate), not content: refused for holding no log line.
        (b"\x00" * 5000, "not an sglang log"),
        (b"# My project\n\nA README about sglang and pipelines.\n", "not an sglang log"),
        (b"one line of text\n", "not an sglang log"),
        # The words of sglang's SIGQUIT line and of ppaux capture's, in prose: in a log they
        # stand behind sglang's prefix.
        (
            b"# Fixtures\n\n| `capture.pt` | ppaux capture: function `pop`, RuntimeError x |\n",
            "not an sglang log",
        ),
        (
            b"When a rank fails you see: Received sigquit from a child process.\n",
            "not an sglang log",
        ),
    ],
)
def test_what_is_no_log_is_one_error_line(content, reason, tmp_path):
    path = tmp_path / "given.log"
    path.write_bytes(content)
    result = _cli(str(path))
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"ppaux: error: {path}: ")
    assert reason in lines[0]


def test_a_file_that_is_no_log_beside_a_log_is_a_warning(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("remember to restart the server\n")
    report = triage_paths([str(notes), str(ROOT_LOG)])
    assert not report.problems
    assert [f.code for f in report.findings if f.code == "PP811"] == ["PP811"]
    assert _root(report).key == "PP0"


def test_a_json_document_of_no_log_lines_beside_a_log_is_left_out(tmp_path):
    # A directory of logs beside their expected.json reads the logs and leaves the JSON file out,
    # as it leaves out a note; the same file given alone is refused.
    shutil.copy(ROOT_LOG, tmp_path / "server.log")
    data = tmp_path / "expected.json"
    data.write_text('{"a": [{"b": 1}]}\n', encoding="utf-8")
    report = triage_paths([str(tmp_path)])
    assert not report.problems
    (left_out,) = [f for f in report.findings if f.code == "PP811"]
    assert left_out.severity.value == "warning"
    assert left_out.message.startswith(f"{data} is a JSON document none of whose records holds")
    assert left_out.message.endswith("it was left out, the other logs were triaged")
    assert _root(report).key == "PP0"
    alone = triage_paths([str(data)])
    assert [p.message for p in alone.problems] == [
        "a JSON document none of whose records holds a log line (a 'line', 'log', 'message', "
        "'textPayload' or 'MESSAGE' member, or Loki's values)"
    ]


def test_the_real_logs_directory_is_triaged_with_its_expected_json_left_out():
    real = LOGS / "real"
    report = triage_paths([str(real)])
    assert not report.problems
    assert [f.path for f in report.findings if f.code == "PP811"] == [str(real / "expected.json")]


def test_a_missing_log_is_one_error_line_and_nothing_on_stdout(tmp_path):
    result = _cli(str(tmp_path / "missing.log"))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == f"ppaux: error: {tmp_path / 'missing.log'}: no such file\n"


def test_a_decompression_bomb_is_refused_naming_the_limit(tmp_path):
    bomb = tmp_path / "bomb.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as out:
        chunk = b"\n" * (1 << 20)
        for _ in range(100):
            out.write(chunk)
    result = _cli(str(bomb))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "inflates more than 200 times its size past 64 MiB" in result.stderr


@pytest.mark.skipif(importlib.util.find_spec("zstandard") is not None, reason="zstandard present")
def test_zstd_without_the_package_is_said_plainly(tmp_path):
    log = tmp_path / "server.log.zst"
    log.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 20)
    result = _cli(str(log))
    assert result.exit_code == 2
    assert "zstd-compressed log, and the zstandard package is not installed" in result.stderr


def test_a_number_of_five_thousand_digits_is_a_finding(tmp_path):
    digits = "7" * 5000
    log = tmp_path / "digits.log"
    log.write_text(
        f"[2026-12-03 10:00:00 PP{digits} TP0] Scheduler hit an exception: Traceback (most "
        "recent call last):\n"
        f'  File "/srv/sglang/python/sglang/srt/managers/scheduler.py", line {digits}, in f\n'
        "    f()\n"
        "RuntimeError: boom\n"
    )
    report = triage_paths([str(log)])
    assert not report.problems
    (found,) = [f for f in report.findings if f.code == "PP811"]
    assert found.extra["lines"] == [1, 2]
    assert [f.code for f in report.findings if f.code == "PP802"] == ["PP802"]


_PIECES = st.sampled_from(
    [
        "[2026-12-03 10:00:00 PP0 TP0] ",
        "[2026-12-03 10:00:01 PP1 TP1] ",
        "026-12-03 10:00:01 PP1] ",
        "`",
        "  ",
        "0: ",
        "sglang-1  | ",
        "(pid=1, ip=10.0.0.1) ",
        "[pod/sglang-0/sglang] ",
        "2026-12-03T10:00:00.1Z ",
        "ERROR 2026-12-03T10:00:00Z [severity: ERROR] ",
        '{app="sglang"} ',
        "Scheduler hit an exception: Traceback (most recent call last):",
        "Traceback (m",
        'File "/x/sglang/srt/managers/scheduler.py", line 12, in f',
        "self.f()",
        "^^^^",
        "RuntimeError: NCCL error: unhandled system error",
        "torch.OutOfMemoryError: CUDA out of memory",
        "received a non-tensor auxiliary PP output",
        "Received sigquit from a child process.",
        '{"log": "Traceback (most recent call last):\\n", "time": "2026-12-03T10:00:00Z"}',
        '{"textPayload": "  File \\"/x.py\\", line 1, in f\\nValueError: x"}',
        "PP" + "9" * 60,
        "\x1b]0;title\x07",
        "\u202e",
        "\x00",
    ]
)
_LINES = st.lists(
    st.lists(st.one_of(_PIECES, st.text(max_size=20)), min_size=1, max_size=4).map("".join),
    min_size=1,
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(lines=_LINES)
def test_any_mix_of_envelopes_is_triaged_without_an_internal_error_or_a_control_character(
    lines, tmp_path_factory
):
    path = tmp_path_factory.mktemp("mix") / "mix.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogateescape")
    report = triage_paths([str(path)])
    for fmt in (Format.TEXT, Format.JSON, Format.MARKDOWN):
        text = render(report, fmt)
        assert not [c for c in text if (ord(c) < 0x20 and c not in "\n\t") or c == "\x7f"]
        assert "\u202e" not in text
    for step in report.data.get("steps", []):
        if step["argv"] is not None:
            assert all(not (ord(c) < 0x20) for word in step["argv"] for c in word)


def _roots_of(report):
    roots = [f for f in report.findings if f.code in ("PP801", "PP802")]
    return [(f.code, f.key, f.extra.get("kind")) for f in roots]


def test_a_log_with_a_hole_of_nul_bytes_is_read_around_the_hole(tmp_path):
    text = (LOGS / "sglang-aux-list.log").read_bytes()
    expected = _roots_of(triage_paths([str(LOGS / "sglang-aux-list.log")]))
    assert expected and expected[0][0] == "PP801"
    for name, data in (
        ("prefix.log", b"\x00" * 5000 + text),  # logrotate's copytruncate
        ("hole.log", text[:200] + b"\x00" * 3000 + text[200:]),  # a block lost in a crash
    ):
        log = tmp_path / name
        log.write_bytes(data)
        assert _roots_of(triage_paths([str(log)])) == expected, name
    zeros = tmp_path / "zeros.log"
    zeros.write_bytes(b"\x00" * 10000)
    report = triage_paths([str(zeros)])
    assert report.problems and not report.findings  # nothing readable is never clean


def test_a_progress_bar_before_a_header_on_the_same_line_keeps_the_rank(tmp_path):
    header = b"[2026-12-03 14:56:07 PP2 TP1] Scheduler hit an exception: Traceback"
    bar = b"".join(
        b"\rCapturing batches (bs=%d avail_mem=30.1 GB): %d%%|" % (n, n) + "\u2588".encode() * n
        for n in range(10, 60, 10)
    )
    body = (
        b" (most recent call last):\n"
        b'  File "/usr/lib/python3.11/site-packages/sglang/srt/model_executor/cuda_graph_runner.py"'
        b", line 10, in capture\n    x()\n"
        b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
    )
    log = tmp_path / "bar.log"
    log.write_bytes(bar + b"\r" + header + body)
    assert _roots_of(triage_paths([str(log)])) == [("PP802", "PP2 TP1", "memory")]


@pytest.mark.parametrize("envelope", ["plain", "cri"])
def test_a_progress_bar_before_a_header_keeps_the_rank_inside_a_runtime_s_envelope(
    tmp_path, envelope
):
    bar = "".join(f"Capturing batches (bs={n}): {n}%|{'#' * (n // 10)}\r" for n in (20, 60, 100))
    lines = [
        bar + "[2026-12-03 14:56:07 PP2] Scheduler hit an exception: Traceback (most recent "
        "call last):",
        '  File "/usr/lib/python3.11/site-packages/sglang/srt/managers/scheduler.py", line 10, '
        "in run",
        "    x()",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    ]
    if envelope == "cri":
        lines = [f"2026-12-03T14:56:07.{n:09d}Z stderr F {line}" for n, line in enumerate(lines)]
    log = tmp_path / "bar.log"
    log.write_bytes(("\n".join(lines) + "\n").encode())
    assert _roots_of(triage_paths([str(log)])) == [("PP802", "PP2", "memory")]


def test_a_message_a_carriage_return_cut_is_still_read(tmp_path):
    # A terminal shows 'x' over the message; the file still holds the message before it.
    log = tmp_path / "cr.log"
    log.write_bytes(b"[2026-12-03 14:56:02 PP2] RuntimeError: boom\rx\n")
    report = triage_paths([str(log)])
    assert _roots_of(report) == [("PP802", "PP2", "other")]
    result = CliRunner().invoke(app, ["triage", str(log)])
    assert result.exit_code == 1


def test_a_directory_of_empty_logs_prints_nothing_on_stdout(tmp_path):
    (tmp_path / "a.log").write_text("")
    result = CliRunner().invoke(app, ["triage", str(tmp_path)])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == f"ppaux: error: {tmp_path}: every log file it holds is empty\n"
    result = CliRunner().invoke(app, ["triage", str(tmp_path), "-f", "json"])
    assert result.exit_code == 2
    assert json.loads(result.stdout)["problems"] == [
        {"path": str(tmp_path), "message": "every log file it holds is empty"}
    ]
    assert result.stderr == f"ppaux: error: {tmp_path}: every log file it holds is empty\n"


def test_a_directory_with_empty_and_refused_files_names_each(tmp_path):
    # The folder-wide "every log file it holds is empty" would be untrue beside a refused
    # binary file: each file is named with its own reason.
    (tmp_path / "empty.log").write_text("")
    (tmp_path / "bin.log").write_bytes(bytes(range(256)) * 4)
    result = CliRunner().invoke(app, ["triage", str(tmp_path)])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert sorted(result.stderr.splitlines()) == [
        f"ppaux: error: {tmp_path / 'bin.log'}: binary data, not a text log",
        f"ppaux: error: {tmp_path / 'empty.log'}: empty file",
    ]


@pytest.mark.parametrize("head", [b"PK\x03\x04", b"\x80\x02\x8a\nl\xfc\x9cF\xf9", b"\x80\x05\x95"])
def test_a_dump_given_to_triage_points_to_inspect(tmp_path, head):
    dump = tmp_path / "capture.pt"
    dump.write_bytes(head + b"archive/data.pkl" * 8)
    result = CliRunner().invoke(app, ["triage", str(dump)])
    assert result.exit_code == 2
    assert result.stderr == (
        f"ppaux: error: {dump}: zip archive or pickle, not a text log: if it is a tensor dump "
        f"(torch.save's format), inspect reads it (ppaux inspect {dump})\n"
    )


def test_a_bundled_dump_given_to_triage_points_to_inspect():
    dump = LOGS.parent / "dumps" / "aux_list.pt"
    result = CliRunner().invoke(app, ["triage", str(dump)])
    assert result.exit_code == 2
    assert f"(ppaux inspect {dump})" in result.stderr


def _parsed(fmt: str, text: str) -> str:
    """The problem's message as the document of format ``fmt`` holds it (parsed, so a
    document that does not parse fails)."""
    if fmt == "json":
        (problem,) = json.loads(text)["problems"]
        return str(problem["message"])
    if fmt == "sarif":
        (run,) = json.loads(text)["runs"]
        (note,) = run["invocations"][0]["toolExecutionNotifications"]
        return str(note["message"]["text"])
    if fmt == "gitlab":
        (issue,) = json.loads(text)
        return str(issue["description"])
    if fmt == "junit":
        (error,) = ElementTree.fromstring(text).iter("error")
        return str(error.get("message"))
    assert fmt == "github"
    (annotation,) = [line for line in text.splitlines() if line.startswith("::error ")]
    return annotation.rsplit("::", 1)[1]


@pytest.mark.parametrize("fmt", ["json", "sarif", "gitlab", "junit", "github"])
def test_machine_formats_write_their_document_when_no_input_could_be_read(fmt, tmp_path):
    missing = tmp_path / "missing.log"
    result = CliRunner().invoke(app, ["triage", str(missing), "-f", fmt])
    assert result.exit_code == 2
    assert "no such file" in _parsed(fmt, result.stdout)
    assert result.stderr == f"ppaux: error: {missing}: no such file\n"


@pytest.mark.parametrize("fmt", ["markdown", "html"])
def test_a_report_of_no_readable_log_has_no_table_of_logs(fmt, tmp_path):
    # Nothing was read: the report names the input not checked and shows no empty logs table.
    missing = tmp_path / "missing.log"
    result = CliRunner().invoke(app, ["triage", str(missing), "-f", fmt])
    assert result.exit_code == 2
    assert "no such file" in result.stdout
    assert "other records" not in result.stdout
    read = CliRunner().invoke(app, ["triage", str(ROOT_LOG), "-f", fmt])
    assert "other records" in read.stdout  # the table's last column, where a log was read


def test_python_source_that_quotes_tracebacks_is_no_log(tmp_path):
    # torch's own source and tests hold tracebacks in docstrings and strings; a module of
    # definitions is refused, not triaged into invented roots.
    body = "".join(
        f'def helper_{n}(x):\n    """Example::\n\n        Traceback (most recent call last):\n'
        f'          File "x.py", line {n}, in helper_{n}\n        RuntimeError: NCCL error in: '
        f'ProcessGroupNCCL.cpp:{n}\n    """\n    return x\n\n\n'
        for n in range(30)
    )
    source = tmp_path / "module.py"
    source.write_text("import os\nimport sys\n\n\n" + body, encoding="utf-8")
    report = triage_paths([str(source)])
    assert not report.findings
    assert [p.message for p in report.problems] == [
        "not an sglang log: it reads as Python source code (definitions and imports, and no "
        "line of sglang's), whatever tracebacks it quotes"
    ]


def test_a_traceback_of_imports_is_still_a_log(tmp_path):
    # A failure while importing: every frame's code line is an import, and it is a log.
    frames = "".join(
        f'  File "/usr/lib/python3.11/site-packages/sglang/srt/m{n}.py", line 3, in <module>\n'
        f"    from sglang.srt import m{n + 1}\n"
        for n in range(40)
    )
    log = tmp_path / "import.log"
    log.write_text(
        "Traceback (most recent call last):\n" + frames + "ImportError: libcudart.so.12: cannot "
        "open shared object file\n",
        encoding="utf-8",
    )
    report = triage_paths([str(log)])
    assert not report.problems  # read as a log, not refused as source code
    assert report.data["logs"][0]["lines"] == 82


def test_a_traceback_behind_torchruns_rank_prefix_keeps_its_rank_and_exception(tmp_path):
    log = tmp_path / "torchrun.log"
    log.write_text(
        "[rank2]: Traceback (most recent call last):\n"
        '[rank2]:   File "/usr/lib/python3.11/site-packages/sglang/srt/model_executor/'
        'model_runner.py", line 1420, in forward\n'
        "[rank2]:     return self.forward_extend(\n"
        "[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
        "[rank0]:[E1203 15:06:07.000000000 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=88, OpType=RECV) ran for 600032 "
        "milliseconds before timing out.\n",
        encoding="utf-8",
    )
    report = triage_paths([str(log)])
    assert _roots_of(report) == [("PP802", "rank 2", "memory")]
    assert [f.key for f in report.findings if f.code == "PP803"] == ["rank 0"]


@pytest.mark.parametrize(
    "number", [lambda n: f"{n:6d}\t", lambda n: f"{n} | ", lambda n: f"[{n}] ", lambda n: f"{n}: "]
)
def test_a_paste_with_line_numbers_reads_as_the_log_itself(tmp_path, number):
    source = LOGS / "sglang-aux-list.log"
    expected = _roots_of(triage_paths([str(source)]))
    lines = source.read_text(encoding="utf-8").splitlines()
    log = tmp_path / "numbered.log"
    log.write_text("".join(f"{number(n)}{line}\n" for n, line in enumerate(lines, 1)))
    report = triage_paths([str(log)])
    assert report.data["logs"][0]["format"] == "numbered"
    assert _roots_of(report) == expected


def test_a_wrappers_time_and_name_before_each_line_are_peeled(tmp_path):
    source = LOGS / "sglang-aux-list.log"
    expected = _roots_of(triage_paths([str(source)]))
    lines = source.read_text(encoding="utf-8").splitlines()
    log = tmp_path / "wrapped.log"
    log.write_text("".join(f"[2026-12-03 15:56:07] [/bin/sh]: {line}\n" for line in lines))
    report = triage_paths([str(log)])
    assert report.data["logs"][0]["launcher"] == "wrapper"
    assert _roots_of(report) == expected


# -- the reader's limits (Limits' max_log_* fields; --limit NAME=N) -------------------------------

_AUX = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "sglang-aux-list.log"


def _ppaux(*args: str):
    return CliRunner().invoke(app, list(args), env={"NO_COLOR": "1", "COLUMNS": "200"})


def test_more_log_files_than_the_limit_is_refused_naming_it(tmp_path):
    for name in ("a.log", "b.log"):
        (tmp_path / name).write_bytes(_AUX.read_bytes())
    result = _ppaux("triage", "--limit", "max_log_files=1", str(tmp_path))
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"ppaux: error: {tmp_path}: holds more than 1 log files (limit max_log_files=1 "
        "reached); raise it with --limit max_log_files=N"
    )
    assert _ppaux("triage", "--limit", "max_log_files=2", str(tmp_path)).exit_code == 1


def test_a_compressed_log_past_the_inflation_limits_is_refused_naming_them(tmp_path):
    path = tmp_path / "server.log.gz"
    path.write_bytes(gzip.compress(_AUX.read_bytes() + b"x" * 200_000 + b"\n"))
    tight = ("--limit", "max_inflated_bytes=1000", "--limit", "max_inflation_ratio=2")
    result = _ppaux("triage", *tight, str(path))
    assert result.exit_code == 2
    assert "(limit max_inflation_ratio=2 reached)" in result.stderr
    assert "--limit max_inflation_ratio=N" in result.stderr
    # Under the default limits the same log is read, its failure found.
    assert _ppaux("triage", str(path)).exit_code == 1


def test_failures_past_max_failures_are_counted_not_kept():
    whole = triage_paths([str(_AUX)])
    kept = triage_paths([str(_AUX)], limits=Limits(max_failures=1))
    # The fixture's root (PP801) and the other stage's failure that followed it (PP803): with
    # one failure kept, the second is only counted, so no collateral finding is made of it.
    assert {"PP801", "PP803"} <= {f.code for f in whole.findings}
    assert "PP801" in {f.code for f in kept.findings}
    assert "PP803" not in {f.code for f in kept.findings}
    assert kept.data["logs"][0]["failures"] >= whole.data["logs"][0]["failures"]


def test_lines_past_max_log_line_are_cut_and_counted(tmp_path):
    path = tmp_path / "long.log"
    path.write_bytes(b"x" * 5000 + b" " + MARKERS[0] + b"\n" + _AUX.read_bytes())
    assert (
        triage_paths([str(path)], limits=Limits(max_log_line=1000)).data["logs"][0]["long_lines"]
        == 1
    )
    assert triage_paths([str(path)]).data["logs"][0]["long_lines"] == 0


def test_an_unknown_limit_is_one_line():
    result = _ppaux("triage", "--limit", "max_log_linez=5", str(_AUX))
    assert result.exit_code == 2
    assert result.stderr.startswith("ppaux: error: --limit: unknown limit 'max_log_linez'")
