"""A pickle that calls a legacy storage class (``torch.FloatStorage``) where torch.save writes a
rebuild function (a memo reference pointing at the storage class instead): both of torch's
unpicklers stand a storage type in for the class, which cannot be called, so torch.load refuses
the file in both modes. ppaux says so (PP117), never reads it as a storage object."""

from __future__ import annotations

import io
import zipfile

import pytest
import torch

from ppaux.dump import inspect_paths

pytestmark = pytest.mark.torch


def _saved(legacy: bool) -> bytes:
    buf = io.BytesIO()
    values = {"a": torch.arange(3.0), "b": torch.arange(2.0)}
    torch.save(values, buf, _use_new_zipfile_serialization=not legacy)
    return buf.getvalue()


def _second_rebuild_to_storage_class(pickle_bytes: bytes) -> bytes:
    """The second tensor's BINGET of the rebuild function (memo 2) made a BINGET of the
    storage class (memo 4), as torch 2.13's pickler numbers them."""
    after_b = pickle_bytes.index(b"X\x01\x00\x00\x00b") + 6
    at = pickle_bytes.index(b"h\x02(", after_b)
    return pickle_bytes[: at + 1] + b"\x04" + pickle_bytes[at + 2 :]


def _zip_with(raw: bytes) -> bytes:
    """The zip torch wrote, data.pkl changed in place (same length, so every offset holds; the
    CRC written again)."""
    source = zipfile.ZipFile(io.BytesIO(raw))
    name = next(n for n in source.namelist() if n.endswith("/data.pkl"))
    changed = _second_rebuild_to_storage_class(source.read(name))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as target:
        for info in source.infolist():
            target.writestr(info, changed if info.filename == name else source.read(info))
    return out.getvalue()


@pytest.mark.parametrize("legacy", [False, True])
def test_a_call_of_a_storage_class_is_refused_as_torch_refuses_it(tmp_path, legacy):
    raw = _saved(legacy)
    data = _second_rebuild_to_storage_class(raw) if legacy else _zip_with(raw)
    path = tmp_path / "called.pt"
    path.write_bytes(data)
    for weights_only in (True, False):
        with pytest.raises(TypeError, match="'StorageType' object is not callable"):
            torch.load(path, weights_only=weights_only)
    report = inspect_paths([str(path)])
    refused = [f for f in report.findings if f.code == "PP117"]
    assert len(refused) == 1
    assert "calls torch.FloatStorage" in refused[0].message
    assert "'StorageType' object is not callable" in refused[0].message
    assert report.data["files"] == []  # refused, not described
