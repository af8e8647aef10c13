"""Reading an object's fields for the walk: a plain dataclass instance (a request, its sampling
parameters) is read from its ``__dict__`` at once, and gives what ``getattr`` field by field
would; a class with a property or a ``__getattribute__`` is still read through them. Every kind
of change a ``consume`` can make to a request is still a difference at the step it is made."""

from __future__ import annotations

import dataclasses
import types
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ppaux.observer.compare as compare
from ppaux.observer.digests import digest_budget
from ppaux.observer.growth import RequestWalk
from ppaux.observer.standins import StandInRequest
from ppaux.observer.walk import fields_of

pytestmark = pytest.mark.torch


@dataclasses.dataclass
class Plain:
    a: int = 1
    b: Any = None
    c: list[int] = dataclasses.field(default_factory=list)


def _by_getattr(obj: Any) -> dict[str, Any]:
    # The definition: each dataclass field by getattr (None where missing), then whatever the
    # instance's own __dict__ holds, in its order.
    found = {f.name: getattr(obj, f.name, None) for f in dataclasses.fields(obj)}
    found.update(vars(obj))
    return found


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["set", "add", "delete", "delete and set"]),
            st.sampled_from(["a", "b", "c", "extra", "__hidden"]),
            st.one_of(st.integers(), st.text(max_size=3), st.none(), st.lists(st.integers())),
        ),
        max_size=8,
    )
)
def test_a_plain_dataclass_gives_what_getattr_gives_in_the_same_order(changes):
    obj = Plain()
    for change, name, value in changes:
        if change in ("delete", "delete and set") and name in vars(obj):
            delattr(obj, name)
        if change != "delete":
            setattr(obj, name, value)
    found = fields_of(obj)
    assert found is not None
    expected = _by_getattr(obj)
    assert list(found.items()) == list(expected.items())
    assert all(found[k] is expected[k] for k in found)


@dataclasses.dataclass
class WithProperty:
    a: int = 1
    b: int = 0


def _read_b(self: Any) -> int:
    raise RuntimeError("read b")


WithProperty.b = property(_read_b, lambda self, value: None)  # type: ignore[assignment]


def test_a_field_that_is_a_property_still_runs():
    # Even where the instance's own __dict__ holds the field too.
    obj = WithProperty()
    obj.__dict__["b"] = 5
    with pytest.raises(RuntimeError, match="read b"):
        fields_of(obj)


@dataclasses.dataclass
class Watched:
    a: int = 1
    b: int = 2

    def __getattribute__(self, name: str) -> Any:
        if name == "b":
            raise LookupError("read b")
        return object.__getattribute__(self, name)


def test_a_class_of_its_own_getattribute_is_still_read_through_it():
    with pytest.raises(LookupError, match="read b"):
        fields_of(Watched())


def _change(req: Any, kind: str, step: int) -> None:
    if kind == "set a plain field":
        req.finished_len = step
    elif kind == "append in place":
        req.output_ids.append(step)
    elif kind == "rebuild a list with another item inside":
        old = req.customized_info["v"]
        req.customized_info = {"v": [*old[:1], float(step) + 0.5, *old[2:], float(step)]}
    elif kind == "set a nested object's field":
        req.sampling_params.temperature = 0.5 + step
    elif kind == "add an attribute":
        req.added = step
    elif kind == "delete a field":
        del req.rid  # read as None (no default), where the other holds "req-0"
    elif kind == "replace a nested object":
        req.sampling_params = dataclasses.replace(req.sampling_params, top_k=step)
    elif kind == "change the first item of the rebuilt list":
        req.customized_info["v"][0] = 7.0
    else:
        raise AssertionError(kind)


KINDS = [
    "set a plain field",
    "append in place",
    "rebuild a list with another item inside",
    "set a nested object's field",
    "add an attribute",
    "delete a field",
    "replace a nested object",
    "change the first item of the rebuilt list",
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("at", [1, 3])
def test_each_kind_of_change_to_a_request_is_a_difference_at_its_step(kind, at):
    # Both paths' stand-in requests rebuilt as consume rebuilds them ({"v": old + [x]}), for
    # five steps; at step ``at`` the PP path's request alone is changed in one more way: that
    # step's records differ, none before it does.
    reqs = [StandInRequest("req-0"), StandInRequest("req-0")]
    walk = RequestWalk(lambda view, skip, same: compare.records(view, skip, same))
    differed = []
    for step in range(5):
        for req in reqs:
            old = req.customized_info["v"] if req.customized_info else [0.0]
            req.customized_info = {"v": [*old, float(step)]}
        if step == at:
            _change(reqs[1], kind, step)
        [a], [b] = walk.step([reqs[0]], [reqs[1]])
        differed.append(bool(compare.differences(a, b)))
    assert differed[:at] == [False] * at
    assert differed[at], kind


def test_an_empty_lists_record_follows_the_digest_bounds_in_force():
    # An empty list's record is kept once made; one made under a bound of no items is still
    # "not compared", and the unbounded one compared, whichever was made first.
    free = compare.record([])
    with digest_budget(0):
        bounded = compare.record([])
    assert free["key"] != compare.NOT_COMPARED
    assert bounded["key"] == compare.NOT_COMPARED
    assert compare.record([]) == free
    assert compare.record(types.SimpleNamespace().__dict__) != free  # an empty dict: its type
