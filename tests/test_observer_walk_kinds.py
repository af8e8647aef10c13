"""Outputs of classes the walk was not written for: a plain class, a ``__slots__`` class, a
dataclass, a namedtuple subclass, and a subclass of a number, a string, a list or a dict holding
attributes beside its value. What they hold is walked and compared leaf by leaf, never by their
``repr`` alone: two outputs whose ``repr`` is the same but whose tensors differ differ at the
attribute's path; an output whose ``repr`` is only its address is not a difference by itself.
The attributes are read through the class's standard ``__dict__``: no ``__getattribute__`` or
``__getattr__`` of the target's runs for them."""

from __future__ import annotations

import collections
import dataclasses
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.observer import ObserverOptions, observer_report
from ppaux.observer.compare import differences, records
from ppaux.observer.walk import own_attributes

pytestmark = pytest.mark.torch

ONE = ObserverOptions(batch_sizes=(2,), steps=1)


class _Same:
    def __repr__(self) -> str:
        return "Out()"


class Plain(_Same):
    def __init__(self, e: Any) -> None:
        self.e = e


class Slotted(_Same):
    __slots__ = ("e",)

    def __init__(self, e: Any) -> None:
        self.e = e


@dataclasses.dataclass(repr=False)
class Data(_Same):
    e: Any


class Named(collections.namedtuple("Named", "e")):
    def __repr__(self) -> str:
        return "Out()"


class Score(float):
    def __repr__(self) -> str:
        return "Score()"


class Text(str):
    pass


class Items(list[Any]):
    pass


class Table(dict[str, Any]):
    pass


class Addressed:  # object.__repr__: its address, new in each instance
    def __init__(self, e: Any) -> None:
        self.e = e


def _holding(kind: type, tensor: torch.Tensor) -> Any:
    if kind in (Plain, Slotted, Data, Named, Addressed):
        return kind(tensor)
    made = {Score: lambda: Score(0.5), Text: lambda: Text("a"), Items: lambda: Items([1])}.get(
        kind, lambda: Table(x=1)
    )()
    made.e = tensor
    return made


KINDS = [Plain, Slotted, Data, Named, Score, Text, Items, Table, Addressed]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
def test_equal_repr_different_tensors_differ_at_the_attributes_path(kind):
    left = _holding(kind, torch.zeros(3))
    right = _holding(kind, torch.tensor([0.0, 0.0, 1.0]))
    assert repr(left) == repr(right) or kind is Addressed
    found = differences(records(left), records(right))
    assert [(d.path, d.what) for d in found] == [(".e", "bits")]  # a named tuple's by name


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
def test_the_same_state_in_two_instances_is_no_difference(kind):
    left = _holding(kind, torch.arange(3.0))
    right = _holding(kind, torch.arange(3.0))
    assert differences(records(left), records(right)) == []


class _Hostile(list[Any]):
    def __getattribute__(self, name: str) -> Any:
        raise RuntimeError("read")

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError("read")


def test_attributes_are_read_without_the_targets_getattribute():
    hostile = _Hostile([1])
    object.__setattr__(hostile, "e", torch.ones(2))
    assert list(own_attributes(hostile)) == ["e"]


class _OwnDict(list[Any]):
    @property
    def __dict__(self) -> Any:  # type: ignore[override]
        raise RuntimeError("the target's property ran")


def test_a_class_whose_dict_is_its_own_property_is_not_run():
    assert own_attributes(_OwnDict([1])) == {}
    assert list(records(_OwnDict([1]))) == ["[0]"]


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from([Score, Text, Items, Table]),
    st.dictionaries(st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True), st.integers()),
)
def test_every_attribute_of_a_subclass_of_a_builtin_is_a_leaf(kind, attributes):
    made = _holding(kind, torch.zeros(1))
    for name, value in attributes.items():
        setattr(made, name, value)
    found = records(made)
    expected = {"e": None, **attributes}
    assert {p[1:] for p in found if p.startswith(".")} == set(expected)
    for name in attributes:
        other = _holding(kind, torch.zeros(1))
        for n, v in attributes.items():
            setattr(other, n, v + 1 if n == name else v)
        assert [d.path for d in differences(found, records(other))] == [f".{name}"]


def _observer(kind: type, wrong: bool) -> Any:
    class Observer:
        def is_active(self, info: Any) -> bool:
            return True

        def before_grammar(self, logits: Any, info: Any) -> Any:
            return logits.float().amax(-1)

        def after_sample(self, state: Any, token_ids: Any) -> Any:
            return _Output(_holding(kind, state))

        def from_pp_tensors(self, tensors: Any) -> Any:
            state = tensors["e"] + 1 if wrong else tensors["e"]
            return _Output(_holding(kind, state))

    return Observer()


class _Output:
    def __init__(self, held: Any) -> None:
        self.held = held

    def __repr__(self) -> str:
        return "Output()"

    def copy_to_host(self, copy: Any) -> Any:
        return self

    def consume(self, batch: Any, commits: Any) -> None:
        pass

    def to_pp_tensors(self) -> dict[str, Any]:
        return {"e": self.held.e if not isinstance(self.held, Named) else self.held[0]}


@pytest.mark.parametrize("kind", [Score, Items, Addressed], ids=lambda k: k.__name__)
def test_a_check_names_the_attribute_that_rank_0_rebuilt_differently(kind):
    wrong = observer_report(_observer(kind, True), ONE, None)
    assert [f.code for f in wrong.findings] == ["PP711"]
    assert wrong.findings[0].message.startswith(".held.e of the output rank 0 rebuilt differs")
    right = observer_report(_observer(kind, False), ONE, None)
    assert right.findings == ()
