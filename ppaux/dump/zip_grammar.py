"""What ``torch.save`` writes around its pickle, the zip archive, as data, and the first place
a file leaves it.

``torch.save`` (torch/serialization.py ``_save``, torch 2.13.0 and 2.14.1) writes the records
``data.pkl``, ``.format_version`` ('1'), ``.storage_alignment`` ('64', or the alignment a user
set), ``byteorder`` ('little' or 'big'; under its private keyword
``_disable_byteorder_record=True`` the stream writer adds it after ``version``), ``data/<key>``
in that order (the records of older releases, as data, are in
:mod:`ppaux.dump.release_layouts`), and PyTorchStreamWriter
(caffe2/serialize/inline_container.cc, over miniz) ends with ``version`` ('3\\n') and
``.data/serialization_id`` (two unsigned 64-bit numbers, each written as 20 decimal
digits, zero-padded: 40 digits). Every record is stored (method 0), flags 0x0808
(data descriptor, UTF-8 name), DOS time and date 0, its data aligned to that many bytes by an
``FB`` extra field of ``Z`` padding, followed by a 16-byte data descriptor (its CRC is the
data's, or 0 in every record after ``torch.serialization.set_crc32_options(False)``; under
``torch.serialization.skip_data()`` each storage record holds zeros and its CRC is 0,
``PyTorchStreamWriter::writeRecord`` given no data, and torch.load reads those zeros); the central
directory's entries carry no extra field or comment; a zip64 end record (made by 0x031E,
needed 45), its locator and the end record (no comment) close the file.

Past 4 GiB miniz (``mz_zip_writer_add_mem_ex_v2``, ``mz_zip_writer_create_zip64_extra_data``)
adds a zip64 field (tag 1) to a record whose size, or whose local header's offset, is
0xFFFFFFFF or more: in the local header, before the ``FB`` padding, the size and a compressed
size of 0 (where the size is that large) then the offset (where it is); in the central
directory the size twice and the offset, each 32-bit field it replaces set to 0xFFFFFFFF. Such
a record's data descriptor holds 64-bit sizes (24 bytes), and the end record's directory size
and offset are 0xFFFFFFFF where they do not fit.

:func:`zip_deviation` returns the first :class:`~ppaux.dump.grammar.Deviation`, or None when
the archive is as written.
"""

from __future__ import annotations

import re
import struct
import zipfile
import zlib
from typing import BinaryIO

from ppaux.dump.grammar import Deviation
from ppaux.dump.release_layouts import LAYOUTS, layout_names
from ppaux.text import cut

__all__ = ["ALIGNMENT", "expected_names", "zip_deviation"]


_LOCAL = struct.Struct("<4s5H3L2H")
_CENTRAL = struct.Struct("<4s6H3L5H2L")
_DESCRIPTOR = struct.Struct("<4s3L")
_DESCRIPTOR64 = struct.Struct("<4sL2Q")
_END64 = struct.Struct("<4sQ2H2L4Q")
_LOCATOR = struct.Struct("<4sLQL")
_END = struct.Struct("<4s4H2LH")
#: PyTorchStreamWriter's alignment of record data (kFieldAlignment, the .storage_alignment).
ALIGNMENT = 64
_FLAGS = 0x0808
_MADE_BY, _NEEDED = 0x031E, 45
_SMALL = 0xFFFFFFFF


def _flags(size: int) -> int:
    """miniz writes an empty record whole, without a data descriptor."""
    return _FLAGS if size else 0x0800


def _zip64(size: int, offset: int, local: bool) -> bytes:
    """miniz's zip64 field for a record of ``size`` bytes whose local header is at
    ``offset``: empty where both fit in 32 bits; the local header's holds 0 as the compressed
    size (miniz writes it before the data)."""
    fields = struct.pack("<2Q", size, 0 if local else size) if size >= _SMALL else b""
    if offset >= _SMALL:
        fields += struct.pack("<Q", offset)
    return struct.pack("<2H", 1, len(fields)) + fields if fields else b""


def _local_header(offset: int, name: bytes, size: int, alignment: int = ALIGNMENT) -> bytes:
    zip64 = _zip64(size, offset, True)
    start = offset + _LOCAL.size + len(name) + len(zip64) + 4
    pad = -start % alignment
    extra = zip64 + b"FB" + struct.pack("<H", pad) + b"Z" * pad
    return _LOCAL.pack(b"PK\x03\x04", 0, _flags(size), 0, 0, 0, 0, 0, 0, len(name), len(extra)) + (
        name + extra
    )


def _alignment(handle: BinaryIO, record: zipfile.ZipInfo) -> int:
    """The alignment the ``.storage_alignment`` record says the writer used (its data found
    from its own local header); :data:`ALIGNMENT` where it holds no number (the record's
    content is then a deviation of its own)."""
    handle.seek(record.header_offset)
    fields = handle.read(_LOCAL.size)
    if len(fields) < _LOCAL.size or record.file_size > 7:
        return ALIGNMENT
    name_size, extra_size = _LOCAL.unpack(fields)[-2:]
    handle.seek(record.header_offset + _LOCAL.size + name_size + extra_size)
    body = handle.read(record.file_size)
    found = re.fullmatch(rb"[1-9][0-9]{0,6}", body)
    return ALIGNMENT if found is None else int(body)


def _common(names: list[str], wanted: list[str]) -> int:
    """How many of ``names`` lead as in ``wanted``."""
    return next(
        (i for i, (a, b) in enumerate(zip(names, wanted, strict=False)) if a != b),
        min(len(names), len(wanted)),
    )


def expected_names(prefix: str, names: list[str], keys: list[str]) -> list[str]:
    """The record names one torch release writes for storages ``keys`` (in order of first
    use): those of the release whose layout ``names`` is, or else those of the release whose
    layout ``names`` follows longest (the newest of equals)."""
    candidates = [
        layout_names(layout, prefix, keys, last)
        for layout in LAYOUTS
        for last in ((False, True) if layout.byteorder else (False,))
    ]
    if names in candidates:
        return names
    return max(candidates, key=lambda wanted: _common(names, wanted))


_CONTENT = {
    ".format_version": re.compile(rb"1"),
    # torch.utils.serialization.config.save.storage_alignment, 64 unless a user set another
    ".storage_alignment": re.compile(rb"[1-9][0-9]{0,6}"),
    "byteorder": re.compile(rb"little|big"),
    "version": re.compile(rb"3\n"),
    ".data/serialization_id": re.compile(rb"[0-9]{1,64}"),
}


def _serialization_id(body: bytes) -> bool:
    """Whether ``body`` is the id PyTorchStreamWriter writes: two unsigned 64-bit numbers,
    each zero-padded to 20 decimal digits (as torch 2.13 writes it; 40 digits in all)."""
    return len(body) == 40 and all(int(body[i : i + 20]) < 2**64 for i in (0, 20))


#: Bytes of a record's data read at a time to check its CRC.
_CRC_BLOCK = 1 << 20


def _streamed_crc(handle: BinaryIO, start: int, size: int) -> int | None:
    """The CRC-32 of ``size`` bytes from ``start``, read a block at a time; None where the
    file ends first (the record's bounds are checked elsewhere)."""
    handle.seek(start)
    crc = 0
    while size > 0:
        block = handle.read(min(size, _CRC_BLOCK))
        if not block:
            return None
        crc = zlib.crc32(block, crc)
        size -= len(block)
    return crc


def _zeros(handle: BinaryIO, start: int, size: int) -> bool:
    """Whether the ``size`` bytes from ``start`` are all zero, read a block at a time."""
    handle.seek(start)
    while size > 0:
        block = handle.read(min(size, _CRC_BLOCK))
        if not block or block.count(0) != len(block):
            return False
        size -= len(block)
    return True


def _crc_deviation(record: zipfile.ZipInfo, crc: int | None, crcs_kept: bool) -> str | None:
    """What is wrong with a record's CRC field where torch.save writes each record's CRC, or 0
    in all of them; None where it is as written. ``crc`` is the CRC of the record's data, or
    None where it was not worked out (past ``max_crc_bytes``). torch.load checks no CRC (its
    zip reader is built without the check), so it reads the same bytes either way."""
    if not crcs_kept:
        return None
    if crc is not None:
        if crc != record.CRC:
            return "its CRC is not its data's"
    elif record.CRC == 0:
        return "its CRC is 0 where the other records hold their data's"
    return None


def _descriptor(record: zipfile.ZipInfo) -> bytes:
    """The data descriptor miniz writes after a record's data: none for an empty record,
    64-bit sizes where the record has a zip64 field."""
    size = record.file_size
    if not size:
        return b""
    if _zip64(size, record.header_offset, True):
        return _DESCRIPTOR64.pack(b"PK\x07\x08", record.CRC, size, size)
    return _DESCRIPTOR.pack(b"PK\x07\x08", record.CRC, size, size)


def _central_entry(record: zipfile.ZipInfo) -> bytes:
    """A record's central directory entry as miniz writes it."""
    name = record.filename.encode("utf-8")
    size, offset = record.file_size, record.header_offset
    zip64 = _zip64(size, offset, False)
    fields = (0, 0, _flags(size), 0, 0, 0, record.CRC, min(size, _SMALL), min(size, _SMALL))
    rest = (len(name), len(zip64), 0, 0, 0, 0, min(offset, _SMALL))
    return _CENTRAL.pack(b"PK\x01\x02", *fields, *rest) + name + zip64


def zip_deviation(
    handle: BinaryIO,
    size: int,
    records: list[zipfile.ZipInfo],
    prefix: str,
    keys: list[str],
    pickle_crc: int | None = None,
    crc_bytes: int = 0,
    unchecked: list[int] | None = None,
) -> Deviation | None:
    """The first byte, record or field of the archive that differs from what torch.save
    writes for a data.pkl and storages ``keys`` (in order of first use), or None. Reads the
    headers and the small records whole, and checks each other record's CRC against its data
    read a block at a time, up to ``crc_bytes`` bytes in all (``Limits.max_crc_bytes``): a
    record past them keeps its CRC unchecked, its size appended to ``unchecked``.

    Long on purpose: it walks the archive once, front to back (local headers, data, data
    descriptors, the central directory, the end records), comparing each field with what the
    writer puts there; the first difference ends the walk, in file order."""
    names = [r.filename for r in records]
    wanted = expected_names(prefix, names, keys)
    if names != wanted:
        for index, (have, want) in enumerate(
            zip(names + [""] * len(wanted), wanted + [""] * len(names), strict=False)
        ):
            if have != want:
                where = f"record {index} ({cut(have)!r})" if have else f"record {index}"
                what = (
                    f"torch.save writes {cut(want)!r} here" if want else "torch.save writes no more"
                )
                return Deviation(where, what, False)
    alignment = next(
        (_alignment(handle, r) for r in records if r.filename == f"{prefix}.storage_alignment"),
        ALIGNMENT,
    )
    # torch.save writes every record's CRC, or 0 in every one (set_crc32_options(False)).
    crcs_kept = any(r.CRC for r in records)
    storages = [r for r in records if r.filename.startswith(f"{prefix}data/") and r.file_size]
    skipped = crcs_kept and bool(storages) and not any(r.CRC for r in storages)
    cursor = 0
    for record in records:
        name = record.filename.encode("utf-8")
        where = f"record {record.filename!r}"
        if record.header_offset != cursor:
            return Deviation(
                where,
                f"starts at byte {record.header_offset}, torch.save writes it at {cursor}",
                False,
            )
        if record.compress_type != zipfile.ZIP_STORED:
            return Deviation(where, "compressed; torch.save stores every record", False)
        header = _local_header(cursor, name, record.file_size, alignment)
        handle.seek(cursor)
        found = handle.read(len(header))
        if found != header:
            byte = next(
                (i for i, (a, b) in enumerate(zip(found, header, strict=False)) if a != b),
                len(found),
            )
            return Deviation(
                f"{where}, local header byte {byte} (file byte {cursor + byte})",
                "not as torch.save writes the header",
                False,
            )
        cursor += len(header)
        short = record.file_size <= 64
        handle.seek(cursor)
        body = handle.read(record.file_size) if short else b""
        base = record.filename[len(prefix) :]
        pattern = _CONTENT.get(base)
        if pattern is not None and pattern.fullmatch(body) is None:
            return Deviation(where, f"holds {body[:64]!r}, not what torch.save writes", True)
        if base == ".data/serialization_id" and not _serialization_id(body):
            # Decimal digits torch reads as it reads any id: only its shape is not the writer's.
            what = (
                f"holds {body[:64]!r}, not the 40 digits (two 20-digit numbers) torch.save writes"
            )
            return Deviation(where, what, False)
        if pickle_crc is not None and base == "data.pkl" and pickle_crc != record.CRC:
            if record.CRC != 0 or any(r.CRC for r in records):
                return Deviation(where, "its CRC is not its data's", True)
        crc: int | None = None
        if skipped and record in storages:
            # torch.save under skip_data() writes zeros with a CRC of 0, whatever the size:
            # a storage past crc_bytes keeps its zeros unchecked, as any record its CRC.
            zeros = body.count(0) == len(body) if short else None
            if zeros is None and record.file_size <= crc_bytes:
                crc_bytes -= record.file_size
                zeros = _zeros(handle, cursor, record.file_size)
            elif zeros is None and unchecked is not None:
                unchecked.append(record.file_size)
            if zeros is False:
                what = "its CRC is 0, as torch.save writes under skip_data(), but it holds data"
                return Deviation(where, what, False)
            crc = 0
        elif short:
            crc = zlib.crc32(body)
        elif base == "data.pkl" and pickle_crc is not None:
            crc = pickle_crc
        elif crcs_kept and record.CRC and record.file_size <= crc_bytes:
            crc_bytes -= record.file_size
            crc = _streamed_crc(handle, cursor, record.file_size)
        elif crcs_kept and unchecked is not None:
            unchecked.append(record.file_size)
        found_crc = _crc_deviation(record, crc, crcs_kept)
        if found_crc is not None:
            return Deviation(where, found_crc, False)
        cursor += record.file_size
        descriptor = _descriptor(record)
        handle.seek(cursor)
        if handle.read(len(descriptor)) != descriptor:
            return Deviation(
                f"{where}, data descriptor at byte {cursor}", "not as torch.save writes it", False
            )
        cursor += len(descriptor)
    directory = cursor
    central = b"".join(_central_entry(r) for r in records)
    n = len(records)
    tail = (
        central
        + _END64.pack(b"PK\x06\x06", 44, _MADE_BY, _NEEDED, 0, 0, n, n, len(central), directory)
        + _LOCATOR.pack(b"PK\x06\x07", 0, directory + len(central), 1)
        + _END.pack(
            b"PK\x05\x06",
            0,
            0,
            min(n, 0xFFFF),
            min(n, 0xFFFF),
            min(len(central), _SMALL),
            min(directory, _SMALL),
            0,
        )
    )
    handle.seek(directory)
    found = handle.read(len(tail) + 1)
    if found != tail:
        byte = next(
            (i for i, (a, b) in enumerate(zip(found, tail, strict=False)) if a != b),
            min(len(found), len(tail)),
        )
        part = "central directory" if byte < len(central) else "end records"
        return Deviation(
            f"{part}, file byte {directory + byte}", "not as torch.save writes it", False
        )
    return None
