"""Files torch.load reads although torch.save never writes them, each made from torch.save's or
pickle.dump's own output with one edit: inspect reads what torch reads (checked against
torch.load or pickle.loads) and names the edit as PP118 at warning, not an error and not a
refusal. A storage key holding a NUL (torch looks the record up by C string, which ends at the
NUL), a ``.format_version`` record the central directory calls deflated (torch's reader reads on
with what its buffer holds; the values do not depend on it), a nested legacy stream whose
system info was changed (torch ignores it), and bytes in ``_codecs.encode``'s form in a pickle
of protocol 3 (which writes bytes as BINBYTES)."""

from __future__ import annotations

import io
import pickle
import struct
import zipfile
from pathlib import Path

import pytest
import torch

from ppaux.dump import inspect_paths
from ppaux.dump.dumpfile import read_dump
from ppaux.dump.storage_keys import ReadsAlike, storage_key_deviation

pytestmark = pytest.mark.torch


def _saved() -> bytes:
    buffer = io.BytesIO()
    torch.save({"a": torch.arange(2), "b": torch.tensor([0.5, 1.5])}, buffer)
    return buffer.getvalue()


def _findings(path: Path) -> dict[str, str]:
    report = inspect_paths([str(path)])
    assert not report.problems, report.problems
    return {f.code: f"{f.severity.value}: {f.message}" for f in report.findings}


def _rezipped(data: bytes, pkl: bytes) -> bytes:
    """``data`` with its data.pkl replaced, the records stored in their order."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            body = pkl if info.filename.endswith("/data.pkl") else source.read(info)
            target.writestr(info.filename, body)
    return out.getvalue()


def test_a_storage_key_holding_a_nul_reads_the_record_before_it(tmp_path: Path) -> None:
    data = _saved()
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        name = next(n for n in archive.namelist() if n.endswith("/data.pkl"))
        pkl = archive.read(name)
    key = b"X\x01\x00\x00\x000"  # BINUNICODE '0', the first storage's key
    assert pkl.count(key) == 1
    path = tmp_path / "nul.pt"
    path.write_bytes(_rezipped(data, pkl.replace(key, b"X\x02\x00\x00\x000\x00")))
    assert torch.load(path, weights_only=True)["a"].tolist() == [0, 1]
    found = _findings(path)  # the first difference is the rewritten zip's headers ...
    assert set(found) == {"PP118"} and found["PP118"].startswith("warning"), found
    dump = read_dump(str(path))
    first = dump.storages[0]
    assert (first.key, first.record, first.record_size) == (
        "0\x00",
        "archive/data/0",
        16,
    )
    # ... and the key's own, as the reader records it
    why = storage_key_deviation(("storage", None, "0\x00", "cpu", 2), 0)
    assert isinstance(why, ReadsAlike) and "NUL" in why and "data/0" in why


def test_a_format_version_the_directory_calls_deflated_is_read_on(tmp_path: Path) -> None:
    data = bytearray(_saved())
    at = data.index(b"PK\x01\x02")
    while not data[at + 46 :].startswith(b"archive/.format_version"):
        at = data.index(b"PK\x01\x02", at + 4)
    struct.pack_into("<H", data, at + 10, 8)  # the central directory's method: deflated
    path = tmp_path / "fv.pt"
    path.write_bytes(bytes(data))
    assert torch.load(path, weights_only=True)["b"].tolist() == [0.5, 1.5]
    found = _findings(path)
    assert set(found) == {"PP118"} and found["PP118"].startswith("warning"), found
    assert ".format_version" in found["PP118"]


def test_a_nested_stream_with_other_system_info_is_a_warning(tmp_path: Path) -> None:
    written = pickle.dumps({"a": torch.arange(3)}, protocol=2)
    assert written.count(b"little_endian") == 1
    edited = written.replace(b"little_endian", b"li4tle_endian")
    assert pickle.loads(edited)["a"].tolist() == [0, 1, 2]
    path = tmp_path / "sys.pkl"
    path.write_bytes(edited)
    found = _findings(path)
    assert found.get("PP118", "").startswith("warning"), found
    assert "system info" in found["PP118"]
    plain = tmp_path / "plain.pkl"
    plain.write_bytes(written)
    assert "PP118" not in _findings(plain)


def test_codecs_encode_in_a_protocol_3_pickle_is_a_warning(tmp_path: Path) -> None:
    written = pickle.dumps({"a": b"xy"}, protocol=2)
    assert written.startswith(b"\x80\x02") and b"_codecs" in written
    edited = b"\x80\x03" + written[2:]
    assert pickle.loads(edited) == {"a": b"xy"}
    path = tmp_path / "p3.pkl"
    path.write_bytes(edited)
    found = _findings(path)
    assert set(found) == {"PP118"} and found["PP118"].startswith("warning"), found
    assert "_codecs.encode" in found["PP118"]
