"""A record a person quoted in a Markdown table of a paste (an issue's table of what each
stage printed) is a record of that paste: it is read from its cell, without the table's pipes
and the cell's backticks; a table's cells that hold no record's prefix (a table of exception
names, of expected answers) hold no failure. Every expected value is written by hand.
"""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths

_IMA = "RuntimeError: CUDA error: an illegal memory access was encountered"


def _report(text: str):
    return triage_paths(["issue.md"], {"issue.md": io.BytesIO(text.encode())})


def _table(rows: list[tuple[str, str]]) -> str:
    head = "We saw this on the second stage:\n\n| time | line |\n|---|---|\n"
    return head + "".join(f"| {a} | {b} |\n" for a, b in rows) + "\nany idea?\n"


def test_a_record_quoted_in_a_table_cell_is_read_without_the_tables_pipes():
    text = _table(
        [
            ("10:00:00", "[2024-05-01 10:00:00 PP1 TP0] Decode batch, #running-req: 1"),
            ("10:00:01", f"[2024-05-01 10:00:01 PP1 TP0] {_IMA}"),
        ]
    )
    report = _report(text)
    roots = [f for f in report.findings if f.code == "PP802"]
    assert [f.key for f in roots] == ["PP1 TP0"]
    assert f"(issue.md:6): {_IMA}; " in roots[0].message
    assert "|" not in roots[0].message


def test_a_record_in_backticks_in_a_middle_cell_is_that_record():
    text = (
        "| stage | record | note |\n|:--|:--|--:|\n"
        "| PP0 | `[2024-05-01 10:00:00 PP0 TP0] Decode batch, #running-req: 1` | fine |\n"
        f"| PP1 | `[2024-05-01 10:00:01 PP1 TP0] {_IMA}` | the first to fail |\n"
    )
    roots = [f for f in _report(text).findings if f.code == "PP802"]
    assert [f.key for f in roots] == ["PP1 TP0"]
    assert f"(issue.md:4): {_IMA}; " in roots[0].message
    assert "first to fail" not in roots[0].message


def test_a_table_of_exception_names_beside_sglangs_lines_holds_no_failure():
    text = (
        "[2024-05-01 10:00:00 PP0 TP0] Decode batch, #running-req: 1\n"
        "| message | meaning |\n|---|---|\n"
        f"| {_IMA} | a kernel's fault |\n"
        "| KeyError: 'output_token_logprobs_val' | stages disagree |\n"
    )
    report = _report(text)
    assert not report.problems
    assert report.findings == ()


@settings(max_examples=30, deadline=None)
@given(
    pad=st.text(alphabet=" \t", max_size=3),
    tick=st.sampled_from(["", "`"]),
    note=st.text(alphabet="abc xyz.|-", max_size=20).filter(lambda t: "\\" not in t),
)
def test_any_table_row_around_the_record_keeps_its_rank_and_message(pad, tick, note):
    record = f"[2024-05-01 10:00:01 PP1 TP0] {_IMA}"
    row = f"{pad}| 10:00:01 |{pad}{tick}{record}{tick}{pad}| {note.replace('|', chr(92) + '|')} |"
    text = "| time | line | note |\n|---|---|---|\n" + row + "\n"
    roots = [f for f in _report(text).findings if f.code == "PP802"]
    assert [f.key for f in roots] == ["PP1 TP0"]
    assert f"(issue.md:3): {_IMA}; " in roots[0].message
