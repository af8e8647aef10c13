"""The storage class in a tensor's persistent id, against the writer's model.

torch.save 2.x names a tensor's storage ``torch.<Kind>Storage`` (torch.FloatStorage) under
``_rebuild_tensor_v2``, and ``torch.storage.UntypedStorage`` only under ``_rebuild_tensor_v3``
(with the dtype beside it) or for an untyped storage saved as itself. torch.load takes only the
class's dtype (the location names the device): a CUDA class such as torch.cuda.FloatStorage is
read as torch.FloatStorage, an untyped class as bytes, in both modes. Such files are read, as
torch reads them, and reported as not as torch.save writes them (PP118). Each file is pickled by
CPython's pickler (so only the storage class leaves the model) inside torch's own zip writer.
"""

from __future__ import annotations

import collections
import io
import struct
from pathlib import Path

import pytest
import torch
from torch_archives import StoragePickler, torch_archive

from ppaux.dump import inspect_paths

pytestmark = pytest.mark.torch


class _Storage:
    def __init__(self, cls: type, numel: int) -> None:
        self.pid = ("storage", cls, "0", "cpu", numel)


class _Tensor:
    """Reduces as torch.save reduces a tensor of 3 elements over ``storage``."""

    def __init__(self, storage: _Storage, parameter: bool = False) -> None:
        self.storage = storage
        self.parameter = parameter

    def __reduce_ex__(self, protocol):
        args = (self.storage, 0, (3,), (1,), False, collections.OrderedDict())
        if self.parameter:
            inner = _Tensor(self.storage)
            return (torch._utils._rebuild_parameter, (inner, False, collections.OrderedDict()))
        return (torch._utils._rebuild_tensor_v2, args)


def _saved(tmp_path: Path, value: object) -> Path:
    buffer = io.BytesIO()
    StoragePickler(buffer, protocol=2).dump({"t": value})
    return torch_archive(
        tmp_path / "t.pt", buffer.getvalue(), {"0": struct.pack("<3f", 1.0, 2.0, 3.0)}
    )


def _inspected(path: Path) -> tuple[dict[str, str], dict[str, object]]:
    report = inspect_paths([str(path)])
    found = {f.code: f"{f.severity.value}: {f.message}" for f in report.findings}
    [entry] = [e for f in report.data["files"] for p in f["payloads"] for e in p["entries"]]
    return found, entry


def _torch_reads(path: Path) -> tuple[str, list[int], list[object]]:
    """What torch.load gives, the same under both loaders (asserted)."""
    read = []
    for weights_only in (True, False):
        value = torch.load(path, weights_only=weights_only)["t"]
        read.append((str(value.dtype).removeprefix("torch."), list(value.shape), value.tolist()))
    assert read[0] == read[1]
    return read[0]


def test_the_class_torch_save_writes_is_clean(tmp_path):
    path = _saved(tmp_path, _Tensor(_Storage(torch.FloatStorage, 3)))
    found, entry = _inspected(path)
    assert found == {}, found
    assert _torch_reads(path) == ("float32", [3], [1.0, 2.0, 3.0])
    assert (entry["dtype"], entry["shape"], entry["device"]) == ("float32", [3], "cpu")


@pytest.mark.parametrize("parameter", [False, True], ids=["tensor", "parameter"])
def test_a_cuda_storage_class_is_read_as_torch_reads_it(tmp_path, parameter):
    path = _saved(tmp_path, _Tensor(_Storage(torch.cuda.FloatStorage, 3), parameter))
    assert _torch_reads(path) == ("float32", [3], [1.0, 2.0, 3.0])
    found, entry = _inspected(path)
    assert set(found) == {"PP118"}, found
    assert "torch.cuda.FloatStorage, which torch.save names torch.FloatStorage" in found["PP118"]
    assert (entry["dtype"], entry["shape"], entry["device"]) == ("float32", [3], "cpu")


@pytest.mark.parametrize("parameter", [False, True], ids=["tensor", "parameter"])
@pytest.mark.parametrize("cls", [torch.UntypedStorage, torch.storage.UntypedStorage])
def test_an_untyped_storage_under_rebuild_tensor_v2_is_a_finding(tmp_path, cls, parameter):
    path = _saved(tmp_path, _Tensor(_Storage(cls, 12), parameter))
    dtype, shape, _ = _torch_reads(path)
    assert (dtype, shape) == ("uint8", [3])
    found, entry = _inspected(path)
    assert set(found) == {"PP118"}, found
    assert "UntypedStorage" in found["PP118"], found
    assert (entry["dtype"], entry["shape"]) == ("uint8", [3])
