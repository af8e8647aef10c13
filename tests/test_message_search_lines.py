"""Judging a match of the nine messages' words in a paste looks at that match's own line only
(the type written before it, a relay's quote after it; at most 4096 characters past the match
where a wrapped paste's lines were joined into one), never at the rest of the paste: a paste
that repeats such a line costs each line's length, not the paste's. The pastes the
search judges, the lines of each, and the answers are written here by hand.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.sglang import message_search

OTHER_TYPE = "KeyError: 'auxiliary PP output 'logits' is not a tensor'\n"
RELAY = (
    "(Worker_TP0 pid=0) ERROR 10-01 10:00:00 [v1/executor/multiproc_executor.py:597] "
    "RuntimeError: Worker failed with error 'auxiliary PP output 'logits' is not a tensor', "
    "please check the stack trace above for the root cause\n"
)


def _judged(monkeypatch, text: str) -> tuple[list[int], object]:
    """The lengths of the messages handed to sglang_raised while ``text`` is searched, and
    the search's answer."""
    seen: list[int] = []
    real = message_search.sglang_raised

    def spy(exception, message):
        seen.append(len(message))
        return real(exception, message)

    monkeypatch.setattr(message_search, "sglang_raised", spy)
    return seen, message_search.search_pasted(text)


def test_words_under_another_type_are_judged_on_their_line(monkeypatch):
    seen, found = _judged(monkeypatch, OTHER_TYPE)
    assert found is None  # a KeyError is not sglang's RuntimeError
    # the line's message after 'KeyError: ' (46 characters), and a space where a candidate
    # joined the paste's lines
    assert seen and max(seen) <= 47


def test_a_paste_joined_into_one_line_is_judged_near_the_match(monkeypatch):
    """The candidate that joins a wrapped paste's lines is one line of 200 x 57 characters:
    each match is judged from the type written up to 512 characters before it to at most 4096
    characters past it, not on the rest of the paste (200 x 57 = 11,400 characters)."""
    seen, found = _judged(monkeypatch, OTHER_TYPE * 200)
    assert found is None
    assert seen and max(seen) <= 512 + 46 + 4096


def test_a_relay_quoting_one_of_the_nine_is_found_in_a_long_paste(monkeypatch):
    seen, found = _judged(monkeypatch, RELAY * 200)
    assert found is not None
    assert found.message.id == "add-not-tensor"
    assert found.name == "logits"
    assert max(seen) < len(RELAY)


@settings(max_examples=25, deadline=None)
@given(repeats=st.integers(1, 40), tail=st.text(alphabet="abc \n", max_size=300))
def test_no_judgement_sees_more_than_one_line(repeats, tail):
    seen: list[int] = []
    real = message_search.sglang_raised
    try:

        def spy(exception, message):
            seen.append(message.count("\n"))
            return real(exception, message)

        message_search.sglang_raised = spy  # type: ignore[assignment]
        message_search.search_pasted(OTHER_TYPE * repeats + tail)
    finally:
        message_search.sglang_raised = real  # type: ignore[assignment]
    assert all(newlines == 0 for newlines in seen)
