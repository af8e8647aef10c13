"""explain on hostile arguments: a bounded did-you-mean, and a pasted bidi override escaped in
JSON as in text."""

from __future__ import annotations

import difflib
import json

import pytest
from helpers import cli
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.report import RULES
from ppaux.sglang import MESSAGES
from ppaux_cli.commands.explain import _unknown

#: The length of every sequence handed to the matcher since it was last cleared.
_LENGTHS: list[int] = []


class _Counted(difflib.SequenceMatcher):  # type: ignore[type-arg]
    """A matcher that records the length of every sequence it is given to compare."""

    def set_seq1(self, a):  # type: ignore[no-untyped-def]
        _LENGTHS.append(len(a))
        super().set_seq1(a)

    def set_seq2(self, b):  # type: ignore[no-untyped-def]
        _LENGTHS.append(len(b))
        super().set_seq2(b)


def _compared(monkeypatch, value):  # type: ignore[no-untyped-def]
    """The message for ``value`` and the characters handed to the matcher to compare it."""
    _LENGTHS.clear()
    monkeypatch.setattr(difflib, "SequenceMatcher", _Counted)
    return _unknown(value)[0], sum(_LENGTHS)


# The comparison's work is counted, not timed: a did-you-mean that compared the whole argument
# (quadratic in its length) hands the matcher ten times the characters for a ten times longer
# argument; a bounded one the same. The seconds are in benchmarks/bench_explain.py.
@pytest.mark.parametrize(
    ("unit", "compared"),
    [
        ("bad message ", True),  # a sentence: compared with sglang's messages
        ("auxiliary PP output 'a' is not ", True),
        ("not-a-rule", True),  # a rule's name: compared with the names
        ("x", False),  # a word far longer than every rule's code: compared with none
    ],
)
def test_a_long_argument_is_compared_no_more_than_a_short_one(monkeypatch, unit, compared):
    short_message, short = _compared(monkeypatch, unit * 1000)
    long_message, long = _compared(monkeypatch, unit * 10_000)
    assert (short > 0) == compared
    assert long == short
    assert long_message == short_message  # both quote the argument's first 77 characters


@settings(max_examples=50, deadline=None)
@given(st.text(min_size=1, max_size=3000))
def test_no_argument_hands_the_matcher_more_than_a_bound(value):
    _LENGTHS.clear()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(difflib, "SequenceMatcher", _Counted)
        _unknown(value)
    # Every sequence compared is a choice (a rule's code or name, one of sglang's messages) or
    # a prefix of the argument no longer than the longest choice and 8 characters more.
    choices = [*RULES, *(r.name for r in RULES.values()), *(m.template for m in MESSAGES)]
    assert max(_LENGTHS, default=0) <= max(len(c) for c in choices) + 8


def test_the_hint_still_finds_a_near_miss():
    assert "did you mean 'PP110'?" in _unknown("PP11")[0]
    assert "did you mean 'torch-refuses'?" in _unknown("torch-refuse")[0]


def test_a_bidi_override_in_a_pasted_name_is_escaped_in_json_as_in_text():
    pasted = "auxiliary PP output 'sc\u202eores' is not a tensor"
    page = json.loads(cli("explain", pasted, "--format", "json").stdout)
    assert page["name"] == "sc\\u202eores"
    text = cli("explain", pasted).stdout
    assert "\u202e" not in text and "sc\\u202eores" in text
