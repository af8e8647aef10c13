"""A file torch.save writes under ``torch.serialization.skip_data()``: each storage record holds
zeros and its CRC is 0 (the other records keep theirs). torch.load reads the zeros; ppaux
calls the file as written, and a storage record that holds other bytes under a CRC of 0 not."""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import pytest
import torch

from ppaux.dump import inspect_paths

pytestmark = pytest.mark.torch


def _saved(path: Path) -> Path:
    with torch.serialization.skip_data():
        torch.save({"w": torch.ones(4, 4), "b": torch.arange(3.0)}, path)
    return path


def _codes(path: Path) -> list[tuple[str, str, str]]:
    return [(f.code, f.severity.value, f.message) for f in inspect_paths([str(path)]).findings]


def test_skip_data_output_is_as_written(tmp_path: Path) -> None:
    path = _saved(tmp_path / "skipped.pt")
    crcs = {r.filename.split("/", 1)[1]: r.CRC for r in zipfile.ZipFile(path).infolist()}
    assert crcs["data/0"] == crcs["data/1"] == 0 and crcs["data.pkl"] != 0
    loaded = torch.load(path, weights_only=True)
    assert torch.equal(loaded["w"], torch.zeros(4, 4))
    assert torch.equal(loaded["b"], torch.zeros(3))
    assert _codes(path) == []


def test_a_zero_crc_storage_holding_data_is_found(tmp_path: Path) -> None:
    path = _saved(tmp_path / "skipped.pt")
    data = bytearray(path.read_bytes())
    record = zipfile.ZipFile(path).getinfo(f"{path.stem}/data/1")
    name_size, extra_size = (
        int.from_bytes(data[record.header_offset + 26 : record.header_offset + 28], "little"),
        int.from_bytes(data[record.header_offset + 28 : record.header_offset + 30], "little"),
    )
    start = record.header_offset + 30 + name_size + extra_size
    data[start : start + 4] = struct.pack("<f", 2.0)
    path.write_bytes(bytes(data))
    assert torch.load(path, weights_only=True)["b"][0].item() == 2.0
    found = _codes(path)
    assert [(code, level) for code, level, _ in found] == [("PP118", "warning")], found
    assert "skip_data()" in found[0][2]


def _big_skipped(tmp_path: Path) -> Path:
    """skip_data() output whose storages are past 64 bytes (not held whole): 400 and 800."""
    path = tmp_path / "big.pt"
    with torch.serialization.skip_data():
        torch.save({"w": torch.ones(100), "b": torch.ones(100, dtype=torch.float64)}, path)
    return path


def test_a_skip_data_storage_past_max_crc_bytes_is_as_written(tmp_path: Path) -> None:
    """Storages past what is left of ``max_crc_bytes``: their zeros are not read, and the file
    is as written all the same, as within it (not a CRC finding)."""
    from ppaux.dump import read_dump
    from ppaux.limits import Limits

    path = _big_skipped(tmp_path)
    assert torch.equal(torch.load(path, weights_only=True)["b"], torch.zeros(100).double())
    for budget in (0, 399, 400, 1199, 1200, 64 << 20):
        assert read_dump(path, Limits(max_crc_bytes=budget)).deviation is None, budget


def test_past_max_crc_bytes_a_zero_crc_storage_holding_data_is_unchecked(tmp_path: Path) -> None:
    from ppaux.dump import read_dump
    from ppaux.limits import Limits

    path = _big_skipped(tmp_path)
    data = bytearray(path.read_bytes())
    record = zipfile.ZipFile(path).getinfo("big/data/1")
    start = record.header_offset + 30
    start += int.from_bytes(data[record.header_offset + 26 : record.header_offset + 28], "little")
    start += int.from_bytes(data[record.header_offset + 28 : record.header_offset + 30], "little")
    data[start + 792 : start + 800] = struct.pack("<d", 2.0)
    path.write_bytes(bytes(data))
    assert torch.load(path, weights_only=True)["b"][-1].item() == 2.0
    found = read_dump(path, Limits(max_crc_bytes=1200)).deviation  # 400 + 800: read
    assert found is not None and "skip_data()" in found.what
    assert read_dump(path, Limits(max_crc_bytes=1199)).deviation is None  # not read
