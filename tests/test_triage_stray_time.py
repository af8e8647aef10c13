"""sglang's prefix that lost its opening bracket behind a paste's marks (a Markdown quote, a
backtick that opened a code span): the ranks are read, and so is the time where it is all
there; a time cut at its start (``026-01-08 ...``) is no time."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths

_REST = (
    "TP1 PP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "a.py", line 1, in f\n'
    "    g()\n"
    "ValueError: x\n"
)


def _root(tmp_path, text):
    log = tmp_path / "pasted.log"
    log.write_text(text)
    report = triage_paths([str(log)])
    (root,) = [f for f in report.findings if f.code == "PP802"]
    return root


def test_a_time_behind_a_quote_and_a_backtick_is_read(tmp_path):
    root = _root(tmp_path, "> `2025-11-03 11:53:19 " + _REST)
    assert "2025-11-03 11:53:19" in root.message
    assert root.extra["ranks"] == ["TP1 PP0"]


def test_a_time_cut_at_its_start_is_no_time(tmp_path):
    root = _root(tmp_path, "> `025-11-03 11:53:19 " + _REST)
    assert "an unknown time" in root.message
    assert root.extra["ranks"] == ["TP1 PP0"]


@settings(max_examples=25, deadline=None)
@given(st.text(alphabet="`'\" >|-", max_size=6))
def test_any_stray_marks_before_a_whole_time_keep_it(tmp_path_factory, marks):
    root = _root(tmp_path_factory.mktemp("stray"), marks + "2025-11-03 11:53:19.250 " + _REST)
    assert "2025-11-03 11:53:19.250" in root.message
