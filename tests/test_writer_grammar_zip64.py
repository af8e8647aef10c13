"""A torch.save output past 4 GiB (zip64 fields in its headers) is checked field by field as
one under 4 GiB is: the real file is clean, and an edit torch.save never writes is found.

The file is one torch.save wrote (torch 2.13.0) for
``{"w": torch.arange(6.0).reshape(2, 3), "big": torch.zeros(2**32 + 4096, dtype=torch.uint8)}``
(4,294,973,337 bytes): its first 960 bytes (up to the big storage's data) and its last 985
(from that data's end) are kept below; the test writes them around a hole of zeros, a sparse
file, so no 4 GiB is written. torch.load (mmap=True) reads each file, in this process, as
torch.save's own output."""

from __future__ import annotations

import base64
import struct
from pathlib import Path

import pytest
import torch

from ppaux.dump import inspect_paths

pytestmark = pytest.mark.torch

_HEAD = base64.b64decode(
    "UEsDBAAACAgAAAAAAAAAAAAAAAAAAAAAAAAQABIAcmVhbF80Zy9kYXRhLnBrbEZCDgBaWlpaWlpaWlpaWlpaWoAC"
    "fXEAKFgBAAAAd3EBY3RvcmNoLl91dGlscwpfcmVidWlsZF90ZW5zb3JfdjIKcQIoKFgHAAAAc3RvcmFnZXEDY3Rv"
    "cmNoCkZsb2F0U3RvcmFnZQpxBFgBAAAAMHEFWAMAAABjcHVxBksGdHEHUUsASwJLA4ZxCEsDSwGGcQmJY2NvbGxl"
    "Y3Rpb25zCk9yZGVyZWREaWN0CnEKKVJxC3RxDFJxDVgDAAAAYmlncQ5oAigoaANjdG9yY2gKQnl0ZVN0b3JhZ2UK"
    "cQ9YAQAAADFxEGgGigUAEAAAAXRxEVFLAIoFABAAAAGFcRJLAYVxE4loCilScRR0cRVScRZ1LlBLBwjmPZax/wAA"
    "AP8AAABQSwMEAAAICAAAAAAAAAAAAAAAAAAAAAAAABcAPAByZWFsXzRnLy5mb3JtYXRfdmVyc2lvbkZCOABaWlpa"
    "WlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWjFQSwcIt+/cgwEAAAAB"
    "AAAAUEsDBAAACAgAAAAAAAAAAAAAAAAAAAAAAAAaADcAcmVhbF80Zy8uc3RvcmFnZV9hbGlnbm1lbnRGQjMAWlpa"
    "WlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaNjRQSwcIP3dx6QIAAAACAAAA"
    "UEsDBAAACAgAAAAAAAAAAAAAAAAAAAAAAAARAD8AcmVhbF80Zy9ieXRlb3JkZXJGQjsAWlpaWlpaWlpaWlpaWlpa"
    "WlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpsaXR0bGVQSwcIhT3jGQYAAAAGAAAA"
    "UEsDBAAACAgAAAAAAAAAAAAAAAAAAAAAAAAOAD4AcmVhbF80Zy9kYXRhLzBGQjoAWlpaWlpaWlpaWlpaWlpaWlpa"
    "WlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWgAAAAAAAIA/AAAAQAAAQEAAAIBAAACgQFBL"
    "BwgXkOeRGAAAABgAAABQSwMEAAAICAAAAAAAAAAAAAAAAAAAAAAAAA4ALAByZWFsXzRnL2RhdGEvMQEAEAAAEAAA"
    "AQAAAAAAAAAAAAAARkIUAFpaWlpaWlpaWlpaWlpaWlpaWlpa"
)
_TAIL = base64.b64decode(
    "UEsHCH/TdbgAEAAAAQAAAAAQAAABAAAAUEsDBAAACAgAAAAAAAAAAAAAAAAAAAAAAAAPADsAcmVhbF80Zy92ZXJz"
    "aW9uAQAIANgTAAABAAAARkIrAFpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlozClBL"
    "BwjRnmdVAgAAAAAAAAACAAAAAAAAAFBLAwQAAAgIAAAAAAAAAAAAAAAAAAAAAAAAHgAqAHJlYWxfNGcvLmRhdGEv"
    "c2VyaWFsaXphdGlvbl9pZAEACABaFAAAAQAAAEZCGgBaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWjA1NjExMDg1"
    "MjM2MTk2NzA1Mjk0MDYxMDgwNzc4MDg5NDI3Nzc5NTZQSwcIjVJerygAAAAAAAAAKAAAAAAAAABQSwECAAAAAAgI"
    "AAAAAAAA5j2Wsf8AAAD/AAAAEAAAAAAAAAAAAAAAAAAAAAAAcmVhbF80Zy9kYXRhLnBrbFBLAQIAAAAACAgAAAAA"
    "AAC379yDAQAAAAEAAAAXAAAAAAAAAAAAAAAAAE8BAAByZWFsXzRnLy5mb3JtYXRfdmVyc2lvblBLAQIAAAAACAgA"
    "AAAAAAA/d3HpAgAAAAIAAAAaAAAAAAAAAAAAAAAAANEBAAByZWFsXzRnLy5zdG9yYWdlX2FsaWdubWVudFBLAQIA"
    "AAAACAgAAAAAAACFPeMZBgAAAAYAAAARAAAAAAAAAAAAAAAAAFICAAByZWFsXzRnL2J5dGVvcmRlclBLAQIAAAAA"
    "CAgAAAAAAAAXkOeRGAAAABgAAAAOAAAAAAAAAAAAAAAAANYCAAByZWFsXzRnL2RhdGEvMFBLAQIAAAAACAgAAAAA"
    "AAB/03W4//////////8OABQAAAAAAAAAAAAAAGgDAAByZWFsXzRnL2RhdGEvMQEAEAAAEAAAAQAAAAAQAAABAAAA"
    "UEsBAgAAAAAICAAAAAAAANGeZ1UCAAAAAgAAAA8ADAAAAAAAAAAAAAAA/////3JlYWxfNGcvdmVyc2lvbgEACADY"
    "EwAAAQAAAFBLAQIAAAAACAgAAAAAAACNUl6vKAAAACgAAAAeAAwAAAAAAAAAAAAAAP////9yZWFsXzRnLy5kYXRh"
    "L3NlcmlhbGl6YXRpb25faWQBAAgAWhQAAAEAAABQSwYGLAAAAAAAAAAeAy0AAAAAAAAAAAAIAAAAAAAAAAgAAAAA"
    "AAAANwIAAAAAAAAAFQAAAQAAAFBLBgcAAAAANxcAAAEAAAABAAAAUEsFBgAAAAAIAAgANwIAAP////8AAA=="
)
#: The big storage's size: its data (zeros) lies between _HEAD and _TAIL.
_BIG = 2**32 + 4096
_DIRECTORY = len(_HEAD) + _BIG + 24 + 130 + 166  # data descriptor, then two records


def _write(path: Path, edits: list[tuple[int, bytes]]) -> Path:
    """The sparse file, each ``(file offset, bytes)`` of ``edits`` written over it."""
    with path.open("wb") as handle:
        handle.write(_HEAD)
        handle.seek(len(_HEAD) + _BIG)
        handle.write(_TAIL)
        for offset, data in edits:
            handle.seek(offset)
            handle.write(data)
    return path


def _torch_reads(path: Path) -> None:
    loaded = torch.load(path, mmap=True, weights_only=True)
    assert torch.equal(loaded["w"], torch.arange(6.0).reshape(2, 3))
    assert loaded["big"].shape == (_BIG,)


def _findings(path: Path) -> list[tuple[str, str, str]]:
    report = inspect_paths([str(path)])
    return [(f.code, f.severity.value, f.message) for f in report.findings]


def test_the_real_file_is_clean(tmp_path: Path) -> None:
    path = _write(tmp_path / "real.pt", [])
    assert path.stat().st_size == 4_294_973_337
    assert _TAIL[_DIRECTORY - len(_HEAD) - _BIG :].startswith(b"PK\x01\x02")
    _torch_reads(path)
    assert _findings(path) == []


@pytest.mark.parametrize(
    ("edit", "severity"),
    [
        # data.pkl's CRC in the central directory
        ((_DIRECTORY + 16, b"\xde\xad\xbe\xef"), "error"),
        # a DOS time in data.pkl's local header
        ((10, struct.pack("<H", 0x6000)), "warning"),
        # a byte of data.pkl's FB padding
        ((30 + 16 + 4, b"\x00"), "warning"),
        # the 64-bit size in the big storage's data descriptor
        ((len(_HEAD) + _BIG + 8, struct.pack("<Q", _BIG + 1)), "warning"),
        # the offset in the zip64 field of version's local header
        ((len(_HEAD) + _BIG + 24 + 30 + 15 + 4, struct.pack("<Q", 1)), "warning"),
    ],
    ids=["central-crc", "dos-time", "padding", "descriptor-size", "local-zip64-offset"],
)
def test_an_edit_past_4_gib_is_found(
    tmp_path: Path, edit: tuple[int, bytes], severity: str
) -> None:
    path = _write(tmp_path / "edited.pt", [edit])
    _torch_reads(path)
    found = _findings(path)
    assert [(code, level) for code, level, _ in found] == [("PP118", severity)], found
    assert found[0][2].startswith("not as torch.save writes it")
