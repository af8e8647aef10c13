"""The string literals a line writes (a repr's, a JSON text's) hold text the line echoes: a
marker inside one is no failure of the process. Where a literal opens and closes, written by
hand; a dict's value is one whatever spaces stand around its colon, and a literal's prefix
(``r"..."``) opens it as its quote would."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ppaux.triage import triage_paths
from ppaux.triage.flattened import in_group_note, quoted_spans, split_lines

HEALTHY = (
    "[2026-12-03 14:56:05 TP0] Load weight end. type=LlamaForCausalLM\n"
    "[2026-12-03 14:56:06 PP0] Decode batch. #running-req: 1\n"
)


@pytest.mark.parametrize(
    ("text", "inside"),
    [
        ('{"a": "b"}', ["a", "b"]),
        ('{"a" : "b"}', ["a", "b"]),
        ('{"a"  :  "b", "c" :"d"}', ["a", "b", "c", "d"]),
        ('g.add_note(r"x\\ny")', ["x\\ny"]),
        ("f(b'raw')", ["raw"]),
        ("it's Bob's", []),
        (' : "not after a literal"', []),
        ("x=('RuntimeError: boom')", ["RuntimeError: boom"]),
    ],
)
def test_the_literals_a_line_writes(text, inside):
    assert [text[start:end] for start, end in quoted_spans(text)] == inside


_WORDS = st.text(alphabet="abcdefgh RuntimeEror:.", min_size=1, max_size=20)


@given(key=_WORDS, value=_WORDS, left=st.integers(0, 3), right=st.integers(0, 3))
def test_a_dict_value_is_a_literal_whatever_spaces_stand_around_its_colon(key, value, left, right):
    text = '{"' + key + '"' + " " * left + ":" + " " * right + '"' + value + '"}'
    assert [text[start:end] for start, end in quoted_spans(text)] == [key, value]


@pytest.mark.parametrize(
    "record",
    [
        'Receive: obj={"rid" : "abc", "text" : "RuntimeError: received a non-tensor auxiliary '
        'PP output"}',
        'Receive: obj={"text" : "Traceback (most recent call last):\\n  File \\"a.py\\", line 1, '
        'in f\\nRuntimeError: received a non-tensor auxiliary PP output"}',
        "x=('RuntimeError: received a non-tensor auxiliary PP output')",
    ],
)
def test_a_failure_echoed_inside_a_literal_is_no_failure(tmp_path: Path, record):
    log = tmp_path / "server.log"
    log.write_text(HEALTHY + f"[2026-12-03 14:56:07 PP1] {record}\n", encoding="utf-8")
    assert triage_paths([str(log)]).findings == ()


def test_a_group_note_holding_an_escaped_newline_stays_one_line():
    note = "  | Traceback (most recent call last):\\nRuntimeError: fake note"
    assert in_group_note(note)
    assert split_lines(note) == [note]
    # A record's traceback written as a JSON string has a frame after its header's newline.
    record = '  | Traceback (most recent call last):\\n  File \\"a.py\\", line 1, in f'
    assert not in_group_note(record)
    assert split_lines(record) == [
        "  | Traceback (most recent call last):",
        '  File "a.py", line 1, in f',
    ]
