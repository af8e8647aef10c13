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
    assert report.problems == (), report.problems
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


@pytest.mark.parametrize("second", [2, 0, 1, 3, 4, 5])
def test_a_second_proto_both_readers_read_through_is_a_warning(tmp_path, second):
    # No module of the file's is one CPython's unpickler renames: whichever side of 3 the
    # protocol lands, both of torch.load's readers read what they read without it.
    path = _rewritten(tmp_path, lambda pkl: pkl[:2] + bytes([0x80, second]) + pkl[2:])
    assert (_loads(path, True), _loads(path, False)) == (True, True)
    assert _found(path) == {
        "PP118": f"warning: not as torch.save writes it: data.pkl byte 2 (PROTO): a second "
        f"PROTO ({second}), where the pickler writes one, first; both of torch.load's readers "
        "read on as before"
    }


def test_a_second_proto_past_2_before_a_python_2_module_name_is_an_error(tmp_path):
    # At protocol 2 the pickler names a set's class __builtin__.set; CPython's unpickler
    # renames that only below protocol 3, torch's default reader always.
    source = tmp_path / "base.pt"
    torch.save({"logits": torch.tensor([1.0, 2.0]), "s": {1, 2}}, source)
    with zipfile.ZipFile(source) as archive:
        pkl = archive.read("base/data.pkl")
        storage = archive.read("base/data/0")
    assert b"c__builtin__\nset\n" in pkl
    data = pkl[:2] + b"\x80\x03" + pkl[2:]
    path = tmp_path / "edited.pt"
    with torch.serialization._open_zipfile_writer(str(path)) as out:
        out.write_record("data.pkl", data, len(data))
        out.write_record(".format_version", "1", 1)
        out.write_record(".storage_alignment", "64", 2)
        out.write_record("byteorder", "little", 6)
        out.write_record("data/0", storage, len(storage))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's default reader warns of the protocol
        assert torch.load(path, weights_only=True)["s"] == {1, 2}
    with pytest.raises(ModuleNotFoundError, match="__builtin__"):
        torch.load(path, weights_only=False)
    assert _found(path) == {
        "PP118": "error: not as torch.save writes it: data.pkl byte 2 (PROTO): a second PROTO "
        "(3), where the pickler writes one, first: a module named after it is one CPython's "
        "unpickler renames only below protocol 3 (torch.load(weights_only=False) now reads it "
        "unrenamed, the default reader renamed)"
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


def _loads_or_error(path: Path, weights_only: bool) -> str:
    """'read', or the first line of the error torch.load raises."""
    try:
        torch.load(path, weights_only=weights_only)
    except RuntimeError as exc:
        return str(exc).splitlines()[0]
    return "read"


def _big_saved(tmp_path: Path, first: object = None) -> Path:
    path = tmp_path / "big.pt"
    value = {"logits": torch.arange(3000, dtype=torch.float32)}
    torch.save(value if first is None else {"first": first, **value}, path)
    return path


def test_a_large_storages_wrong_crc_is_a_warning_torch_reads_past(tmp_path):
    # The storage is 12,000 bytes: its CRC is worked out from its data, a block at a time.
    path = _crc_replaced(_big_saved(tmp_path), "big/data/0", 0x12345678)
    assert (_loads(path, True), _loads(path, False)) == (True, True)  # torch checks no CRC
    assert _found(path) == {
        "PP118": "warning: not as torch.save writes it: record 'big/data/0': its CRC is not its "
        "data's"
    }


def test_max_crc_bytes_bounds_the_bytes_read_for_crcs(tmp_path):
    from ppaux.dump import read_dump
    from ppaux.limits import Limits

    path = _crc_replaced(_big_saved(tmp_path), "big/data/0", 0x12345678)
    assert read_dump(path, Limits(max_crc_bytes=12_000)).deviation is not None
    assert read_dump(path, Limits(max_crc_bytes=11_999)).deviation is None  # not read


def _storage_cut(tmp_path: Path, keep: int | None, first: object = None) -> Path:
    """The file torch.save wrote with its storage record cut to ``keep`` bytes (None: left
    out), rewritten by torch's own zip writer."""
    source = _big_saved(tmp_path, first)
    with zipfile.ZipFile(source) as archive:
        pkl = archive.read("big/data.pkl")
        storage = archive.read("big/data/0")
    path = tmp_path / "cut.pt"
    with torch.serialization._open_zipfile_writer(str(path)) as out:
        out.write_record("data.pkl", pkl, len(pkl))
        out.write_record(".format_version", "1", 1)
        out.write_record(".storage_alignment", "64", 2)
        out.write_record("byteorder", "little", 6)
        if keep is not None:
            out.write_record("data/0", storage[:keep], keep)
    return path


@pytest.mark.parametrize(
    ("keep", "state", "torch_says"),
    [
        (8, "8 bytes, 12000 declared", "record size does not match expected size"),
        (0, "0 bytes, 12000 declared", "record size does not match expected size"),
        (None, "missing", "file not found"),
    ],
    ids=["short", "empty", "missing"],
)
def test_a_short_or_missing_storage_record_is_torchs_refusal(tmp_path, keep, state, torch_says):
    path = _storage_cut(tmp_path, keep)
    for weights_only in (True, False):
        assert torch_says.split()[0] in _loads_or_error(path, weights_only)
    report = inspect_paths([str(path)])
    refusal = [(f.code, f.key, f.message) for f in report.findings if f.code != "PP118"]
    assert refusal == [
        (
            "PP117",
            "logits",
            f"torch.load refuses the file: storage record cut/data/0 is {state} "
            f"(torch: {torch_says})",
        )
    ]


def test_a_short_record_after_a_global_off_the_allowlist_keeps_the_security_finding(tmp_path):
    import collections

    # torch.load(weights_only=False) builds the Counter before it stops at the record.
    path = _storage_cut(tmp_path, 8, collections.Counter())
    assert "record size" in _loads_or_error(path, False)
    codes = [(f.code, f.key) for f in inspect_paths([str(path)]).findings if f.code != "PP118"]
    assert ("PP201", "first") in codes and ("PP113", "logits") in codes
    assert "PP117" not in {code for code, _ in codes}
