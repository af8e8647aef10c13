"""Values torch.load reads as ppaux describes them, but that torch.save's pickler never writes,
each pickled by CPython's pickler inside torch's own zip writer: a set holding an item twice
(a set pickles each item once), a tensor's size pickled as a torch.Size (torch.save writes a
tuple), a Parameter over a tensor that requires grad (torch.save writes the Parameter's data,
which does not). Each is reported as not as torch.save writes it (PP118); the same values as
torch.save writes them stay clean."""

from __future__ import annotations

import collections
import io
import struct
import zipfile
from pathlib import Path

import pytest
import torch
from torch_archives import StoragePickler, torch_archive

from ppaux.dump import inspect_paths

pytestmark = pytest.mark.torch


class _Storage:
    pid = ("storage", torch.FloatStorage, "0", "cpu", 6)


class _Call:
    def __init__(self, fn: object, *args: object) -> None:
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)


def _tensor(size: object = (2, 3), requires_grad: bool = False, stride: object = (3, 1)) -> _Call:
    hooks = collections.OrderedDict()
    return _Call(torch._utils._rebuild_tensor_v2, _Storage(), 0, size, stride, requires_grad, hooks)


def _saved(tmp_path: Path, value: object) -> Path:
    buffer = io.BytesIO()
    StoragePickler(buffer, protocol=2).dump(value)
    return torch_archive(tmp_path / "t.pt", buffer.getvalue(), {"0": struct.pack("<6f", *range(6))})


def _deviation(path: Path) -> str | None:
    report = inspect_paths([str(path)])
    found = {f.code: f"{f.severity.value}: {f.message}" for f in report.findings}
    assert set(found) <= {"PP118"}, found
    return found.get("PP118")


def _torch_reads(path: Path) -> object:
    read = [torch.load(path, weights_only=wo) for wo in (True, False)]
    assert repr(read[0]) == repr(read[1])
    return read[0]


def test_a_repeated_set_item_is_a_finding(tmp_path):
    path = _saved(tmp_path, {"s": _Call(set, [1, 2, 1]), "t": _tensor()})
    assert _torch_reads(path)["s"] == {1, 2}
    found = _deviation(path)
    assert found is not None and "set item repeated" in found
    assert _deviation(_saved(tmp_path, {"s": {1, 2}, "t": _tensor()})) is None


def test_a_size_pickled_as_torch_size_is_a_finding(tmp_path):
    path = _saved(tmp_path, {"t": _tensor(size=torch.Size([2, 3]))})
    assert _torch_reads(path)["t"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    found = _deviation(path)
    assert found is not None and "torch.Size" in found
    # A torch.Size as a value of its own is what torch.save writes for it.
    assert _deviation(_saved(tmp_path, {"t": _tensor(), "s": torch.Size([2, 3])})) is None


@pytest.mark.parametrize("where", ["size", "stride"])
def test_a_scalar_size_pickled_as_torch_size_is_a_finding(tmp_path, where):
    # torch.Size(()) is equal to the plain () torch.save writes for a scalar's size and stride,
    # and Python shares the one empty tuple: only the pickle tells them apart.
    empty = {"size": (), "stride": (), where: torch.Size([])}
    path = _saved(tmp_path, {"t": _tensor(**empty)})
    assert b"ctorch\nSize\n" in zipfile.ZipFile(path).read("t/data.pkl")
    assert repr(_torch_reads(path)["t"]) == "tensor(0.)"
    found = _deviation(path)
    assert found is not None and found.startswith("warning: ") and "torch.Size" in found
    assert _deviation(_saved(tmp_path, {"t": _tensor(size=(), stride=())})) is None
    # An empty torch.Size as a value of its own is what torch.save writes for it.
    beside = {"t": _tensor(size=(), stride=()), "s": torch.Size([])}
    assert _deviation(_saved(tmp_path, beside)) is None


@pytest.mark.parametrize("outer", [False, True])
def test_a_parameter_over_a_tensor_that_requires_grad_is_a_finding(tmp_path, outer):
    hooks = collections.OrderedDict()
    value = _Call(torch._utils._rebuild_parameter, _tensor(requires_grad=True), outer, hooks)
    path = _saved(tmp_path, {"p": value})
    assert _torch_reads(path)["p"].requires_grad is outer
    found = _deviation(path)
    assert found is not None and "Parameter over a tensor that requires grad" in found
    clean = _Call(torch._utils._rebuild_parameter, _tensor(), outer, hooks)
    assert _deviation(_saved(tmp_path, {"p": clean})) is None
