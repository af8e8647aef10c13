"""An exception's type alone on a record's line (``AssertionError``, ``AssertionError()``: a
logger's record of an exception raised without a message) is that process's failure, as
``AssertionError: message`` is; a record just before the traceback that it logs is one
failure with it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppaux.triage import triage_paths
from ppaux.triage.tracelines import raised
from ppaux_cli.app import app


def _roots(path) -> list[tuple[str, str | None, str | None, int]]:
    report = triage_paths([str(path)])
    assert not report.problems
    return [
        (f.code, f.key, (f.extra or {}).get("exception"), f.location.line if f.location else 0)
        for f in report.findings
        if f.code in ("PP801", "PP802", "PP803", "PP809")
    ]


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ("ERROR 04-23 16:34:41 [engine.py:160] AssertionError", None),
        ("ERROR 04-23 16:34:41 [engine.py:160] AssertionError()", None),
        ("ERROR 04-23 16:34:41 [engine.py:160] AssertionError\r", None),
        ("[2025-11-03 11:53:19 TP1 PP0] AssertionError", "TP1 PP0"),
        ("[2025-11-03 11:53:19 TP1 PP0] AssertionError()", "TP1 PP0"),
    ],
)
def test_a_bare_type_is_the_failure_of_its_record(tmp_path, line, key):
    log = tmp_path / "bare.log"
    log.write_bytes(f"INFO 04-23 16:34:40 [engine.py:120] started\n{line}\n".encode())
    assert _roots(log) == [("PP802", key, "AssertionError", 2)]
    result = CliRunner().invoke(app, ["triage", str(log)])
    assert result.exit_code == 1, result.output


def test_a_record_before_its_cut_traceback_is_one_failure(tmp_path):
    log = tmp_path / "repr.log"
    log.write_text(
        "ERROR 07-21 10:38:13 [engine.py:163] AssertionError()\n"
        "ERROR 07-21 10:38:13 [engine.py:163] Traceback (most recent call last):\n"
        'ERROR 07-21 10:38:13 [engine.py:163]   File "/srv/vllm/engine.py", line 161, in start\n'
        "ERROR 07-21 10:38:13 [engine.py:163]     self.run_engine_loop()\n"
    )
    assert _roots(log) == [("PP802", None, "AssertionError", 1)]


def test_another_process_record_before_a_traceback_stays_its_own(tmp_path):
    log = tmp_path / "two.log"
    log.write_text(
        "[2025-11-03 11:53:19 TP1 PP0] AssertionError\n"
        "[2025-11-03 11:53:20 TP0 PP0] Traceback (most recent call last):\n"
        '  File "/srv/sglang/scheduler.py", line 10, in run\n'
        "    self.recv()\n"
        "RuntimeError: Connection closed by peer\n"
    )
    roots = _roots(log)
    assert roots[0] == ("PP802", "TP1 PP0", "AssertionError", 1)
    assert [(code, key, line) for code, key, _, line in roots[1:]] == [("PP803", "TP0 PP0", 2)]


def test_prose_naming_a_type_is_no_exception_line():
    assert raised("AssertionError()") == ("AssertionError", "")
    assert raised("AssertionError(x)") is None
    assert raised("AssertionError() was raised") is None


@settings(max_examples=40, deadline=None)
@given(
    name=st.from_regex(r"[A-Z][a-z]{1,12}", fullmatch=True),
    suffix=st.sampled_from(["Error", "Exception"]),
    call=st.booleans(),
)
def test_any_bare_type_reads_as_its_type(name, suffix, call):
    exception = name + suffix
    assert raised(exception + ("()" if call else "")) == (exception, "")
