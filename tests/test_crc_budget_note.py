"""A file with more storage bytes than ``max_crc_bytes`` is checked as far as its CRCs were
read: the report says how many storage records were left unchecked (a note in text, the
description's ``crc_unchecked`` in JSON), and raising the limit finds a changed byte behind."""

from __future__ import annotations

import struct
import zipfile

import pytest
import torch

from ppaux.dump import inspect_paths
from ppaux.limits import Limits

pytestmark = pytest.mark.torch

_FIRST = 4096 * 4  # bytes of the first storage: float32 x 4096


def _edited(tmp_path, edit: bool):
    path = tmp_path / "two.pt"
    torch.save({"big": torch.zeros(4096), "small": torch.ones(256)}, path)
    if edit:
        with zipfile.ZipFile(path) as archive:
            (info,) = [i for i in archive.infolist() if i.filename.endswith("data/1")]
        data = bytearray(path.read_bytes())
        name, extra = struct.unpack("<HH", data[info.header_offset + 26 : info.header_offset + 30])
        start = info.header_offset + 30 + name + extra
        data[start : start + 4] = struct.pack("<f", -7.0)  # its CRC no longer its data's
        path.write_bytes(bytes(data))
    return path


def test_records_past_the_budget_are_named_unchecked(tmp_path):
    path = _edited(tmp_path, edit=True)
    report = inspect_paths([str(path)], Limits(max_crc_bytes=_FIRST))
    assert [f.code for f in report.findings] == []
    (file,) = report.data["files"]
    assert file["crc_unchecked"] == {"records": 1, "bytes": 256 * 4}
    (note,) = [n for n in report.notes if "CRC" in n]
    assert "1 storage record (1024 bytes)" in note and "max_crc_bytes=16384" in note


def test_within_the_budget_the_change_is_found(tmp_path):
    path = _edited(tmp_path, edit=True)
    report = inspect_paths([str(path)], Limits(max_crc_bytes=_FIRST + 1024))
    assert [f.code for f in report.findings] == ["PP118"], report.findings
    assert "crc_unchecked" not in report.data["files"][0]


def test_a_file_within_the_budget_has_no_note(tmp_path):
    path = _edited(tmp_path, edit=False)
    report = inspect_paths([str(path)])
    assert report.findings == ()
    assert "crc_unchecked" not in report.data["files"][0]
    assert not [n for n in report.notes if "CRC" in n]
