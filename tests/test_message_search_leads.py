"""The nine messages are looked for only from the first place one may begin (the words before
its name, found by substring search): the matches are those of the nine patterns searched at
every character, in any text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.sglang import search_message
from ppaux.sglang.message_search import _SEARCH, _messages

_PIECES = st.sampled_from(
    [
        "auxiliary PP output ",
        "'scores'",
        " is not a tensor",
        "duplicate auxiliary PP tensor ",
        "received a non-tensor auxiliary PP output",
        "sampling observer did not reconstruct its PP output",
        "RuntimeError: ",
        "auxiliary",
        "\n",
        " ",
        "x",
        "'",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=12).map("".join))
def test_the_matches_are_those_of_a_search_at_every_character(text):
    every = [(m.start(), m.end()) for m in _SEARCH.finditer(text)]
    found = [(m.start, m.end) for m in _messages(text)]
    # a match whose name is no string literal the parser reads is skipped, as before: the
    # others are the same places, in the same order
    assert all(place in every for place in found)
    assert found == sorted(found)
    if "'" not in text:
        assert found == every


def test_a_message_after_a_long_text_of_none_is_found_where_it_stands():
    text = "x" * 100_000 + "RuntimeError: duplicate auxiliary PP tensor 'a'"
    found = search_message(text)
    assert found is not None
    assert (found.start, found.name) == (100_014, "a")


def test_a_text_of_none_of_their_words_holds_none():
    assert search_message("RuntimeError: NCCL error: unhandled system error\n" * 1000) is None
