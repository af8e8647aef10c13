"""Negative sizes and strides that ``Tensor.set_`` takes, checked against torch's real loader:
an empty tensor with a negative size, a negative stride on a dimension of one element. torch.save
writes neither; torch.load reads them (replacing the stride), so ppaux describes the tensor torch
gives, with a warning (PP118), never "malformed"."""

from __future__ import annotations

import collections
import json
import warnings
import zipfile
from pathlib import Path

import pytest
import torch
from helpers import cli
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.dump.set_args import set_refusal, set_strides

pytestmark = pytest.mark.torch

_NEG = b"J\xff\xff\xff\xff"  # BININT -1


def _edited(tmp_path: Path, tensor: torch.Tensor, old: bytes, new: bytes, nth: int) -> Path:
    """``{"x": tensor}`` saved by torch, the ``nth`` occurrence of ``old`` in data.pkl made
    ``new``, written back by torch's own zip writer."""
    src = tmp_path / "src.pt"
    torch.save({"x": tensor}, src)
    with zipfile.ZipFile(src) as archive:
        records = [(i.filename.split("/", 1)[1], archive.read(i)) for i in archive.infolist()]
    path = tmp_path / "e.pt"
    with torch.serialization._open_zipfile_writer(str(path)) as writer:
        for name, data in records:
            if name == "data.pkl":
                at = -1
                for _ in range(nth + 1):
                    at = data.index(old, at + 1)
                data = data[:at] + new + data[at + len(old) :]
            writer.write_record(name, data, len(data))
    return path


@pytest.mark.parametrize(
    ("tensor", "old", "new", "nth"),
    [
        (torch.zeros(1), b"K\x01\x85", _NEG + b"\x85", 1),  # stride (-1,)
        (torch.zeros(1, 4), b"K\x04K\x01\x86", _NEG + b"K\x01\x86", 0),  # stride (-1, 1)
        (torch.zeros(3, 1, 2), b"K\x02K\x02K\x01\x87", b"K\x02" + _NEG + b"K\x01\x87", 0),
        (torch.zeros(0, 3), b"K\x00K\x03\x86", b"K\x00" + _NEG + b"\x86", 0),  # size (0, -1)
        (torch.zeros(3, 0), b"K\x03K\x00\x86", _NEG + b"K\x00\x86", 0),  # size (-1, 0)
    ],
)
def test_what_torch_reads_is_described_with_a_warning(tmp_path, tensor, old, new, nth):
    path = _edited(tmp_path, tensor, old, new, nth)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = [torch.load(path, weights_only=w)["x"] for w in (True, False)]
    result = cli("inspect", str(path), "--format", "json")
    assert result.exit_code == 0, result.stdout + result.stderr
    document = json.loads(result.stdout)
    (entry,) = document["files"][0]["payloads"][0]["entries"]
    for value in loaded:
        assert entry["shape"] == list(value.shape)
        assert entry["stride"] == list(value.stride())
    assert {f["code"].split("/")[0] for f in document["findings"]} >= {"PP118"}
    assert all(f["severity"] != "error" for f in document["findings"])


@settings(max_examples=200, deadline=None)
@given(pairs=st.lists(st.tuples(st.integers(-2, 3), st.integers(-3, 6)), min_size=1, max_size=4))
def test_set_strides_are_torchs(pairs):
    """Where ``set_`` takes a size and stride, the strides it gives are ``set_strides``'s."""
    size, stride = (tuple(p[0] for p in pairs), tuple(p[1] for p in pairs))
    if set_refusal(0, size, stride, 64) is not None:
        return
    storage = torch.storage.TypedStorage(
        wrap_storage=torch.UntypedStorage(4 * 4096), dtype=torch.float32, _internal=True
    )
    try:
        tensor = torch._utils._rebuild_tensor_v2(
            storage, 0, size, stride, False, collections.OrderedDict()
        )
    except RuntimeError:
        return  # past the storage: another check's
    assert tensor.stride() == set_strides(size, stride)
    assert tuple(tensor.shape) == size
