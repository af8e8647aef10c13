"""PP104's near misses by typing slips: a key one or two slips from the auxiliary prefix counts,
a key far from it never does."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ppaux.dump.near_miss import looks_like_prefix

PREFIX = "__sampling_observer_output__."


@pytest.mark.parametrize(
    "key",
    [
        "__sampling_observer_ouptut__.s",  # two letters swapped
        "__sampling_obsever_output__.s",  # a letter dropped
        "__sampling_observer_outpuut__.s",  # a letter doubled
        "__sampling_observar_output__.s",  # a letter wrong
        "__smapling_obsrever_output__.s",  # two swaps
        "__sampling_observer_outpt.scores",  # dropped letter and no trailing '__'
    ],
)
def test_typos_of_the_prefix_are_near_misses(key: str) -> None:
    assert looks_like_prefix(key)


@pytest.mark.parametrize(
    "key",
    [
        "sampling_params",
        "__msg_type__",
        "hidden_states",
        "residual",
        "observer_output",
        "sampling_observer_out",  # three letters short
        "__smapling_obsrever_ouptut__.s",  # three swaps
        "next_token_ids",
    ],
)
def test_keys_three_or_more_slips_away_are_not(key: str) -> None:
    assert not looks_like_prefix(key)


_SLIP = st.sampled_from(["insert", "delete", "replace", "swap"])
_LETTER = st.sampled_from("abcdefghijklmnopqrstuvwxyz")


@st.composite
def _slipped(draw: st.DrawFn) -> str:
    # The prefix with one or two slips at letters drawn anywhere in it, then any name.
    text = PREFIX
    for _ in range(draw(st.integers(1, 2))):
        at = draw(st.integers(0, len(text) - 2))
        slip = draw(_SLIP)
        if slip == "insert":
            text = text[:at] + draw(_LETTER) + text[at:]
        elif slip == "delete":
            text = text[:at] + text[at + 1 :]
        elif slip == "replace":
            text = text[:at] + draw(_LETTER) + text[at + 1 :]
        else:
            text = text[:at] + text[at + 1] + text[at] + text[at + 2 :]
    return text + draw(st.text(max_size=20))


@given(_slipped())
def test_any_one_or_two_slips_of_the_prefix_is_a_near_miss(key: str) -> None:
    assert looks_like_prefix(key)


# Letters that the prefix does not contain: 'samplingobserveroutput' has 22 letters, so a key
# built from none of them needs at least 20 slips to reach it.
_FAR = st.text(alphabet="bcdfhjkqwxyz0123456789_.-", max_size=60)


@given(_FAR)
def test_keys_far_from_the_prefix_never_are(key: str) -> None:
    assert not looks_like_prefix(key)


@given(st.text(alphabet="bcdfhjkqwxyz", min_size=1, max_size=5), st.text(max_size=20))
def test_a_key_of_an_unrelated_word_and_the_name_is_not(word: str, name: str) -> None:
    assert not looks_like_prefix("__" + word + "_output__." + name)
