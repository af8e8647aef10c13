"""Long runs of blanks are read in one pass: the joining of a message wrapped over lines
(``ppaux explain``, triage's reading of an exception line) and the matching of a learned line
prefix give what a plain pattern gives, line end by line end and space by space, without
looking at a run again from each of its blanks (figures in docs/benchmarks.md)."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from ppaux.sglang.message_search import _joined
from ppaux.triage.leads import lead_length

#: A line end and the blanks around it, as a pattern: the oracle of the one-pass join.
LINE_END = re.compile(r"[ \t]*\r?\n[ \t]*")


@given(st.text(alphabet=" \t\r\nab", max_size=40), st.sampled_from(["", " "]))
def test_a_wrapped_message_is_joined_as_the_pattern_joins_it(text, joint):
    assert _joined(text, joint) == LINE_END.sub(joint, text)


def test_a_lead_of_spaces_matches_the_same_spaces_only():
    lead = " " * 5000 + "x "
    assert lead_length(" " * 5000 + "x y", lead) == 5002
    assert lead_length(" " * 4999 + "x y", lead) == 0
    assert lead_length(" " * 5001 + "x y", lead) == 0


def test_numbers_after_spaces_may_change_their_length():
    assert lead_length("Dec 10 12:00:01 host x", "Dec  9 12:00:01 host ") == len(
        "Dec 10 12:00:01 host "
    )
    assert lead_length("[  7] body", "[ 12] ") == len("[  7] ")
