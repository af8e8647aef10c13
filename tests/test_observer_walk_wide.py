"""An object holding more attributes than a container may hold items is one leaf, as such a
list or dict is: digested whole (not compared past the digest's bounds), so that no value the
target produced is described in more records than a container of that size would be, and no
record the check sends for it comes near the records' bound."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.observer.compare import differences, records
from ppaux.observer.framing import encode
from ppaux.observer.record_cuts import RECORD_BYTES
from ppaux.observer.walk import MAX_ITEMS, leaves

pytestmark = pytest.mark.torch


class Wide:
    pass


def _wide(count: int, changed: int | None = None) -> Wide:
    found = Wide()
    for index in range(count):
        setattr(found, f"a{index}", -1 if index == changed else index)
    return found


def _slotted(count: int) -> object:
    names = tuple(f"s{index}" for index in range(count))
    klass = type("Slotted", (), {"__slots__": names})
    found = klass()
    for index, name in enumerate(names):
        setattr(found, name, index)
    return found


class Listed(list):  # type: ignore[type-arg]
    pass


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3 * MAX_ITEMS), st.booleans())
def test_an_object_is_walked_by_attribute_up_to_the_items_of_a_container(count, slotted):
    value = _slotted(count) if slotted else _wide(count)
    found = leaves({"out": value})
    if count > MAX_ITEMS:
        assert list(found) == ["['out']"]
        assert found["['out']"] is value
    else:
        assert len(found) == count
        assert all(path.startswith("['out'].") for path in found)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 3 * MAX_ITEMS))
def test_what_a_list_subclass_holds_beside_its_items_is_bounded_as_a_dict(count):
    value = Listed([1, 2])
    for index in range(count):
        setattr(value, f"a{index}", index)
    found = leaves({"out": value})
    assert found["['out'][0]"] == 1 and found["['out'][1]"] == 2
    if count > MAX_ITEMS:
        assert set(found) == {"['out'][0]", "['out'][1]", "['out'].__dict__"}
    else:
        assert len(found) == 2 + count


def test_a_wide_object_is_one_small_record_that_still_tells_a_change():
    count = 50_000
    same = records({"out": _wide(count)})
    assert len(same) == 1
    assert len(encode({"records": same})) < RECORD_BYTES // 64
    assert differences(same, records({"out": _wide(count)})) == []
    assert differences(same, records({"out": _wide(count, changed=count - 1)}))
