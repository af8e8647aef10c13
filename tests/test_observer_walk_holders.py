"""A deque and a mapping proxy are walked as the list and the dict they hold: each tensor in
them is a leaf of its own, compared bit by bit, never the holder's repr (which torch prints to
4 decimals, eliding the middle of a long tensor)."""

from __future__ import annotations

import collections
import types

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from ppaux.observer.walk import leaves

pytestmark = pytest.mark.torch


def test_a_deques_tensors_are_leaves_by_index():
    first, second = torch.tensor([0.5]), torch.tensor([0.25])
    found = leaves(collections.deque([first, second], maxlen=4), ".window")
    assert list(found) == [".window[0]", ".window[1]"]
    assert found[".window[0]"] is first
    assert found[".window[1]"] is second


def test_a_mapping_proxys_tensors_are_leaves_by_key():
    row = torch.tensor([1.0, 2.0])
    found = leaves(types.MappingProxyType({"row": row, "n": 3}), ".fields")
    assert list(found) == [".fields['row']", ".fields['n']"]
    assert found[".fields['row']"] is row
    assert found[".fields['n']"] == 3


_ITEMS = st.lists(st.one_of(st.integers(), st.text(max_size=4), st.none()), min_size=1, max_size=12)


@given(_ITEMS)  # an empty holder is one leaf itself, as an empty list is
def test_a_deque_gives_the_leaves_a_list_of_the_same_items_gives(items):
    assert leaves(collections.deque(items), "x") == leaves(list(items), "x")


@given(st.dictionaries(st.text(max_size=4), st.integers(), min_size=1, max_size=12))
def test_a_mapping_proxy_gives_the_leaves_its_dict_gives(mapping):
    assert leaves(types.MappingProxyType(mapping), "x") == leaves(dict(mapping), "x")
