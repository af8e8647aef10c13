"""Strings from files are shown escaped, by one function, in every format: no raw control
character, bidi mark, other format character or lone surrogate reaches any output."""

from __future__ import annotations

import json
import unicodedata
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.report.document import InputProblem, Report, Table
from ppaux.report.findings import Finding, Severity
from ppaux.report.formats import Format, render
from ppaux.text import shown

#: Every C0 control, DEL and every C1 control.
CONTROLS = [chr(c) for c in range(0x20)] + ["\x7f"] + [chr(c) for c in range(0x80, 0xA0)]
#: Bidi embeddings and overrides, isolates, the marks (LRM, RLM, ALM).
BIDI = [chr(c) for c in range(0x202A, 0x202F)] + [chr(c) for c in range(0x2066, 0x206A)]
BIDI += ["\u200e", "\u200f", "\u061c"]
#: Other format characters, separators and non-ASCII spaces, noncharacters, private use, tags.
OTHER = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u2028", "\u2029"]
OTHER += ["\u00a0", "\u3000", "\ufffe", "\uffff", "\ue000", "\U000e0001", "\U000e007f"]
#: Lone surrogates: what an undecodable file name or a pickled string can hold.
SURROGATES = ["\ud800", "\udbff", "\udc00", "\udfff", "\udc80"]
HOSTILE = CONTROLS + BIDI + OTHER + SURROGATES

hostile_text = st.lists(
    st.one_of(
        st.sampled_from(HOSTILE),
        st.sampled_from(list("ab|<>&\"'`*_[]\\%:,; ")),
        st.characters(codec=None),  # anything at all, surrogates included
    ),
    max_size=12,
).map("".join)


def test_every_hostile_character_is_unprintable_to_python():
    # The lists above are what the escaping must cover: each is one Python does not print.
    assert not any(c.isprintable() for c in HOSTILE)
    assert {unicodedata.category(c) for c in BIDI} == {"Cf"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain name", "plain name"),
        ("\x1b[31mred", "\\x1b[31mred"),
        ("a\nb\tc\rd\x00", "a\\nb\\tc\\rd\\x00"),
        ("\x7f\x85\x9f", "\\x7f\\x85\\x9f"),
        ("abc\u202edcba", "abc\\u202edcba"),
        ("\u2066x\u2069\u200e\u200f\u061c", "\\u2066x\\u2069\\u200e\\u200f\\u061c"),
        ("\ud800\udfff", "\\ud800\\udfff"),
        ("tag\U000e0001", "tag\\U000e0001"),
        ("\u00a0\u2028", "\\xa0\\u2028"),
        ("écran 日本 \U0001f600", "écran 日本 \U0001f600"),  # printable stays as it is
    ],
)
def test_shown_escapes_as_written(text, expected):
    assert shown(text, None) == expected


def test_shown_cuts_before_escaping_and_says_how_long():
    assert shown("\x00" * 1000, 3) == "\\x00\\x00\\x00... (1000 characters)"
    assert shown("abcdef", 6) == "abcdef"
    assert shown("x" * 201) == "x" * 200 + "... (201 characters)"  # the default cut
    assert shown(b"bytes") == "<bytes>"  # a wrong type from a file does not raise


@given(hostile_text)
@settings(max_examples=300, deadline=None)
def test_shown_is_printable_and_stable(text):
    once = shown(text, None)
    assert once.isprintable()
    assert shown(once, None) == once
    if text.isprintable():
        assert once == text


def _hostile_report(text: str) -> Report:
    finding = Finding(
        code="PP101",
        severity=Severity.ERROR,
        message=f"message {text}",
        path=f"dir/{text}.pt",
        key=text,
        sglang_error=f"error {text}",
        hint=f"hint {text}",
        extra={text: [text, {"nested": text}], "n": 2**300},
        location={"file": f"{text}.py", "line": 3, "function": text},
    )
    warning = Finding("PP104", Severity.WARNING, text, text, key=None)
    return Report(
        command="inspect",
        findings=[finding, warning],
        problems=[InputProblem(f"{text}.pt", f"cannot read {text}")],
        data={"files": [{"path": f"dir/{text}.pt", text: text}], text: {text: [text]}},
        tables=[
            Table(f"table {text}", ("key", text), ((text, text), ("k", "v")), frozenset({(0, 1)}))
        ],
        notes=[f"note {text}"],
    )


def _allowed(char: str) -> bool:
    return char == "\n" or char.isprintable()


@given(hostile_text)
@settings(max_examples=60, deadline=None)
def test_no_format_writes_an_unprintable_character(text):
    report = _hostile_report(text)
    for fmt in Format:
        out = render(report, fmt, width=100)
        bad = sorted({f"U+{ord(c):04X}" for c in out if not _allowed(c)})
        assert not bad, (fmt.value, bad)
        out.encode("utf-8")  # strict: a lone surrogate would raise here
        if fmt in (Format.JSON, Format.SARIF, Format.GITLAB):
            json.loads(out)
        if fmt is Format.JUNIT:
            ET.fromstring(out.encode("utf-8"))


#: How each format writes the shown text '\x1b[2J\u202e\ud800': JSON doubles a backslash,
#: Markdown backslash-escapes a backslash and a bracket, the others write it as it is.
WRITTEN = {
    Format.JSON: r"\\x1b[2J\\u202e\\ud800",
    Format.SARIF: r"\\x1b[2J\\u202e\\ud800",
    Format.GITLAB: r"\\x1b[2J\\u202e\\ud800",
    Format.MARKDOWN: r"\\x1b\[2J\\u202e\\ud800",
}


@pytest.mark.parametrize("fmt", list(Format))
def test_every_format_shows_the_escape(fmt):
    out = render(_hostile_report("\x1b[2J\u202e\ud800"), fmt, width=300)
    assert WRITTEN.get(fmt, r"\x1b[2J\u202e\ud800") in out


def test_coloured_text_keeps_its_own_escapes_only():
    out = render(_hostile_report("\x1b]0;title\x07"), Format.TEXT, color=True)
    # rich's colour codes are the only escape sequences: each ESC starts 'ESC['.
    assert all(out[i + 1] == "[" for i, c in enumerate(out) if c == "\x1b")
    assert "\\x1b]0;title\\x07" in out


def test_a_bad_location_or_huge_number_is_no_internal_error():
    report = _hostile_report("x")
    odd = Finding(
        "PP101",
        Severity.ERROR,
        "m",
        "p.pt",
        key="k",
        extra={(1, 2): 10**5000, None: float("nan")},
        location={"file": 7, "line": "ten", "function": None},
    )
    report.findings.append(odd)
    for fmt in Format:
        out = render(report, fmt)
        assert "<int of 16610 bits>" in out or fmt is not Format.JSON
