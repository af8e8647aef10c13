"""What the request walk tells by identity, told in C: a rebuilt list that starts with the very
objects of the last one, the values of an object that are the very ones of the last step,
and a class that changed since it was read. Each kind of change these leave out of a step's
work is still a difference at its step, and no equal value is made one."""

from __future__ import annotations

import dataclasses
import types
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ppaux.observer.compare as compare
import ppaux.observer.identity as identity
from ppaux.observer.growth import RequestWalk
from ppaux.observer.standins import StandInRequest
from ppaux.observer.walk import fields_of

pytestmark = pytest.mark.torch


class Loud:
    """An item whose ``__eq__`` says yes to anything, and counts its calls."""

    calls = 0

    def __eq__(self, other: object) -> bool:
        type(self).calls += 1
        return True

    __hash__ = object.__hash__


@pytest.fixture(params=["by bytes", "item by item"])
def way(request, monkeypatch):
    if request.param == "item by item":
        monkeypatch.setattr(identity, "_BY_BYTES", False)
    elif not identity._BY_BYTES:
        pytest.skip("this interpreter's lists are not read as CPython's")
    return request.param


def test_a_list_rebuilt_from_the_last_one_starts_with_its_objects(way):
    old = [1.5, "a", None, Loud()]
    assert identity.same_start(old, [*old, 2.5], 4)
    assert identity.same_start(old, [*old, Loud()], 4)
    assert identity.same_start(old, old, 4)
    assert identity.same_start(old, [1.5], 0)


def test_an_equal_object_in_another_place_is_not_the_same_start(way):
    Loud.calls = 0
    old = [float("1.5"), 7, Loud()]
    assert not identity.same_start(old, [float("1.5"), *old[1:], 0], 3)  # equal, not the same
    assert not identity.same_start(old, [*old[:2], Loud()], 3)  # says it is equal: not asked
    assert not identity.same_start(old, [old[1], old[0], old[2]], 3)  # the same, moved
    assert not identity.same_start(old, old[:2], 3)  # shorter
    assert not identity.same_start(old[:2], old, 3)  # the last list is shorter now
    assert Loud.calls == 0


POOL = [object() for _ in range(4)]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(0, 3), max_size=40),
    st.lists(st.integers(0, 3), max_size=40),
    st.integers(0, 45),
)
def test_same_start_is_identity_item_by_item(was, now, count):
    old = [POOL[i] for i in was]
    new = [POOL[i] for i in now]
    expected = len(old) >= count and len(new) >= count and was[:count] == now[:count]
    assert identity.same_start(old, new, count) == expected


def test_a_class_version_changes_when_the_class_or_a_base_does():
    if not identity._VERSIONS:
        pytest.skip("this interpreter's class versions are not read")

    class Base:
        default = 1

    class Child(Base):
        pass

    first = identity.class_version(Child)
    assert first != 0
    assert identity.class_version(Child) == first  # read twice, nothing changed
    assert Child().default == 1  # an instance read: no change
    assert identity.class_version(Child) == first
    Base.default = 2  # a base's attribute replaced (the same name, another value)
    second = identity.class_version(Child)
    assert second not in (0, first)
    Child.added = property(lambda self: 0)  # type: ignore[attr-defined]
    third = identity.class_version(Child)
    assert third not in (0, first, second)

    class Other:
        pass

    Child.__bases__ = (Other,)
    assert identity.class_version(Child) not in (0, first, second, third)


@dataclasses.dataclass
class Later:
    a: int = 1
    b: int = 2
    c: Any = None


def _raise(self: Any) -> Any:
    raise RuntimeError("read by the property")


@pytest.mark.parametrize("how", ["added", "a default replaced", "on a base"])
def test_a_property_put_on_a_class_after_its_first_walk_is_run(how):
    @dataclasses.dataclass
    class Base:
        x: int = 0

    @dataclasses.dataclass
    class Fresh(Base):
        a: int = 1
        b: int = 2

    obj = Fresh()
    assert fields_of(obj) == {"x": 0, "a": 1, "b": 2}  # read from its __dict__, and kept
    if how == "added":  # a field without a class attribute yet
        del Fresh.b
        assert fields_of(obj) == {"x": 0, "a": 1, "b": 2}
        Fresh.b = property(_raise)  # type: ignore[assignment]
    elif how == "a default replaced":
        Fresh.a = property(_raise)  # type: ignore[assignment]
    else:
        Base.x = property(_raise)  # type: ignore[assignment]
    with pytest.raises(RuntimeError, match="read by the property"):
        fields_of(obj)


def _fresh_int(number: int) -> int:
    # An int equal to ``number`` and a new object (past CPython's small-int cache).
    return int(str(number + 10**12)) - 10**12


def _change(req: Any, kind: str) -> None:
    if kind == "an int set to an equal bool":
        req.is_retracted = 0  # the other holds False: equal, not the same type
    elif kind == "an int set to an equal float":
        req.finished_len = 5.0
    elif kind == "a plain field set to another value":
        req.rid = "req-1"
    elif kind == "a list set to a plain value":
        req.origin_input_ids = 3
    elif kind == "the same value set again as another object":
        req.finished_len = _fresh_int(1000)
    elif kind == "a field deleted and set again (moved to the end)":
        value = req.stream
        del req.stream
        req.stream = value
    elif kind == "a rebuilt list with an earlier item of another type":
        old = req.customized_info["v"]
        req.customized_info = {"v": [old[0], int(old[1]), *old[2:]]}
    elif kind == "a rebuilt list with an earlier item an equal new object":
        old = req.customized_info["v"]
        req.customized_info = {"v": [old[0], float(str(old[1])), *old[2:]]}
    elif kind == "a nested object's field set to an equal new object":
        req.sampling_params.top_k = _fresh_int(req.sampling_params.top_k)
    elif kind == "a nested object's field set to an equal float":
        req.sampling_params.n = 1.0
    else:
        raise AssertionError(kind)


#: Each kind of change made to the PP path's request alone at one step: the differences that
#: step's records show, as (path, what).
CHANGES = {
    "an int set to an equal bool": [(".is_retracted", "type")],
    "an int set to an equal float": [(".finished_len", "type")],
    "a plain field set to another value": [(".rid", "value")],
    "a list set to a plain value": [(".origin_input_ids", "extra")],
    "the same value set again as another object": [],
    "a field deleted and set again (moved to the end)": [],
    "a rebuilt list with an earlier item of another type": [(".customized_info['v'][1]", "type")],
    "a rebuilt list with an earlier item an equal new object": [],
    "a nested object's field set to an equal new object": [],
    "a nested object's field set to an equal float": [(".sampling_params.n", "type")],
}


@pytest.mark.parametrize("kind", sorted(CHANGES))
def test_each_change_left_to_identity_is_found_at_its_step(kind):
    # Both paths' stand-in requests, rebuilt each step as consume rebuilds them ({"v": old +
    # [x]}) with their output grown in place; at step 3 (after three steps whose values the
    # walk then leaves out as unchanged) the PP path's request alone is changed (a rebuilt
    # list's second item: neither its first nor its last, which are compared first). The list
    # set to a plain value: its old items' paths are gone on that side, the plain value extra.
    reqs = [StandInRequest("req-0"), StandInRequest("req-0")]
    for req in reqs:
        req.finished_len = _fresh_int(1000)
    walk = RequestWalk(lambda view, skip, same: compare.records(view, skip, same))
    shown = []
    for step in range(5):
        for req in reqs:
            old = req.customized_info["v"] if req.customized_info else []
            req.customized_info = {"v": [*old, float(step) + 0.5]}
            req.output_ids.append(step)
        if step == 3:
            _change(reqs[1], kind)
        [a], [b] = walk.step([reqs[0]], [reqs[1]])
        shown.append(sorted((d.path, d.what) for d in compare.differences(a, b)))
    expected = CHANGES[kind]
    if kind == "a list set to a plain value":
        expected = [(".origin_input_ids", "extra")] + [
            (f".origin_input_ids[{i}]", "missing") for i in range(3)
        ]
        expected.sort()
    assert shown[:3] == [[], [], []]
    assert shown[3] == expected, kind
    if not expected:
        assert shown[4] == []


def test_a_request_left_as_it_was_walks_only_what_is_not_plain(monkeypatch):
    # Counted work: after the first step, a request whose plain fields no step changes is
    # asked about value by value only for its lists' new items, however many plain fields
    # it holds (its sampling parameters' 31 among them).
    import ppaux.observer.growth as growth

    asked: list[str] = []
    plain = growth._Same.__call__

    def counted(self: Any, path: str, value: Any) -> bool:
        asked.append(path)
        return plain(self, path, value)

    monkeypatch.setattr(growth._Same, "__call__", counted)
    reqs = [StandInRequest("req-0"), StandInRequest("req-0")]
    walk = RequestWalk(lambda view, skip, same: compare.records(view, skip, same))
    per_step = []
    for step in range(4):
        for req in reqs:
            req.output_ids.append(step)
        asked.clear()
        [a], [b] = walk.step([reqs[0]], [reqs[1]])
        assert a == b
        per_step.append(sorted(set(asked)))
    assert per_step[1:] == [[f".output_ids[{step}]"] for step in (1, 2, 3)]


def test_a_walk_of_plain_namespaces_still_gives_every_leaf():
    # Without a request walk (no sameness), every value is a leaf, as ever.
    found = compare.records(types.SimpleNamespace(a=1, b=[2, 3], c=types.SimpleNamespace(d="x")))
    assert sorted(found) == [".a", ".b[0]", ".b[1]", ".c.d"]
