"""The one record reader: records found as torch finds them, streamed, every read error one line.

The archives are packed by hand (``fixtures/make_adversarial.py``'s helpers) so that headers can
lie; the expected bytes are the ones packed, never the reader's own output.
"""

from __future__ import annotations

import os
import struct
import sys
import zlib

import pytest
from helpers import REPO

from ppaux.dump.dumpfile import read_dump
from ppaux.dump.records import (
    DEFLATE_EXPANSION,
    ZIP_READ_ERRORS,
    RecordReader,
    torch_byteorder,
    torch_listed_names,
    torch_version,
)
from ppaux.errors import DumpError, ExecutableArchive, ReadMismatch, TorchRefuses

sys.path.insert(0, str(REPO / "fixtures"))

import make_adversarial as packing

DATA = os.urandom(1000) + bytes(200_000)


def _write(tmp_path, recs, name="a.pt"):
    path = tmp_path / name
    path.write_bytes(packing.zip_archive(recs).data)
    return str(path)


def test_zlib_error_is_one_of_the_read_errors():
    assert zlib.error in ZIP_READ_ERRORS


@pytest.mark.parametrize("method", [0, 8])
@pytest.mark.parametrize(("start", "end", "block"), [(0, 201_000, 1 << 20), (17, 150_001, 4096)])
def test_blocks_give_exactly_the_range(tmp_path, method, start, end, block):
    path = _write(tmp_path, [packing.Rec("archive/data/0", DATA, method=method)])
    with RecordReader.open(path, "archive") as reader:
        record = reader.find("data/0")
        chunks = list(reader.blocks(record, start, end, block))
    assert b"".join(chunks) == DATA[start:end]
    assert max(map(len, chunks)) <= block


def test_records_are_found_as_torch_finds_them(tmp_path):
    # miniz compares names without ASCII case; torch names storages under the first folder.
    path = _write(tmp_path, [packing.Rec("Arc/DATA/0", b"x" * 8)])
    with RecordReader.open(path, "Arc") as reader:
        assert reader.find("data/0") is not None
        assert reader.find_full("arc/data/0") is not None
        assert reader.find("data/1") is None


def test_corrupt_deflate_is_one_dump_error(tmp_path):
    bad = packing.Rec("archive/data/0", DATA, method=8, payload=b"\xff" * 64)
    path = _write(tmp_path, [bad])
    with RecordReader.open(path, "archive") as reader, pytest.raises(DumpError) as caught:
        b"".join(reader.blocks(reader.find("data/0"), 0, 100))
    assert "cannot read archive/data/0" in caught.value.reason
    assert "invalid" in caught.value.reason
    assert "\n" not in str(caught.value)


def test_short_deflate_stream_is_refused(tmp_path):
    short = packing.Rec("archive/data/0", DATA, method=8, payload=packing.deflate(DATA[:500]))
    path = _write(tmp_path, [short])
    with RecordReader.open(path, "archive") as reader, pytest.raises(DumpError) as caught:
        b"".join(reader.blocks(reader.find("data/0"), 0, len(DATA)))
    assert "inflates to 500 bytes" in caught.value.reason


def test_a_large_declared_compressed_size_buys_nothing(tmp_path):
    # The allowance for a deflated record is what its stored bytes can inflate to, and those
    # bytes must lie in the file: declaring 1 GiB of compressed data does not raise it.
    liar = packing.Rec("archive/data/0", DATA, method=8, central_sizes=(1 << 30, (1 << 32) - 1))
    path = _write(tmp_path, [liar])
    with RecordReader.open(path, "archive") as reader:
        record = reader.find("data/0")
        why = reader.allocation_ok(record, 1 << 31)
    assert why is not None and "past the file" in why
    honest = _write(tmp_path, [packing.Rec("archive/data/0", DATA, method=8)], "b.pt")
    with RecordReader.open(honest, "archive") as reader:
        record = reader.find("data/0")
        assert reader.allocation_ok(record, len(DATA)) is None
        too_much = DEFLATE_EXPANSION * record.compress_size + (2 << 20)
        assert reader.allocation_ok(record, too_much) is not None


def test_listed_names_are_cut_as_torch_cuts_them():
    import zipfile

    def info(name: bytes) -> zipfile.ZipInfo:
        record = zipfile.ZipInfo(name.decode("cp437"))
        return record

    folder = b"p" * 497 + b"/"
    records = [info(folder + b"data.pkl"), info(folder + b"constants.pkl" + b"z" * 40)]
    assert torch_listed_names(records, folder) == [b"data.pkl", b"constants.pkl"]


@pytest.mark.parametrize(
    ("text", "version", "refused"),
    [
        (b"3\n", 3, False),
        (b" +3", 3, False),
        (b"3abc", 3, False),
        (b"10", 10, False),
        (b"11", 11, True),
        (b"0x3", 0, True),
        (b"abc", None, True),
        (b"-1", -1, True),
        (b"18446744073709551617", None, True),
    ],
)
def test_version_records_read_as_stoull_reads_them(text, version, refused):
    # Expected values observed from torch 2.13's reader (see test_fuzz_torch_differential).
    got, why = torch_version(text)
    assert got == version
    assert (why is not None) == refused


@pytest.mark.parametrize(
    ("text", "order", "refused"),
    [(None, "little", False), (b"big", "big", False), (b"little\n", "little", True)],
)
def test_byteorder_as_torch_reads_it(text, order, refused):
    got, why = torch_byteorder(text)
    assert got == order and (why is not None) == refused


def _torch_zip(tmp_path, name, extra=(), replace=None):
    recs = [packing.Rec("archive/data.pkl", packing.benign_pickle())]
    recs += packing._storage_recs()
    if replace:
        recs = [replace.get(r.name, r) for r in recs]
    return _write(tmp_path, recs + list(extra), name)


def test_torchscript_spellings_are_executable_archives(tmp_path):
    spellings = [
        packing.Rec("archive/constants.pkl", b""),
        packing.Rec("archive/Constants.PKL", b""),
        packing.Rec("x", b"", raw_name=b"archive/constants.pkl\x00junk"),
    ]
    for n, rec in enumerate(spellings):
        with pytest.raises(ExecutableArchive) as caught:
            read_dump(_torch_zip(tmp_path, f"s{n}.pt", [rec]))
        assert caught.value.code == "PP203"
        assert "constants.pkl" in caught.value.reason


def test_records_torch_refuses(tmp_path):
    bad_version = {"archive/version": packing.Rec("archive/version", b"11")}
    with pytest.raises(TorchRefuses) as caught:
        read_dump(_torch_zip(tmp_path, "v.pt", replace=bad_version))
    assert "version is 11" in caught.value.reason and caught.value.code == "PP117"
    for n, text in enumerate([b"LITTLE", b"little\n"]):
        with pytest.raises(TorchRefuses, match="unknown byte order"):
            read_dump(_torch_zip(tmp_path, f"b{n}.pt", [packing.Rec("archive/byteorder", text)]))
    with pytest.raises(TorchRefuses, match="storage alignment"):
        read_dump(_torch_zip(tmp_path, "al.pt", [packing.Rec("archive/.storage_alignment", b"x")]))
    # .data/version is read before version, as torch's reader reads it.
    dotted = [packing.Rec("archive/.data/version", b"3\n")]
    no_version = {"archive/version": packing.Rec("archive/.format_version", b"1")}
    assert read_dump(_torch_zip(tmp_path, "dv.pt", dotted, replace=no_version)).container == "zip"
    with pytest.raises(TorchRefuses, match="no version record"):
        read_dump(_torch_zip(tmp_path, "nv.pt", replace=no_version))


def test_deflated_storages_are_checked_when_read(tmp_path):
    good = packing.Rec("archive/data/0", struct.pack("<2q", 1, 2), method=8)
    assert read_dump(_torch_zip(tmp_path, "g.pt", replace={"archive/data/0": good})).storages
    bad = packing.Rec("archive/data/0", struct.pack("<2q", 1, 2), method=8, payload=b"\xff" * 9)
    with pytest.raises(ReadMismatch, match="does not inflate"):
        read_dump(_torch_zip(tmp_path, "c.pt", replace={"archive/data/0": bad}))


@pytest.mark.torch
def test_replay_and_diff_read_through_the_same_errors(tmp_path):
    # A file that changes after it was read (the record now corrupt) still gives one line.
    import torch

    from ppaux.dump.digests import NotCompared as _NotCompared
    from ppaux.dump.digests import StorageRecords as _Records
    from ppaux.replay.materialize import MaterializeError, Materializer

    good = packing.Rec("archive/data/0", struct.pack("<2q", 1, 2), method=8)
    path = _torch_zip(tmp_path, "m.pt", replace={"archive/data/0": good})
    dump = read_dump(path)
    bad = packing.Rec("archive/data/0", struct.pack("<2q", 1, 2), method=8, payload=b"\xff" * 9)
    _torch_zip(tmp_path, "m.pt", replace={"archive/data/0": bad})
    with Materializer(dump, torch.device("cpu")) as build, pytest.raises(MaterializeError) as err:
        build.value(dump.root)
    assert "cannot read archive/data/0" in str(err.value) and "\n" not in str(err.value)
    records = _Records(dump)
    try:
        with pytest.raises(_NotCompared, match="cannot read archive/data/0"):
            records.digest(dump.storages[0], 0, 16)
    finally:
        records.close()


@pytest.mark.parametrize("method", [0, 8, 12, 14])
def test_wheel_members_are_read_under_a_cap_whatever_their_method(method):
    # bzip2 and LZMA members are decompressed with an output bound: 200 MiB declared as 100
    # bytes never reaches memory; a small member reads back exactly.
    import io
    import tracemalloc
    import zipfile

    from ppaux.sglang_source.tree import read_member_capped

    small = b"__version__ = '0.5.23'\n"
    archive = packing.zip_archive([packing.Rec("sglang/_version.py", small, method=method)])
    with zipfile.ZipFile(io.BytesIO(archive.data)) as wheel:
        assert read_member_capped(wheel, wheel.getinfo("sglang/_version.py"), 100) == small
    bomb = packing.Rec("sglang/_version.py", b"N" * (200 << 20), method=method, size=100)
    if method in (0, 8):  # zipfile's own reads are bounded: an honest 8 MiB member
        bomb = packing.Rec("sglang/_version.py", b"N" * (8 << 20), method=method)
    data = packing.zip_archive([bomb]).data
    tracemalloc.start()
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as wheel:
            out = read_member_capped(wheel, wheel.getinfo("sglang/_version.py"), 1 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(out) <= (1 << 20) + 1
    assert peak < len(data) + (48 << 20), peak


def test_an_lzma_member_with_a_huge_dictionary_is_refused():
    import io
    import zipfile

    from ppaux.sglang_source.tree import read_member_capped

    archive = packing.zip_archive([packing.Rec("sglang/_version.py", b"x", method=14)]).data
    # The LZMA properties sit after the 4-byte zip LZMA header: set a 4 GiB dictionary.
    at = archive.index(b"sglang/_version.py") + len("sglang/_version.py") + 4
    patched = archive[: at + 1] + struct.pack("<I", 0xFFFFFFFF) + archive[at + 5 :]
    with zipfile.ZipFile(io.BytesIO(patched)) as wheel, pytest.raises(ValueError, match="64 MiB"):
        read_member_capped(wheel, wheel.getinfo("sglang/_version.py"), 100)


@pytest.mark.parametrize("first", [0, 1, 93, 94, 135, 224, 225, 255])
def test_an_lzma_members_properties_are_read_as_the_lzma_module_reads_them(first):
    """The filter built from a zip member's 5 property bytes is lzma's own, and a first byte
    past the 225 that LZMA1 defines is refused."""
    import lzma

    from ppaux.sglang_source.tree import _lzma1

    props = bytes([first]) + struct.pack("<I", 1 << 20)
    try:
        expected = lzma._decode_filter_properties(lzma.FILTER_LZMA1, props)  # type: ignore[attr-defined]
    except lzma.LZMAError:
        expected = None
    if first >= 225:
        with pytest.raises(ValueError, match="bad LZMA properties"):
            _lzma1(props)
    elif expected is not None:
        assert _lzma1(props) == expected
    else:  # within 225, yet options lzma refuses (lc + lp past 4): the decompressor says so
        with pytest.raises(lzma.LZMAError):
            lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=[_lzma1(props)])


@pytest.mark.torch
def test_diff_compares_values_as_torch_holds_them_whatever_the_byte_order(tmp_path):
    # A big-endian file holds the same values as a little-endian one with its storages
    # swapped: torch swaps them back as it loads (byteorder record 'big'), so diff sees no
    # difference; the same bytes marked little-endian are other values.
    import io
    import zipfile

    import torch

    from ppaux.dump.diff import diff_paths

    value = {"a": torch.arange(5, dtype=torch.int32), "b": torch.tensor([1.5, -2.0 + 1j])}
    buffer = io.BytesIO()
    torch.save(value, buffer)
    with zipfile.ZipFile(buffer) as archive:
        records = [(info.filename, archive.read(info)) for info in archive.infolist()]

    def rewrite(name: str, swap: bool, order: bytes) -> str:
        recs = []
        for record, data in records:
            if record.endswith("/byteorder"):
                data = order
            elif "/data/" in record and swap:
                unit = 4  # int32 elements; complex64 halves
                data = b"".join(data[i : i + unit][::-1] for i in range(0, len(data), unit))
            recs.append(packing.Rec(record, data))
        return _write(tmp_path, recs, name)

    little = rewrite("little.pt", False, b"little")
    big = rewrite("big.pt", True, b"big")
    wrong = rewrite("wrong.pt", True, b"little")
    assert [f.code for f in diff_paths(little, big).findings] == []
    assert [f.code for f in diff_paths(little, wrong).findings] != []
