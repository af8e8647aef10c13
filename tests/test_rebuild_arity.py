"""torch's rebuild functions called with another count of arguments, or with a storage offset,
size or stride ``Tensor.set_`` refuses: torch.save writes such a call for an object whose
``__reduce_ex__`` names the rebuild (the pickle is well formed, torch.save's own), and
torch.load refuses it in either mode. ppaux says PP117 with the cause, never clean and never
"malformed pickle". The counts and the refusals are checked against torch's real functions."""

from __future__ import annotations

import importlib
import inspect
from collections import OrderedDict
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppaux.dump import inspect_paths, read_dump
from ppaux.dump.rebuild_arity import REBUILD_PARAMS, arity_error, function_name
from ppaux.dump.set_args import set_refusal
from ppaux.dump.tensor_rebuilds import TENSOR_CALLS

pytestmark = pytest.mark.torch


def _torch_function(name: str) -> Any:
    module, _, attr = name.rpartition(".")
    return getattr(importlib.import_module(module), attr)


def test_every_rebuild_has_its_parameters_as_data() -> None:
    assert set(REBUILD_PARAMS) == set(TENSOR_CALLS)


@pytest.mark.parametrize("name", sorted(REBUILD_PARAMS))
def test_the_parameters_are_those_of_torch_s_function(name: str) -> None:
    parameters = inspect.signature(_torch_function(name)).parameters.values()
    positional = [p for p in parameters if p.kind is p.POSITIONAL_OR_KEYWORD]
    required = [p for p in positional if p.default is p.empty]
    assert REBUILD_PARAMS[name] == (tuple(p.name for p in positional), len(required))
    assert function_name(name) == _torch_function(name).__qualname__


@settings(max_examples=100, deadline=None)
@given(name=st.sampled_from(sorted(REBUILD_PARAMS)), count=st.integers(0, 12))
def test_the_arity_error_is_python_s_for_torch_s_function(name: str, count: int) -> None:
    function = _torch_function(name)
    why = arity_error(name, count)
    signature = inspect.signature(function)
    try:
        signature.bind(*range(count))
    except TypeError:
        assert why is not None
        # Python refuses the count before the body runs: torch's own function says why.
        with pytest.raises(TypeError) as raised:
            function(*[object()] * count)
        assert str(raised.value) == why
    else:
        assert why is None


_STORAGE = torch.zeros(4096).untyped_storage()
_ODD = st.sampled_from([None, True, False, 1.5, "2", 2**63, -(2**63) - 1, b"1"])
_INT = st.integers(-3, 4) | _ODD
_SHAPE = st.lists(_INT, max_size=3).map(tuple) | st.lists(_INT, max_size=3) | _ODD


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(offset=st.integers(-3, 8) | _ODD, size=_SHAPE, stride=_SHAPE)
def test_set_refusal_is_torch_s_set(offset: object, size: object, stride: object) -> None:
    why = set_refusal(offset, size, stride, 64)
    try:
        torch.empty(0).set_(_STORAGE, offset, size, stride)  # type: ignore[call-overload]
    except (TypeError, RuntimeError, ValueError, OverflowError):
        assert why is not None, (offset, size, stride)
    else:
        assert why is None, (offset, size, stride, why)


class _Call:
    def __init__(self, function: Any, args: tuple[Any, ...]) -> None:
        self.call = (function, args)

    def __reduce_ex__(self, protocol: object) -> tuple[Any, ...]:
        return self.call


def _typed() -> Any:
    return torch.storage.TypedStorage(
        wrap_storage=torch.zeros(6).untyped_storage(), dtype=torch.float32, _internal=True
    )


_CASES: dict[str, tuple[str, tuple[Any, ...], str]] = {
    "v2_5args": (
        "_rebuild_tensor_v2",
        (_typed(), 0, (6,), (1,), False),
        "_rebuild_tensor_v2() missing 1 required positional argument: 'backward_hooks'",
    ),
    "v2_8args": (
        "_rebuild_tensor_v2",
        (_typed(), 0, (6,), (1,), False, OrderedDict(), None, 1),
        "_rebuild_tensor_v2() takes from 6 to 7 positional arguments but 8 were given",
    ),
    "v1_3args": (
        "_rebuild_tensor",
        (_typed(), 0, (6,)),
        "_rebuild_tensor() missing 1 required positional argument: 'stride'",
    ),
    "meta_3args": (
        "_rebuild_meta_tensor_no_storage",
        (torch.float32, (2,), (1,)),
        "missing 1 required positional argument: 'requires_grad'",
    ),
    "wrapper_7args": (
        "_rebuild_wrapper_subclass",
        (torch.Tensor, torch.float32, (2,), (1,), 0, torch.strided, torch.device("cpu")),
        "missing 1 required positional argument: 'requires_grad'",
    ),
    "v2_offset_negative": (
        "_rebuild_tensor_v2",
        (_typed(), -1, (6,), (1,), False, OrderedDict()),
        "invalid storage offset -1",
    ),
    "v2_size_float": (
        "_rebuild_tensor_v2",
        (_typed(), 0, (1.5,), (1,), False, OrderedDict()),
        "not an int64",
    ),
    "v2_size_short": (
        "_rebuild_tensor_v2",
        (_typed(), 0, (2, 3), (1,), False, OrderedDict()),
        "unequal size length (2) and stride length (1)",
    ),
    "v2_stride_negative": (
        "_rebuild_tensor_v2",
        (_typed(), 0, (6,), (-1,), False, OrderedDict()),
        "Storage size calculation overflowed",
    ),
    "param_over_int": (
        "_rebuild_parameter",
        (3, False, OrderedDict()),
        "'int' object has no attribute 'detach'",
    ),
    "param_over_list": (
        "_rebuild_parameter",
        ([1.0], False, OrderedDict()),
        "'list' object has no attribute 'detach'",
    ),
    "device_none": (
        "_rebuild_device_tensor_from_numpy",
        (None, torch.float32, "cpu", False),
        "neither a tensor nor an array",
    ),
}


@pytest.mark.parametrize("case", sorted(_CASES))
def test_a_rebuild_torch_refuses_is_pp117(tmp_path: Path, case: str) -> None:
    name, args, reason = _CASES[case]
    path = tmp_path / f"{case}.pt"
    torch.save({"x": _Call(getattr(torch._utils, name), args)}, path)
    for weights_only in (True, False):
        with pytest.raises(Exception):  # noqa: B017 - any refusal; the reason varies by mode
            torch.load(path, weights_only=weights_only)
    report = inspect_paths([str(path)])
    assert not report.problems, report.problems
    codes = [(f.code, f.severity.value) for f in report.findings if f.code == "PP117"]
    assert codes == [("PP117", "error")], report.findings
    assert reason in next(f.message for f in report.findings if f.code == "PP117")


def test_from_type_given_three_arguments_is_pp117(tmp_path: Path) -> None:
    path = tmp_path / "from_type.pt"
    inner = (_typed(), 0, (6,), (1,), False, OrderedDict())
    args = (torch._utils._rebuild_tensor_v2, torch.Tensor, inner)
    torch.save({"x": _Call(torch._tensor._rebuild_from_type_v2, args)}, path)
    with pytest.raises(Exception):  # noqa: B017
        torch.load(path, weights_only=True)
    findings = inspect_paths([str(path)]).findings
    assert [f.code for f in findings if f.code == "PP117"] == ["PP117"], findings
    assert "_rebuild_from_type_v2() missing 1 required positional argument: 'state'" in str(
        [f.message for f in findings]
    )


def test_an_empty_stride_is_read_as_torch_reads_it(tmp_path: Path) -> None:
    # Tensor.set_ takes an empty stride as its default, the contiguous one.
    path = tmp_path / "no_stride.pt"
    args = (_typed(), 0, (2, 3), (), False, OrderedDict())
    torch.save({"x": _Call(torch._utils._rebuild_tensor_v2, args)}, path)
    loaded = torch.load(path, weights_only=True)["x"]
    dump = read_dump(str(path))
    tensor = dump.root["x"]
    assert (tensor.shape, tensor.stride) == (tuple(loaded.shape), loaded.stride())
    assert dump.deviation is not None and not dump.deviation.severe
