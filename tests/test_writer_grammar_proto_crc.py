"""PROTO opcodes and CRC fields torch.save never writes: findings, never a refusal of a file
torch reads (each file is checked with torch.load under both loaders)."""

from __future__ import annotations

import struct
import warnings
import zipfile
import zlib
from pathlib import Path

import pytest
import torch

from ppaux.dump import inspect_paths

pytestmark = pytest.mark.torch


def _saved(tmp_path: Path) -> Path:
    path = tmp_path / "base.pt"
    torch.save({"logits": torch.tensor([1.0, 2.0])}, path)
    return path


def _rewritten(tmp_path: Path, edit) -> Path:
    """The file torch.save wrote, its data.pkl edited, rewritten by torch's own zip writer."""
    source = _saved(tmp_path)
    with zipfile.ZipFile(source) as archive:
        pkl = archive.read("base/data.pkl")
        storage = archive.read("base/data/0")
    data = edit(pkl)
    path = tmp_path / "edited.pt"
    with torch.serialization._open_zipfile_writer(str(path)) as out:
        out.write_record("data.pkl", data, len(data))
        out.write_record(".format_version", "1", 1)
        out.write_record(".storage_alignment", "64", 2)
        out.write_record("byteorder", "little", 6)
        out.write_record("data/0", storage, len(storage))
    return path


def _found(path: Path) -> dict[str, str]:
    report = inspect_paths([str(path)])
    assert report.problems == [], report.problems
    return {f.code: f"{f.severity.value}: {f.message}" for f in report.findings}


def _loads(path: Path, weights_only: bool) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.load(path, weights_only=weights_only)
    except ValueError as exc:
        assert "unsupported pickle protocol" in str(exc)
        return False
    return True


def test_the_control_is_clean(tmp_path):
    assert _found(_rewritten(tmp_path, lambda pkl: pkl)) == {}


def test_a_protocol_past_5_is_an_error_finding_not_a_refusal(tmp_path):
    path = _rewritten(tmp_path, lambda pkl: b"\x80\x06" + pkl[2:])
    assert (_loads(path, True), _loads(path, False)) == (True, False)
    assert _found(path) == {
        "PP118": "error: not as torch.save writes it: data.pkl byte 0 (PROTO): pickle protocol 6, "
        "past the newest (5): torch.load's default (weights_only=True) reads on with a warning, "
        "torch.load(weights_only=False) refuses the file ('unsupported pickle protocol: 6')"
    }


@pytest.mark.parametrize(
    ("second", "severity"), [(2, "warning"), (3, "error")], ids=["same", "other"]
)
def test_a_second_proto(tmp_path, second, severity):
    # The same protocol again changes nothing; another changes how the unpickler maps names.
    path = _rewritten(tmp_path, lambda pkl: pkl[:2] + bytes([0x80, second]) + pkl[2:])
    assert (_loads(path, True), _loads(path, False)) == (True, True)
    assert _found(path) == {
        "PP118": f"{severity}: not as torch.save writes it: data.pkl byte 2 (PROTO): a second "
        f"PROTO ({second}), where the pickler writes one, first"
    }


def _crc_replaced(path: Path, record: str, new: int) -> Path:
    """``path`` with ``record``'s CRC replaced in its data descriptor and central header
    (its local header holds 0, as torch.save writes it)."""
    with zipfile.ZipFile(path) as archive:
        old = zlib.crc32(archive.read(record))
    data = path.read_bytes()
    assert data.count(struct.pack("<I", old)) == 2
    out = path.with_name("crc.pt")
    out.write_bytes(data.replace(struct.pack("<I", old), struct.pack("<I", new)))
    return out


@pytest.mark.parametrize(
    ("record", "new"),
    [("base/version", 0x12345678), ("base/version", 0), ("base/data/0", 0x12345678)],
    ids=["wrong", "zero_among_real", "storage"],
)
def test_a_crc_that_is_not_the_records_is_a_warning(tmp_path, record, new):
    path = _crc_replaced(_saved(tmp_path), record, new)
    assert (_loads(path, True), _loads(path, False)) == (True, True)  # torch checks no CRC
    assert _found(path) == {
        "PP118": f"warning: not as torch.save writes it: record {record!r}: its CRC is not its "
        "data's"
    }
