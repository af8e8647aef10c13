"""A traceback whose newlines are written as a JSON string writes them (``\\n``, two
characters), pasted raw, is read as its lines."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from ppaux.triage import triage_paths
from ppaux.triage.flattened import unescaped

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
AUX = LOGS / "sglang-aux-list.log"


def _roots(path: Path):
    return [
        (f.code, f.key, f.extra.get("exception"), f.extra.get("message"), f.location["line"])
        for f in triage_paths([str(path)]).findings
        if f.code in ("PP801", "PP802", "PP809")
    ]


def test_a_traceback_with_escaped_newlines_pasted_raw_has_its_rank_and_exception(tmp_path):
    lines = AUX.read_text(encoding="utf-8").splitlines()
    start = next(n for n, line in enumerate(lines) if "PP0] Scheduler hit" in line)
    end = next(n for n, line in enumerate(lines) if line.startswith("RuntimeError")) + 1
    escaped = json.dumps("\n".join(lines[start:end]))[1:-1]  # a JSON string's text, unquoted
    assert "\\n" in escaped and '\\"' in escaped and "\n" not in escaped
    for n, flat in enumerate((escaped, f'"log": "{escaped}\\n", "stream": "stderr"')):
        path = tmp_path / f"escaped{n}.log"
        path.write_text("\n".join([*lines[:start], flat, *lines[end:]]) + "\n")
        assert _roots(path) == [
            (
                "PP801",
                "PP0",
                "RuntimeError",
                "received a non-tensor auxiliary PP output",
                start + 1,
            )
        ]


@given(
    st.lists(
        st.text(st.characters(blacklist_categories=("Cs",)), max_size=30), min_size=1, max_size=8
    )
)
def test_unescaping_gives_back_the_lines_a_json_string_held(tail):
    lines = ["[2026-12-03 14:56:07 PP0] x: Traceback (most recent call last):", *tail]
    text = json.dumps("\n".join(lines), ensure_ascii=False)[1:-1]
    got = unescaped(text)
    assert got is not None
    expected = "\n".join(lines).replace("\r", "").split("\n")
    if not any(c < " " and c not in "\n\r\t" for c in "".join(tail)):
        assert got == expected
