"""Values a container repeats cost the walk and the digests what is distinct, and change
nothing they give.

A pickle repeats a value in a byte (``N``, ``BINGET``): a list of a million Nones is under a
megabyte. The walk takes such a list apart in C and yields each object once, in the order of the
plain depth-first walk written out below; diff's digest of a list with repeated items equals the
digest of the same values, each its own object.
"""

from __future__ import annotations

import json
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.dump import read_dump
from ppaux.dump.digests import ValueDigests
from ppaux.dump.value_walk import LEAF_TYPES, walk
from ppaux.errors import LimitExceeded
from ppaux.limits import Limits


def _plain_walk(value: object) -> list[object]:
    """Depth first, last child first, leaves (and empty containers, which hold nothing) before
    containers, each object once: the walk's order, one child at a time."""
    seen: set[int] = set()
    stack, leaves, found = [value], [], []
    while stack or leaves:
        current = leaves.pop() if leaves else stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        found.append(current)
        if isinstance(current, dict):
            children = [*current.keys(), *current.values()]
        elif isinstance(current, (list, tuple)):
            children = list(current)
        else:
            continue
        for child in children:
            empty = child.__class__ in (list, tuple, dict, set, frozenset) and not child
            (leaves if child.__class__ in LEAF_TYPES or empty else stack).append(child)
    return found


_LEAVES = st.one_of(st.none(), st.integers(-2, 2), st.sampled_from(["a", "b"]), st.booleans())


@st.composite
def _shared(draw: st.DrawFn) -> object:
    """Nested lists, tuples and dicts where some containers and leaves appear many times."""
    pool: list[object] = [draw(_LEAVES) for _ in range(3)]
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["list", "tuple", "dict"]))
        picks = draw(st.lists(st.integers(0, len(pool) - 1), min_size=0, max_size=12))
        items = [pool[i] for i in picks]
        if kind == "list":
            pool.append(items)
        elif kind == "tuple":
            pool.append(tuple(items))
        else:
            pool.append({f"k{n}": item for n, item in enumerate(items)})
    return pool[-1]


@settings(max_examples=150, deadline=None)
@given(_shared())
def test_walk_yields_what_the_plain_walk_yields_in_its_order(value):
    assert [id(v) for v in walk(value, Limits())] == [id(v) for v in _plain_walk(value)]


def test_a_million_repeats_of_one_value_yield_it_once():
    value = [None] * 1_000_000
    assert [v for v in walk(value, Limits())][1:] == [None]
    children: list[int] = []
    list(walk(value, Limits(), charge=children.append))
    assert children == [1_000_000]  # the work is still charged per item


def _digest(value: object) -> str:
    return ValueDigests(None, Limits()).digest(value)  # type: ignore[arg-type]


@settings(max_examples=150, deadline=None)
@given(_shared())
def test_a_digest_is_that_of_the_same_values_unshared(value):
    copy = json.loads(json.dumps(value))  # every item its own object; tuples become lists
    if json.dumps(value) == json.dumps(copy) and not _has_tuple(value):
        assert _digest(value) == _digest(copy)


def _has_tuple(value: object) -> bool:
    return any(isinstance(node, tuple) for node in _plain_walk(value))


def test_one_changed_item_among_repeats_changes_the_digest():
    row = [1, 2, 3]
    value = [row] * 5000 + [None] * 5000
    assert _digest(value) == _digest([[1, 2, 3] for _ in range(5000)] + [None] * 5000)
    changed = [row] * 4999 + [[1, 2, 4]] + [None] * 5000
    assert _digest(value) != _digest(changed)
    assert _digest(value) != _digest([row] * 5000 + [None] * 4999 + [0])


def test_constants_pushed_by_the_million_count_against_max_items(tmp_path):
    for name, value in (("none", None), ("true", True), ("false", False), ("empty", ())):
        path = tmp_path / f"{name}.pkl"
        path.write_bytes(pickle.dumps([value] * 3000, protocol=2))
        assert read_dump(str(path), Limits(max_items=3001)).root == [value] * 3000
        with pytest.raises(LimitExceeded, match="max_items=3000"):
            read_dump(str(path), Limits(max_items=3000))


def test_ints_kept_by_value_are_told_from_bools_floats_and_each_other():
    # One ValueDigests for values that stay alive together, as a dump's do (it keeps
    # containers' digests by their id).
    digests = ValueDigests(None, Limits())  # type: ignore[arg-type]
    values = [1, True, 1.0, [1], [True], (1,), 2**200, 2**200 + 1]
    assert len({digests.digest(v) for v in values}) == len(values)
    lists = [list(range(70_000)), list(range(70_000)), [*range(69_999), 70_000]]  # past 65,536
    first, same, other = (digests.digest(v) for v in lists)
    assert first == same != other
