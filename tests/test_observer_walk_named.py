"""A named tuple's items are walked by field name (``.logprobs``), not by position: a finding
on one names the field."""

from __future__ import annotations

import collections
import keyword
from typing import NamedTuple

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from ppaux.observer.walk import leaves

pytestmark = pytest.mark.torch


class _Scores(NamedTuple):
    logprobs: float
    entropy: float


def test_a_named_tuples_items_are_named_by_field():
    assert list(leaves({"s": _Scores(0.5, 1.5)})) == ["['s'].logprobs", "['s'].entropy"]
    assert list(leaves(_Scores(torch.zeros(2), 1.0), ".out")) == [".out.logprobs", ".out.entropy"]
    pair = collections.namedtuple("pair", "top bottom")
    assert leaves(pair(1, 2), ".out") == {".out.top": 1, ".out.bottom": 2}


def test_a_plain_tuple_and_a_tuple_with_other_fields_keep_positions():
    assert list(leaves((1, 2))) == ["[0]", "[1]"]

    class Odd(tuple):
        _fields = ("only",)

    assert list(leaves(Odd((1, 2)))) == ["[0]", "[1]"]


names = st.lists(
    st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True).filter(
        lambda n: not keyword.iskeyword(n)
    ),
    min_size=1,
    max_size=6,
    unique=True,
)


@given(names, st.data())
def test_every_field_is_its_own_path(fields, data):
    kind = collections.namedtuple("kind", fields)  # type: ignore[misc]
    values = data.draw(st.lists(st.integers(), min_size=len(fields), max_size=len(fields)))
    assert leaves(kind(*values), "") == {f".{n}": v for n, v in zip(fields, values, strict=True)}
