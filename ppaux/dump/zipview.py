"""A zip as torch.load sees it, and every place where Python's zipfile could see another one.

torch 2.13 reads a ``torch.save`` zip with PyTorchStreamReader (caffe2/serialize/
inline_container.cc) over miniz 3.0.2; ppaux reads it with Python's :mod:`zipfile`. The two agree
on a file torch.save wrote. Where a crafted file could make them disagree, ppaux refuses it with
:class:`~ppaux.errors.ReadMismatch` (finding PP202) instead of guessing:

- the end record is the last ``PK\\x05\\x06`` with 22 bytes after it, in the file's last
  64 KiB + 22 bytes (miniz scans back for it; zipfile takes the same one or fails);
- miniz finds the central directory at the end record's offset field (and the zip64 end record
  at the zip64 locator's offset field); zipfile finds it ``size`` bytes before the end record
  (and the zip64 end record right before the locator), allowing for data in front. Any
  difference is refused: it means data in front, or a second directory; a directory size
  miniz refuses (past 4 GiB or the file's end, too small for its entries) is torch's refusal
  (PP117);
- the entry count miniz walks is the end record's; zipfile walks the directory's bytes: they
  must agree;
- nothing may follow the end record and its comment;
- torch looks records up under the first record's folder, case-insensitively (ASCII) and refuses
  any record outside that folder: names equal but for case are refused, a ``data.pkl`` spelled
  in another case is refused, a name holding NUL (zipfile cuts the name there) is refused;
- records' local headers and data may not overlap each other or the directory;
- a record that torch reads as ``constants.pkl`` makes torch.load hand the file to
  torch.jit.load, which runs TorchScript code: refused as an executable archive (PP203), with
  the names read as torch's reader reads them (cut at NUL and after 511 bytes; any case, as
  torch.jit.load looks them up), before any other check.
"""

from __future__ import annotations

import itertools
import struct
import zipfile
from dataclasses import dataclass
from typing import Any, BinaryIO, NoReturn

from ppaux.dump.records import NAME_BUFFER, raw_name, torch_listed_names
from ppaux.dump.zipfile_view import directory_size_read_alike
from ppaux.errors import DumpError, ExecutableArchive, ReadMismatch, TorchRefuses
from ppaux.text import cut

__all__ = [
    "EndRecord",
    "check_layout",
    "check_miniz",
    "check_torchscript",
    "end_record",
    "lower_name",
    "select_data_pkl",
]

_END = struct.Struct("<4s4H2LH")
_END64_LOCATOR = struct.Struct("<4sLQL")
_END64 = struct.Struct("<4sQ2H2L4Q")
_LOCAL = struct.Struct("<4s5H3L2H")
_END_SIG, _LOCATOR_SIG, _END64_SIG = b"PK\x05\x06", b"PK\x06\x07", b"PK\x06\x06"


@dataclass(frozen=True)
class EndRecord:
    """The central directory as miniz finds it: where it starts (``offset``), its ``size`` and
    ``entries``; ``location`` is where the end record (or the zip64 end record) starts,
    ``end`` where the end record and its comment end."""

    offset: int
    size: int
    entries: int
    location: int
    end: int
    #: The classic end record's disk fields: this disk's number, the directory's disk, and the
    #: entries on this disk (miniz refuses a multidisk archive by them).
    disks: tuple[int, int, int] = (0, 0, 0)


def _tail(handle: BinaryIO, size: int) -> tuple[int, bytes]:
    start = max(0, size - (_END.size + (1 << 16)))  # zipfile's window, a byte wider
    handle.seek(start)
    return start, handle.read(size - start)


def end_record(path: str, handle: BinaryIO, size: int) -> EndRecord | None:
    """The end record as miniz reads it; None when the file has none; ReadMismatch where
    zipfile would take another directory than miniz."""
    base, tail = _tail(handle, size)
    # miniz: the last signature with a whole record after it.
    at = tail.rfind(_END_SIG, 0, max(0, len(tail) - _END.size + 4))
    if at < 0:
        return None
    # zipfile: the last 22 bytes if they are an end record without comment, else the last
    # signature, which must have a whole record after it.
    if tail[-_END.size :][:4] == _END_SIG and tail[-2:] == b"\x00\x00":
        python_at = len(tail) - _END.size
    else:
        python_at = tail.rfind(_END_SIG)
    if python_at != at:
        raise DumpError(
            path, "truncated or corrupt zip file (a cut end record after the last whole one)"
        )
    (_, disk, cd_disk, here, entries, cd_size, cd_offset, comment) = _END.unpack_from(tail, at)
    location = base + at
    end = location + _END.size + comment
    # A comment length past the file's end: both readers take the bytes there are (zipfile
    # cuts the comment, miniz reads no comment) and the same directory; the writer's model
    # reports the field (PP118). Bytes past the comment are data after the archive.
    if end < size:
        raise ReadMismatch(
            path,
            f"{size - location - _END.size} bytes follow the zip's end "
            f"record where its comment length says {comment}: data after the "
            "archive",
        )
    zipfile_start = location - cd_size
    locator_at = location - _END64_LOCATOR.size
    if locator_at >= 0:
        handle.seek(locator_at)
        locator = handle.read(_END64_LOCATOR.size)
        if locator[:4] == _LOCATOR_SIG:
            _, _disk, end64_at, total_disks = _END64_LOCATOR.unpack(locator)
            python_at = locator_at - _END64.size
            if end64_at != python_at:
                raise ReadMismatch(
                    path,
                    f"the zip64 locator puts the zip64 end record at byte "
                    f"{end64_at}, but it sits at byte {python_at} (where "
                    "zipfile reads it): two readers would take two directories",
                )
            handle.seek(python_at)
            record = handle.read(_END64.size)
            if python_at < 0 or len(record) != _END64.size or record[:4] != _END64_SIG:
                raise ReadMismatch(
                    path,
                    "the zip64 locator points at no zip64 end record "
                    "(zipfile ignores it, torch's reader does not)",
                )
            fields = _END64.unpack(record)
            _check_end64(path, fields[1], total_disks)
            entries, cd_size, cd_offset = fields[7], fields[8], fields[9]
            # miniz then takes the disk numbers and this disk's count from the zip64 record
            # too: the classic record may say 0xFFFF for every count.
            disk, cd_disk, here = fields[4], fields[5], fields[6]
            location = python_at
            zipfile_start = python_at - cd_size
            if directory_size_read_alike(cd_offset, cd_size, python_at, size):
                # zipfile is shown the directory's own size (zipfile_view): both read it here.
                zipfile_start, cd_size = cd_offset, python_at - cd_offset
    if zipfile_start != cd_offset:
        _check_directory_size(path, handle, (cd_offset, cd_size, entries), size)
        raise ReadMismatch(
            path,
            f"the end record puts the zip's central directory at byte "
            f"{cd_offset} (where torch reads it), its size at byte "
            f"{zipfile_start} (where zipfile reads it): data in front of the "
            "archive, or a second directory",
        )
    return EndRecord(cd_offset, cd_size, entries, location, min(end, size), (disk, cd_disk, here))


def _check_end64(path: str, record_size: int, total_disks: int) -> None:
    """Refuse (PP117) a zip64 end record miniz 3.0.2 refuses (``mz_zip_reader_read_central_dir``):
    a record size field under 44 (the record's 56 bytes less the 12 before that field's end),
    or a locator whose count of disks is not 1. zipfile checks neither (it refuses more than
    one disk, not none)."""
    if record_size < _END64.size - 12:
        _refuse(
            path,
            f"a zip64 end record whose size field says {record_size}, under 44 "
            "(invalid header or archive is corrupted)",
        )
    if total_disks != 1:
        _refuse(
            path,
            f"a zip64 locator counting {total_disks} disks, not 1 (unsupported multidisk archive)",
        )


_ENTRY = 46  # a central directory entry's fixed part


def _check_directory_size(
    path: str, handle: BinaryIO, directory: tuple[int, int, int], size: int
) -> None:
    """Refuse (PP117) a central directory size miniz 3.0.2 refuses
    (``mz_zip_reader_read_central_dir``): more than 2**32 - 1 entries, past 4 GiB, under 46
    bytes an entry, running past the file's end, or too small for the entries it walks, each of
    which must fit in what is left of the size. ``directory`` is (offset, size, entries) as
    miniz reads them."""
    offset, cd_size, entries = directory
    where = f"a central directory of {cd_size} bytes at byte {offset}"
    if entries > _MAX32:  # miniz's count limit, checked before the size's
        _refuse(path, f"{where}, counting {entries} records (too many files)")
    if cd_size > _MAX32:
        _refuse(path, f"{where} (unsupported central directory size)")
    corrupt = "(invalid header or archive is corrupted)"
    if cd_size < entries * _ENTRY:
        _refuse(path, f"{where}, under {_ENTRY} bytes for each of its {entries} entries {corrupt}")
    if offset + cd_size > size:
        _refuse(path, f"{where}, past the file's end at byte {size} {corrupt}")
    left, at = cd_size, offset
    for _ in range(entries):
        handle.seek(at)
        head = handle.read(_ENTRY)
        if len(head) < _ENTRY or head[:4] != b"PK\x01\x02":
            _refuse(path, f"{where}, not an entry where it walks one {corrupt}")
        name, extra, comment = struct.unpack_from("<3H", head, 28)
        whole = _ENTRY + name + extra + comment
        if left < _ENTRY or whole > left:
            _refuse(path, f"{where}, too small for its entries {corrupt}")
        left, at = left - whole, at + whole


def lower_name(name: str) -> str:
    """``name`` with ASCII letters lowered, as miniz compares record names (MZ_TOLOWER)."""
    return name.translate(_ASCII_LOWER)


_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def check_layout(
    path: str, handle: BinaryIO, end: EndRecord, records: list[zipfile.ZipInfo]
) -> str:
    """Refuse an archive whose records torch would list, name or place differently from
    zipfile; return the folder torch reads every record from (the first record's)."""
    if len(records) != end.entries:
        raise ReadMismatch(
            path,
            f"the zip's end record counts {end.entries} records, its "
            f"directory holds {len(records)}: torch's reader walks the count, "
            "zipfile the bytes",
        )
    if not records:
        raise DumpError(path, "zip file without a data.pkl record: not a torch.save file")
    first = records[0].filename
    if "/" not in first:
        raise DumpError(
            path,
            f"zip file whose first record {cut(first)} is in no folder; "
            "torch.load reads only records in one folder",
        )
    prefix = first[: first.index("/") + 1]
    check_torchscript(path, records)
    check_miniz(path, end, records)
    seen: dict[str, str] = {}
    for record in records:
        name = record.filename
        if "\x00" in record.orig_filename:  # zipfile cut the name there; torch's reader did not
            raise ReadMismatch(
                path,
                f"record name {cut(record.orig_filename)} holds a NUL "
                "byte: zipfile reads the name up to it, torch's reader whole",
            )
        if not name.startswith(prefix):
            raise DumpError(
                path,
                f"record {cut(name)} is outside the folder "
                f"{cut(prefix)} of the first record; torch.load refuses the file",
            )
        lowered = lower_name(name)
        if lowered in seen:
            raise ReadMismatch(
                path,
                f"records {cut(seen[lowered])} and {cut(name)} have "
                "the same name as torch's reader compares names (ignoring case): "
                "it takes either one",
            )
        seen[lowered] = name
    _check_overlaps(path, handle, end, records)
    return prefix[:-1]


_MAX32 = 0xFFFFFFFF


def check_miniz(path: str, end: EndRecord, records: list[zipfile.ZipInfo]) -> None:
    """Refuse (:class:`TorchRefuses`, PP117) an archive that torch's reader (miniz 3.0.2's
    ``mz_zip_reader_read_central_dir``, then ``getAllRecords``) refuses while zipfile reads
    it: a multidisk archive (disk fields other than all 0 or all 1, fewer entries on this disk
    than in all), a directory entry on another disk, a stored record whose sizes disagree or a
    record with content but no stored bytes, a record that runs past the end of the archive,
    a masked local directory, or a record name that, cut to 511 bytes, falls outside the first
    record's folder."""
    disk, cd_disk, here = end.disks
    if (disk | cd_disk) and (disk, cd_disk) != (1, 1):
        _refuse(path, f"a multidisk archive (disk {disk}, directory on disk {cd_disk})")
    if end.entries <= 0xFFFF and here != end.entries:
        _refuse(path, f"a multidisk archive ({here} of {end.entries} records on this disk)")
    for record in records:
        name = cut(record.filename)
        if record.volume == 0xFFFF or record.volume not in (disk, 1):
            _refuse(path, f"record {name} starts on disk {record.volume} (a multidisk archive)")
        if record.flag_bits & 0x2000:
            _refuse(path, f"record {name} has a masked local header (encrypted directory)")
        if record.compress_size < _MAX32 and record.file_size < _MAX32:
            if record.compress_type == zipfile.ZIP_STORED and (
                record.compress_size != record.file_size
            ):
                _refuse(
                    path,
                    f"stored record {name} declares {record.file_size} bytes but holds "
                    f"{record.compress_size} (corrupt header)",
                )
            if record.file_size and not record.compress_size:
                _refuse(path, f"record {name} declares content but stores no bytes")
        if record.header_offset + 30 + record.compress_size > end.end:
            _refuse(path, f"record {name} runs past the end of the archive")
    folder = raw_name(records[0]).split(b"/", 1)[0] + b"/"
    listed = torch_listed_names(records, folder)
    if listed is None:
        outside = next(r for r in records if torch_listed_names([r], folder) is None).orig_filename
        _refuse(
            path,
            f"record {cut(outside)} outside the folder "
            f"{cut(folder.decode('utf-8', 'replace'))} of the first record, as it lists "
            "names (cut to 511 bytes): file in archive is not in a subdirectory",
        )
    for name_bytes in listed:
        try:
            name_bytes.decode("utf-8")
        except UnicodeDecodeError:
            _refuse(
                path,
                f"a record name that is not UTF-8 as torch lists it "
                f"({cut(name_bytes.decode('latin-1'))}; torch.load fails decoding it)",
            )


def _refuse(path: str, why: str) -> NoReturn:
    raise TorchRefuses(path, f"torch.load refuses the file: its zip reader finds {why}")


_CONSTANTS = b"constants.pkl"


def check_torchscript(path: str, records: list[zipfile.ZipInfo]) -> None:
    """Refuse (:class:`ExecutableArchive`, PP203) an archive that torch would run as
    TorchScript: one whose record list, as ``get_all_records()`` gives it to ``torch.load``
    (names cut at NUL and after 511 bytes, folder stripped), holds ``constants.pkl``, or one
    holding a record that ``torch.jit.load`` finds as ``constants.pkl`` (ignoring case)."""
    if not records:
        return
    first = raw_name(records[0])
    if b"/" not in first:
        return
    prefix = first[: first.index(b"/") + 1]
    for record in records:
        whole = raw_name(record)
        listed = whole.split(b"\x00", 1)[0][: NAME_BUFFER - 1]
        if not listed.startswith(prefix):
            continue
        rest = listed[len(prefix) :]
        how = None
        if rest == _CONSTANTS:
            how = "torch.load dispatches it to torch.jit.load"
            if listed != whole:
                how += " (torch's reader sees the name cut short)"
        elif rest.translate(_LOWER_BYTES) == _CONSTANTS:
            how = "torch.jit.load finds it as constants.pkl, ignoring case"
        if how is not None:
            raise ExecutableArchive(
                path,
                f"a TorchScript archive: record {cut(record.orig_filename)} reads as "
                f"constants.pkl ({how}), and torch.jit.load runs the archive's code",
            )


_LOWER_BYTES = bytes(c + 32 if 65 <= c <= 90 else c for c in range(256))


def select_data_pkl(path: str, prefix: str, records: list[zipfile.ZipInfo]) -> zipfile.ZipInfo:
    """The record torch reads as ``data.pkl``: ``<prefix>/data.pkl``, matched as miniz matches."""
    wanted = f"{prefix}/data.pkl"
    found = [r for r in records if lower_name(r.filename) == lower_name(wanted)]
    if not found:
        raise DumpError(path, "zip file without a data.pkl record: not a torch.save file")
    record = found[0]  # check_layout refused names equal but for case
    if record.filename != wanted:
        raise ReadMismatch(
            path,
            f"the pickle record is named {cut(record.filename)}: torch "
            "reads it as data.pkl (names match case-insensitively there), "
            "other readers do not",
        )
    return record


def _check_overlaps(
    path: str, handle: BinaryIO, end: EndRecord, records: list[zipfile.ZipInfo]
) -> None:
    spans: list[tuple[int, int, str]] = []
    for record in records:
        try:
            handle.seek(record.header_offset)
            header = handle.read(_LOCAL.size)
        except (OSError, OverflowError, ValueError) as exc:
            raise DumpError(path, f"cannot read {cut(record.filename)} ({exc})") from None
        if len(header) != _LOCAL.size or header[:4] != b"PK\x03\x04":
            raise DumpError(path, f"cannot read {cut(record.filename)} (bad local header)")
        fields: Any = _LOCAL.unpack(header)
        start = record.header_offset
        stop = start + _LOCAL.size + fields[9] + fields[10] + record.compress_size
        spans.append((start, stop, record.filename))
    spans.sort()
    for (_, stop, name), (start, _, other) in itertools.pairwise(spans):
        if start < stop:
            raise ReadMismatch(
                path,
                f"records {cut(name)} and {cut(other)} overlap in "
                "the file: one's bytes are read as part of the other",
            )
    if spans and spans[-1][1] > end.offset:
        raise DumpError(
            path,
            f"truncated or corrupt zip file (record "
            f"{cut(spans[-1][2])} runs into the central directory)",
        )
