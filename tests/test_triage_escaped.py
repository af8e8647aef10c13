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
        (f.code, f.key, f.extra.get("exception"), f.extra.get("message"), f.location.line)
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


def _flattened_forms(block: list[str]) -> dict[str, str]:
    """The traceback ``block`` (its first line sglang's prefix and header) as pastes flatten
    it: repr()'s escapes (quotes left as they are), repr() of the traceback alone behind the
    prefix, CRLF escapes, and newlines become runs of spaces."""
    prefix, header = block[0].split("Traceback", 1)
    body = "\n".join(["Traceback" + header, *block[1:]])
    literal = repr(body)[1:-1]
    return {
        "repr-text": prefix + literal,
        "repr-quoted": prefix + repr(body),
        "repr-crlf": prefix + repr(body.replace("\n", "\r\n"))[1:-1],
        "spaces": "   ".join(block),
        "one-space": " ".join(line.strip() for line in block),
    }


@given(
    form=st.sampled_from(["repr-text", "repr-quoted", "repr-crlf", "spaces", "one-space"]),
    cri=st.booleans(),
)
def test_a_flattened_traceback_keeps_its_frames_rank_and_exception(form, cri, tmp_path_factory):
    lines = AUX.read_text(encoding="utf-8").splitlines()
    start = next(n for n, line in enumerate(lines) if "PP0] Scheduler hit" in line)
    end = next(n for n, line in enumerate(lines) if line.startswith("RuntimeError")) + 1
    flat = _flattened_forms(lines[start:end])[form]
    assert "\n" not in flat and 'File "' in flat
    path = tmp_path_factory.mktemp("flat") / "flat.log"
    kept = [*lines[:start], flat, *lines[end:]]
    if cri:  # each line in a CRI record, as the kubelet writes a pod's log
        kept = [f"2026-12-03T14:56:07.{n:09d}Z stderr F {line}" for n, line in enumerate(kept)]
    path.write_text("\n".join(kept) + "\n")
    assert _roots(path) == [
        ("PP801", "PP0", "RuntimeError", "received a non-tensor auxiliary PP output", start + 1)
    ], (form, cri)
