"""A tensor's saved metadata (its conjugate and negative bits) against the writer's model.

torch.save appends ``{'conj': True}`` / ``{'neg': True}`` to a view's rebuild arguments and
nothing for any other tensor. torch.load sets a bit for each of those names whatever its value,
ignores other names, and fails on what pybind cannot pass on. Each file is pickled by CPython's
pickler (so only the metadata leaves the model) inside torch's own zip writer.
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

_NO_METADATA = object()


class _Storage:
    pid = ("storage", torch.FloatStorage, "0", "cpu", 3)


class _Tensor:
    """Reduces as torch.save reduces a float32 tensor of 3 elements, with ``metadata``."""

    def __init__(self, metadata: object) -> None:
        self.metadata = metadata

    def __reduce_ex__(self, protocol):
        args = (_Storage(), 0, (3,), (1,), False, collections.OrderedDict())
        if self.metadata is not _NO_METADATA:
            args += (self.metadata,)
        return (torch._utils._rebuild_tensor_v2, args)


def _saved(tmp_path: Path, metadata: object) -> Path:
    buffer = io.BytesIO()
    StoragePickler(buffer, protocol=2).dump({"t": _Tensor(metadata)})
    return torch_archive(
        tmp_path / "t.pt", buffer.getvalue(), {"0": struct.pack("<3f", 1.0, 2.0, 3.0)}
    )


def _found(path: Path) -> dict[str, str]:
    report = inspect_paths([str(path)])
    return {f.code: f"{f.severity.value}: {f.message}" for f in report.findings}


def _torch_reads(path: Path) -> list[object]:
    """What torch.load gives, the same under both loaders (asserted)."""
    read = [torch.load(path, weights_only=wo)["t"].tolist() for wo in (True, False)]
    assert read[0] == read[1]
    return read[0]


def _torch_refuses(path: Path) -> None:
    for wo in (True, False):
        with pytest.raises((TypeError, AssertionError, RuntimeError)):
            torch.load(path, weights_only=wo)


def test_no_metadata_and_a_negative_view_as_torch_save_writes_them(tmp_path):
    assert _found(_saved(tmp_path, _NO_METADATA)) == {}
    path = _saved(tmp_path, {"neg": True})
    assert _found(path) == {}
    assert _torch_reads(path) == [-1.0, -2.0, -3.0]


@pytest.mark.parametrize(
    ("metadata", "shown"),
    [
        ({"neg": 1}, "{'neg': 1}"),
        ({"neg": False}, "{'neg': False}"),
        ({"neg": None}, "{'neg': None}"),
        ({b"neg": True}, "{b'neg': True}"),
    ],
    ids=["one", "false", "none", "bytes"],
)
def test_a_neg_entry_torch_save_never_writes_still_negates(tmp_path, metadata, shown):
    # torch sets the bit whatever the value says: an error, since the file reads otherwise.
    path = _saved(tmp_path, metadata)
    assert _torch_reads(path) == [-1.0, -2.0, -3.0]
    found = _found(path)
    assert found["PP118"].startswith("error:"), found
    assert f"tensor metadata {shown}: torch sets the neg bit" in found["PP118"]


def test_a_name_torch_ignores_is_a_warning(tmp_path):
    path = _saved(tmp_path, {"foo": 1})
    assert _torch_reads(path) == [1.0, 2.0, 3.0]
    # Byte 173 is the REDUCE that calls _rebuild_tensor_v2 (pickletools lists it there).
    assert _found(path) == {
        "PP118": "warning: not as torch.save writes it: data.pkl byte 173: tensor metadata "
        "'foo', a name torch ignores"
    }


@pytest.mark.parametrize("metadata", [{}, 0.0, "", ()], ids=["dict", "float", "str", "tuple"])
def test_empty_metadata_is_a_warning(tmp_path, metadata):
    path = _saved(tmp_path, metadata)
    assert _torch_reads(path) == [1.0, 2.0, 3.0]
    found = _found(path)
    assert found["PP118"].startswith("warning:") and "(torch.save writes none)" in found["PP118"]


@pytest.mark.parametrize(
    ("metadata", "reason"),
    [
        ({"conj": True}, "a float32 tensor has the conjugate bit"),
        ({"neg": "yes"}, "a tensor's metadata maps 'neg' to a str"),
        ({"neg": True, "foo": ()}, "a tensor's metadata maps 'foo' to a tuple"),
        ([1], "a tensor's metadata is a list, not a dict"),
        (5, "a tensor's metadata is a int, not a dict"),
    ],
    ids=["conj_on_real", "str_value", "tuple_value", "list", "int"],
)
def test_metadata_torch_fails_on_is_refused_as_torch_refuses(tmp_path, metadata, reason):
    path = _saved(tmp_path, metadata)
    _torch_refuses(path)
    found = _found(path)
    assert found.get("PP117") == f"error: torch.load refuses the file: {reason}", found
