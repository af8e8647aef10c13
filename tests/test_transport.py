"""The reference transport: messages, order of checks and what each path leaves in the dict.

Expectations are sglang 0.5.19 - 0.5.23 behaviour (``srt/sampling/sampling_observer_pp.py``);
``test_transport_wheels.py`` compares the same module with the real releases.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from ppaux.replay import transport
from ppaux.replay.transport import (
    PipelineParallelAuxiliaryOutput,
    PipelineParallelSamplingObserver,
    add_auxiliary_output_to_pp_tensors,
    pop_auxiliary_output_from_pp_tensors,
)
from ppaux.sglang import names as keys

pytestmark = pytest.mark.torch

P = "__sampling_observer_output__."

NO_OUTPUT_TRANSPORT = "auxiliary output does not support pipeline-parallel transport"
EMPTY_OUTPUT = "auxiliary PP output must contain at least one tensor"
BAD_NAME = "auxiliary PP tensor names must be non-empty strings"
NO_OBSERVER = "received auxiliary PP output without a sampling observer"
NO_OBSERVER_TRANSPORT = "sampling observer does not support pipeline-parallel transport"
NON_TENSOR = "received a non-tensor auxiliary PP output"
NOT_REBUILT = "sampling observer did not reconstruct its PP output"


class Output:
    """An auxiliary output whose ``to_pp_tensors`` returns a fixed value and counts calls."""

    def __init__(self, produced: Any) -> None:
        self.produced = produced
        self.calls = 0

    def to_pp_tensors(self) -> Any:
        self.calls += 1
        return self.produced


class Observer:
    """A PP-capable observer that records what it receives and returns ``result``."""

    def __init__(self, result: Any = "rebuilt") -> None:
        self.result = result
        self.received: list[Any] = []

    def from_pp_tensors(self, tensors: Any) -> Any:
        self.received.append(tensors)
        return self.result


class NotAnOutput:
    """Has neither Protocol method."""


class DisabledOutput:
    """Sets the Protocol member to None, which Python's runtime Protocol check treats as absent."""

    to_pp_tensors = None


def snapshot(tensors: dict[Any, Any]) -> list[tuple[Any, int]]:
    """Keys in order with the identity of each value."""
    return [(key, id(value)) for key, value in tensors.items()]


def t(*values: float) -> torch.Tensor:
    return torch.tensor([float(value) for value in values] or [0.0])


# -- module surface --------------------------------------------------------------------------


def test_public_names_and_prefix() -> None:
    assert transport.__all__ == [
        "PipelineParallelAuxiliaryOutput",
        "PipelineParallelSamplingObserver",
        "add_auxiliary_output_to_pp_tensors",
        "pop_auxiliary_output_from_pp_tensors",
    ]
    assert transport._OUTPUT_PREFIX == P
    assert transport._OUTPUT_PREFIX is keys.OUTPUT_PREFIX


def test_importing_ppaux_does_not_import_torch() -> None:
    code = (
        "import sys, ppaux, ppaux.sglang.names, ppaux.sglang_source.loader; "
        "print('torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "False\n"


def test_protocols_check_attributes_only() -> None:
    with_attribute = NotAnOutput()
    with_attribute.to_pp_tensors = lambda: {}  # type: ignore[attr-defined]
    with_attribute.from_pp_tensors = lambda tensors: None  # type: ignore[attr-defined]
    assert isinstance(Output({}), PipelineParallelAuxiliaryOutput)
    assert isinstance(with_attribute, PipelineParallelAuxiliaryOutput)
    assert isinstance(with_attribute, PipelineParallelSamplingObserver)
    assert isinstance(Observer(), PipelineParallelSamplingObserver)
    assert not isinstance(Observer(), PipelineParallelAuxiliaryOutput)
    assert not isinstance(Output({}), PipelineParallelSamplingObserver)
    assert not isinstance(NotAnOutput(), PipelineParallelAuxiliaryOutput)
    assert not isinstance(DisabledOutput(), PipelineParallelAuxiliaryOutput)
    assert not isinstance(None, PipelineParallelSamplingObserver)


# -- add: the five messages and the None case ------------------------------------------------


def test_add_none_output_changes_nothing() -> None:
    tensors = {"next_token_ids": t()}
    before = snapshot(tensors)
    assert add_auxiliary_output_to_pp_tensors(tensors, None) is None
    assert snapshot(tensors) == before


@pytest.mark.parametrize("output", [NotAnOutput(), DisabledOutput(), 0, "text", {"a": t()}])
def test_add_rejects_output_without_to_pp_tensors(output: Any) -> None:
    tensors: dict[str, Any] = {}
    with pytest.raises(RuntimeError) as caught:
        add_auxiliary_output_to_pp_tensors(tensors, output)
    assert str(caught.value) == NO_OUTPUT_TRANSPORT
    assert type(caught.value) is RuntimeError
    assert tensors == {}


class Falsy:
    """Falsy and without ``items``: the emptiness check must come before ``.items()``."""

    def __bool__(self) -> bool:
        return False


@pytest.mark.parametrize("produced", [{}, None, [], (), 0, "", Falsy()])
def test_add_rejects_falsy_to_pp_tensors(produced: Any) -> None:
    tensors: dict[str, Any] = {}
    with pytest.raises(RuntimeError) as caught:
        add_auxiliary_output_to_pp_tensors(tensors, Output(produced))
    assert str(caught.value) == EMPTY_OUTPUT
    assert tensors == {}


@pytest.mark.parametrize(
    ("produced", "message"),
    [
        ([("a", t())], "'list' object has no attribute 'items'"),
        ("abc", "'str' object has no attribute 'items'"),
        (5, "'int' object has no attribute 'items'"),
        (Falsy.__mro__, "'tuple' object has no attribute 'items'"),
    ],
)
def test_add_non_mapping_fails_on_items(produced: Any, message: str) -> None:
    tensors: dict[str, Any] = {"x": 1}
    with pytest.raises(AttributeError) as caught:
        add_auxiliary_output_to_pp_tensors(tensors, Output(produced))
    assert str(caught.value) == message
    assert tensors == {"x": 1}


@pytest.mark.parametrize("name", ["", 1, None, b"a", ("a",), 1.5])
def test_add_rejects_bad_names(name: Any) -> None:
    tensors: dict[Any, Any] = {}
    with pytest.raises(RuntimeError) as caught:
        add_auxiliary_output_to_pp_tensors(tensors, Output({name: t()}))
    assert str(caught.value) == BAD_NAME
    assert tensors == {}


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("logits", [1.0], "auxiliary PP output 'logits' is not a tensor"),
        ("a'b", None, 'auxiliary PP output "a\'b" is not a tensor'),
        ("n", 3, "auxiliary PP output 'n' is not a tensor"),
        ("s", torch.Size([2]), "auxiliary PP output 's' is not a tensor"),
    ],
)
def test_add_rejects_non_tensors(name: str, value: Any, message: str) -> None:
    tensors: dict[str, Any] = {}
    with pytest.raises(RuntimeError) as caught:
        add_auxiliary_output_to_pp_tensors(tensors, Output({name: value}))
    assert str(caught.value) == message
    assert tensors == {}


def test_add_rejects_duplicates_and_keeps_the_old_value() -> None:
    old = t(1)
    tensors: dict[str, Any] = {P + "mask": old}
    with pytest.raises(RuntimeError) as caught:
        add_auxiliary_output_to_pp_tensors(tensors, Output({"mask": t(2)}))
    assert str(caught.value) == "duplicate auxiliary PP tensor 'mask'"
    assert snapshot(tensors) == [(P + "mask", id(old))]


def test_add_inserts_prefixed_keys_in_order_and_calls_once() -> None:
    a, b, base = t(1), torch.nn.Parameter(t(2)), t(3)
    tensors: dict[str, Any] = {"next_token_ids": base}
    output = Output({"b.x": b, "a": a})
    assert add_auxiliary_output_to_pp_tensors(tensors, output) is None
    assert snapshot(tensors) == [("next_token_ids", id(base)), (P + "b.x", id(b)), (P + "a", id(a))]
    assert output.calls == 1


# -- add: order of checks and partial inserts -----------------------------------------------


def test_add_none_beats_everything() -> None:
    # ``None`` is checked before the Protocol, so it never raises, and it adds nothing.
    tensors: dict[str, Any] = {"next_token_ids": t(1)}
    before = snapshot(tensors)
    assert add_auxiliary_output_to_pp_tensors(tensors, None) is None
    assert snapshot(tensors) == before


def test_add_name_check_comes_before_tensor_check() -> None:
    with pytest.raises(RuntimeError, match=f"^{BAD_NAME}$"):
        add_auxiliary_output_to_pp_tensors({}, Output({"": "not a tensor"}))
    with pytest.raises(RuntimeError, match=f"^{BAD_NAME}$"):
        add_auxiliary_output_to_pp_tensors({}, Output({7: "not a tensor"}))


def test_add_tensor_check_comes_before_duplicate_check() -> None:
    tensors: dict[str, Any] = {P + "a": t()}
    with pytest.raises(RuntimeError) as caught:
        add_auxiliary_output_to_pp_tensors(tensors, Output({"a": "not a tensor"}))
    assert str(caught.value) == "auxiliary PP output 'a' is not a tensor"


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"c": [1]}, "auxiliary PP output 'c' is not a tensor"),
        ({"": t()}, BAD_NAME),
        ({"dup": t()}, "duplicate auxiliary PP tensor 'dup'"),
    ],
)
def test_add_keeps_entries_inserted_before_a_failure(bad: dict[str, Any], message: str) -> None:
    a, b, dup, after = t(1), t(2), t(3), t(4)
    tensors: dict[str, Any] = {P + "dup": dup}
    produced = {"a": a, "b": b, **bad, "after": after}
    with pytest.raises(RuntimeError) as caught:
        add_auxiliary_output_to_pp_tensors(tensors, Output(produced))
    assert str(caught.value) == message
    assert snapshot(tensors) == [(P + "dup", id(dup)), (P + "a", id(a)), (P + "b", id(b))]


def test_add_duplicate_names_within_one_output() -> None:
    class Pairs(dict):  # a mapping whose items() repeats a name
        def items(self):  # type: ignore[override]
            return [("x", first), ("x", second)]

    first, second = t(1), t(2)
    tensors: dict[str, Any] = {}
    with pytest.raises(RuntimeError, match=r"^duplicate auxiliary PP tensor 'x'$"):
        add_auxiliary_output_to_pp_tensors(tensors, Output(Pairs(x=first)))
    assert snapshot(tensors) == [(P + "x", id(first))]


def test_add_lets_to_pp_tensors_errors_through() -> None:
    class Broken:
        def to_pp_tensors(self) -> Any:
            raise ValueError("boom")

    with pytest.raises(ValueError, match=r"^boom$"):
        add_auxiliary_output_to_pp_tensors({}, Broken())


# -- pop: the four messages -----------------------------------------------------------------


def aux_dict() -> dict[Any, Any]:
    return {"next_token_ids": t(0), P + "mask": t(1), "other": [1, 2], P + "scores": t(2)}


@pytest.mark.parametrize(
    ("observer", "message"),
    [
        (None, NO_OBSERVER),
        (NotAnOutput(), NO_OBSERVER_TRANSPORT),
        (Output({}), NO_OBSERVER_TRANSPORT),
        (Observer(result=None), NOT_REBUILT),
    ],
)
def test_pop_errors_leave_the_dict_unchanged(observer: Any, message: str) -> None:
    tensors = aux_dict()
    before = snapshot(tensors)
    with pytest.raises(RuntimeError) as caught:
        pop_auxiliary_output_from_pp_tensors(tensors, observer)
    assert str(caught.value) == message
    assert type(caught.value) is RuntimeError
    assert snapshot(tensors) == before


@pytest.mark.parametrize("value", [[1, 2], None, 3, "s", torch.Size([1])])
def test_pop_rejects_non_tensor_before_calling_the_observer(value: Any) -> None:
    tensors = aux_dict()
    tensors[P + "bad"] = value
    before = snapshot(tensors)
    observer = Observer()
    with pytest.raises(RuntimeError) as caught:
        pop_auxiliary_output_from_pp_tensors(tensors, observer)
    assert str(caught.value) == NON_TENSOR
    assert observer.received == []
    assert snapshot(tensors) == before


@pytest.mark.parametrize(
    ("observer", "message"),
    [(None, NO_OBSERVER), (NotAnOutput(), NO_OBSERVER_TRANSPORT)],
)
def test_pop_observer_checks_beat_the_non_tensor_check(observer: Any, message: str) -> None:
    tensors = {P + "bad": [1, 2]}
    with pytest.raises(RuntimeError) as caught:
        pop_auxiliary_output_from_pp_tensors(tensors, observer)
    assert str(caught.value) == message


def test_pop_success_removes_only_aux_keys_and_returns_the_output() -> None:
    tensors = aux_dict()
    mask, scores = tensors[P + "mask"], tensors[P + "scores"]
    ids, other = tensors["next_token_ids"], tensors["other"]
    result = object()
    observer = Observer(result)
    assert pop_auxiliary_output_from_pp_tensors(tensors, observer) is result
    assert snapshot(tensors) == [("next_token_ids", id(ids)), ("other", id(other))]
    (received,) = observer.received
    assert type(received) is dict
    assert [(k, id(v)) for k, v in received.items()] == [("mask", id(mask)), ("scores", id(scores))]


@pytest.mark.parametrize("observer", [None, NotAnOutput(), Observer()])
def test_pop_without_aux_keys_returns_none_and_touches_nothing(observer: Any) -> None:
    tensors: dict[str, Any] = {"next_token_ids": t(), "x": [1], P[:-1]: t(), "_" + P: t()}
    before = snapshot(tensors)
    assert pop_auxiliary_output_from_pp_tensors(tensors, observer) is None
    assert snapshot(tensors) == before
    if isinstance(observer, Observer):
        assert observer.received == []


def test_pop_bare_prefix_key_reaches_the_observer_as_empty_name() -> None:
    value = t(5)
    tensors: dict[str, Any] = {P: value, "k": 1}
    observer = Observer()
    assert pop_auxiliary_output_from_pp_tensors(tensors, observer) == "rebuilt"
    assert list(observer.received[0]) == [""]
    assert observer.received[0][""] is value
    assert tensors == {"k": 1}


@pytest.mark.parametrize(
    ("key", "error", "message"),
    [
        (1, AttributeError, "'int' object has no attribute 'startswith'"),
        (None, AttributeError, "'NoneType' object has no attribute 'startswith'"),
        (("a",), AttributeError, "'tuple' object has no attribute 'startswith'"),
        (b"k", TypeError, "startswith first arg must be bytes or a tuple of bytes, not str"),
    ],
)
def test_pop_non_str_keys_fail_like_sglang(key: Any, error: type, message: str) -> None:
    for tensors in ({key: t()}, {P + "a": t(), key: t()}, {key: t(), P + "a": t()}):
        before = snapshot(tensors)
        with pytest.raises(error) as caught:
            pop_auxiliary_output_from_pp_tensors(tensors, Observer())
        assert str(caught.value) == message
        assert snapshot(tensors) == before


def test_tensor_subclasses_pass_both_ways() -> None:
    parameter = torch.nn.Parameter(t(1, 2))
    tensors: dict[str, Any] = {}
    add_auxiliary_output_to_pp_tensors(tensors, Output({"w": parameter}))
    observer = Observer()
    pop_auxiliary_output_from_pp_tensors(tensors, observer)
    assert observer.received[0]["w"] is parameter
    assert tensors == {}


def test_pop_deletes_what_the_received_dict_names_after_the_observer() -> None:
    # The observer gets the very dict whose names are deleted afterwards (as in sglang).
    class Taker:
        def from_pp_tensors(self, tensors: dict[str, Any]) -> str:
            tensors.pop("keep")
            return "ok"

    tensors: dict[str, Any] = {P + "keep": t(1), P + "drop": t(2)}
    assert pop_auxiliary_output_from_pp_tensors(tensors, Taker()) == "ok"
    assert list(tensors) == [P + "keep"]


# -- property: add then pop is the identity ----------------------------------------------------

_POOL = [
    torch.zeros(2),
    torch.ones(3, dtype=torch.int64),
    torch.nn.Parameter(torch.zeros(1)),
    torch.empty(0),
    torch.tensor(True),
]

names = st.text(min_size=1, max_size=12)
tensors_st = st.sampled_from(_POOL) | st.builds(torch.zeros, st.integers(0, 4))
others = st.dictionaries(
    st.text(max_size=12).filter(lambda key: not key.startswith(P)),
    st.sampled_from([None, 1, "x", [1], torch.zeros(1)]),
    max_size=5,
)


@given(payload=st.dictionaries(names, tensors_st, min_size=1, max_size=8), base=others)
def test_add_then_pop_gives_back_the_same_tensors(
    payload: dict[str, Any], base: dict[str, Any]
) -> None:
    tensors = dict(base)
    before = snapshot(tensors)
    add_auxiliary_output_to_pp_tensors(tensors, Output(payload))
    assert list(tensors)[len(before) :] == [P + name for name in payload]
    observer = Observer(result=payload)
    assert pop_auxiliary_output_from_pp_tensors(tensors, observer) is payload
    (received,) = observer.received
    assert list(received) == list(payload)
    assert all(received[name] is payload[name] for name in payload)
    assert snapshot(tensors) == before
