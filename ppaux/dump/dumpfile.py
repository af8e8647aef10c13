"""Open a dump (a ``torch.save`` zip, a plain pickle, or a ppaux capture) without torch.

:func:`read_dump` reads only the pickled structure: the zip's central directory and its
``data.pkl`` record, never a tensor's bytes. The pickle runs on :mod:`ppaux.dump.pickle_vm` with the
allowlist of :mod:`ppaux.dump.allowlist`, so nothing in the file is imported or called. Files are
opened read-only and never changed.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from ppaux.dump import allowlist
from ppaux.dump.capture_format import CAPTURE_MARKER
from ppaux.dump.grammar import Deviation, pickle_deviation, storage_key_deviation
from ppaux.dump.legacy import LEGACY_MAGIC, is_legacy_stream
from ppaux.dump.model import StorageRef, StorageType
from ppaux.dump.pickle_vm import Machine
from ppaux.dump.records import ZIP_READ_ERRORS, RecordReader
from ppaux.dump.torch_reading import (
    check_deflated_storages,
    dropped_bad_view,
    restorable,
    torch_refusal,
    weights_only_refusal,
)
from ppaux.dump.zip_grammar import zip_deviation
from ppaux.dump.zipview import check_layout, end_record, lower_name, select_data_pkl
from ppaux.errors import DumpError, LimitExceeded, ReadMismatch, TorchRefuses
from ppaux.files import InputFileError, collect_files, open_regular
from ppaux.limits import Limits
from ppaux.report import InputProblem
from ppaux.text import shown

__all__ = [
    "DUMP_SUFFIXES",
    "Dump",
    "collect_dumps",
    "collect_inputs",
    "read_dump",
    "read_dump_bytes",
    "read_dump_stream",
]

#: File name endings that a directory walk treats as dumps.
DUMP_SUFFIXES = (".pt", ".pth", ".pkl", ".pickle", ".bin", ".ppaux")


def collect_dumps(
    paths: Iterable[str], limits: Limits = Limits()
) -> tuple[list[str], list[InputProblem]]:
    """Expand directories (recursively, links not followed) into dump files, in sorted order;
    an empty directory, or more than ``limits.max_files`` dumps, is an input problem."""
    files, problems = collect_files(paths, DUMP_SUFFIXES, limits.max_files, "dumps")
    return files, [InputProblem.of(problem) for problem in problems]


def collect_inputs(
    paths: Iterable[str], limits: Limits, streams: Mapping[str, BinaryIO]
) -> tuple[list[str], list[InputProblem]]:
    """:func:`collect_dumps`, except that a name in ``streams`` (such as ``'<stdin>'``) stays
    where it stands, to be read from its stream."""
    if not streams:
        return collect_dumps(paths, limits)
    files: list[str] = []
    problems: list[InputProblem] = []
    for path in paths:
        found, missed = ([path], []) if path in streams else collect_dumps([path], limits)
        files += found
        problems += missed
    return files, problems


_ZIP_MAGIC = b"PK\x03\x04"
_EMPTY_ZIP_MAGIC = b"PK\x05\x06"


@dataclass
class Dump:
    """The structure of one file, as stand-ins (see :mod:`ppaux.dump.model`).

    ``container`` is 'zip' or 'pickle'; ``record_prefix`` is the zip's record folder (the saved
    file's stem, or 'archive'); ``globals_seen`` maps each global the pickle named to whether it is
    allowlisted; ``storages`` lists every storage record the pickle refers to.
    """

    path: str
    container: str
    root: Any
    size: int
    record_prefix: str | None = None
    globals_seen: dict[str, bool] = field(default_factory=dict)
    storages: list[StorageRef] = field(default_factory=list)
    pickle_bytes: int = 0
    protocol: int = 0
    #: The first place the file differs from what torch.save (or pickle.dump) writes.
    deviation: Deviation | None = None
    #: Why torch.load's default (weights_only=True) refuses the zip's data.pkl, with its byte
    #: offset; None where it refuses nothing (and for a plain pickle, which torch.load never
    #: reads as a torch.save file).
    weights_only_refusal: str | None = None

    @property
    def capture(self) -> dict[str, Any] | None:
        """The ppaux capture record ({marker, meta, tensors, output}) when this is a capture
        file."""
        root = self.root
        if isinstance(root, dict) and CAPTURE_MARKER in root and isinstance(root.get("meta"), dict):
            return root
        return None


def read_dump(path: str | os.PathLike[str], limits: Limits = Limits()) -> Dump:
    """Read the structure of the dump at ``path``; raise :class:`DumpError` if it is unusable."""
    path = os.fspath(path)
    if path.endswith(".safetensors"):
        # torch.load reads a path with this ending with safetensors, whatever its bytes hold.
        raise ReadMismatch(
            path,
            "torch.load reads a file named *.safetensors with safetensors, not as the "
            "torch.save zip or pickle ppaux reads",
        )
    try:
        handle, info = open_regular(path, "dump")
    except InputFileError as exc:
        raise DumpError(path, exc.reason) from None
    with handle:
        try:
            head = handle.read(4)
            if not head:
                raise DumpError(path, "empty file")
            if head in (_ZIP_MAGIC, _EMPTY_ZIP_MAGIC):
                handle.seek(0)
                return _read_zip(path, handle, info.st_size, limits)
            if info.st_size > limits.max_pickle_bytes:
                raise LimitExceeded(
                    path,
                    "max_pickle_bytes",
                    limits.max_pickle_bytes,
                    f"the pickle is {info.st_size} bytes",
                )
            handle.seek(0)
            data = handle.read(limits.max_pickle_bytes + 1)
        except OSError as exc:  # EIO from a failing disk, /proc/self/mem, ...
            raise DumpError(path, f"cannot read: {exc.strerror or exc}") from None
        if len(data) > limits.max_pickle_bytes:  # a file that grew, or lies about its size
            raise LimitExceeded(
                path,
                "max_pickle_bytes",
                limits.max_pickle_bytes,
                f"the pickle is more than {limits.max_pickle_bytes} bytes",
            )
    return _read_pickle(path, data, info.st_size, limits)


def read_dump_bytes(path: str, data: bytes, limits: Limits = Limits()) -> Dump:
    """Read a dump held in memory (``path`` is used in messages only)."""
    if not data:
        raise DumpError(path, "empty file")
    if data[:4] in (_ZIP_MAGIC, _EMPTY_ZIP_MAGIC):
        import io

        return _read_zip(path, io.BytesIO(data), len(data), limits)
    if len(data) > limits.max_pickle_bytes:
        raise LimitExceeded(
            path, "max_pickle_bytes", limits.max_pickle_bytes, f"the pickle is {len(data)} bytes"
        )
    return _read_pickle(path, data, len(data), limits)


def _check_not_tar(path: str, data: bytes) -> None:
    """Refuse a file that torch.load would read as its old tar format.

    For a file that is not a zip, torch.load first tries ``tarfile.open(mode='r:')`` and, when
    that works, unpickles the archive's 'storages', 'tensors' and 'pickle' members; only a
    ``tarfile.TarError`` sends it on to read the file as a pickle. A file can be both a tar and
    a pickle (the first header's name field can hold a short pickle), so ppaux does not read a
    file that opens as a tar.
    """
    import io
    import tarfile

    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:", format=tarfile.PAX_FORMAT):
            pass
    except tarfile.TarError:
        return
    except Exception:
        return
    raise ReadMismatch(
        path,
        "the file opens as a tar archive: torch.load reads it in its old "
        "tar format and unpickles its members, not the pickle ppaux would read",
    )


def read_dump_stream(name: str, stream: BinaryIO, limits: Limits = Limits()) -> Dump:
    """Read a dump from ``stream`` (stdin), which is held in memory whole; ``name`` ('<stdin>')
    is used in messages. A plain pickle may have ``max_pickle_bytes``, a zip
    ``max_stream_bytes``; past that it is refused without reading the rest."""
    try:
        head = stream.read(4)
        bound = (
            limits.max_stream_bytes
            if head in (_ZIP_MAGIC, _EMPTY_ZIP_MAGIC)
            else (limits.max_pickle_bytes)
        )
        data = head + stream.read(bound + 1 - len(head))
    except OSError as exc:
        raise DumpError(name, f"cannot read: {exc.strerror or exc}") from None
    if len(data) > bound:
        limit = "max_stream_bytes" if bound == limits.max_stream_bytes else "max_pickle_bytes"
        raise LimitExceeded(name, limit, bound, f"the stream holds more than {bound} bytes")
    return read_dump_bytes(name, data, limits)


def _read_pickle(path: str, data: bytes, size: int, limits: Limits) -> Dump:
    _check_not_tar(path, data)
    if is_legacy_stream(data):
        raise DumpError(
            path,
            "legacy torch.save format (PyTorch before 1.6), which ppaux does not read; re-save it "
            "with a current torch: torch.save(torch.load(f, weights_only=True), 'new.pt')",
        )
    machine = Machine(data, path=path, limits=limits, resolve=allowlist.resolve)
    try:
        root = machine.load()
    except ReadMismatch as exc:
        exc.calls = _unsafe(machine)
        raise
    except DumpError as exc:
        if machine.items == 0 or machine._op_pos == 0:
            raise DumpError(
                path, f"not a torch.save zip or a pickle file ({exc.reason}){_text_hint(data)}"
            ) from None
        raise
    if root == LEGACY_MAGIC:
        raise DumpError(
            path, "legacy torch.save format (PyTorch before 1.6), which ppaux does not read"
        )
    return Dump(
        path=path,
        container="pickle",
        root=root,
        size=size,
        globals_seen=machine.globals_seen,
        pickle_bytes=len(data),
        protocol=machine.protocol,
        deviation=pickle_deviation(data, (2, 3, 4, 5), "the pickle")
        or _machine_deviation(machine, "the pickle"),
    )


def _count_directory(handle: Any, start: int, end: int, limit: int) -> int:
    """Directory entries between ``start`` and ``end`` (by signature), counting up to ``limit``+1.

    zipfile builds an object for every entry before anything can be checked, several hundred
    bytes each: a 100 MB directory of tiny entries would cost gigabytes. Counting signatures
    costs one pass over the bytes, 4 MiB at a time.
    """
    count, position, carry = 0, start, b""
    handle.seek(start)
    while position < end and count <= limit:
        chunk = handle.read(min(1 << 22, end - position))
        if not chunk:
            break
        position += len(chunk)
        block = carry + chunk
        count += block.count(b"PK\x01\x02")
        carry = block[-3:]  # too short to hold a whole signature: nothing is counted twice
    return count


def _read_zip(path: str, handle: Any, size: int, limits: Limits) -> Dump:
    """Read a torch.save zip: its end record and directory, the records it names, data.pkl
    through the interpreter, and the writer model's verdict on every byte.

    Long on purpose: the order of these steps is torch's order of refusals (an end record before
    the directory, the directory before data.pkl), and each step's error names the record at
    fault; kept in one place, the order can be read top to bottom."""
    try:
        end = end_record(path, handle, size)
        count = (
            _count_directory(handle, end.offset, end.location, limits.max_zip_records) if end else 0
        )
    except OSError as exc:
        raise DumpError(path, f"cannot read: {exc.strerror or exc}") from None
    if end is not None and end.entries > limits.max_zip_records:
        count = end.entries
    if count > limits.max_zip_records:
        raise LimitExceeded(
            path,
            "max_zip_records",
            limits.max_zip_records,
            f"the zip's directory holds more than {limits.max_zip_records} records",
        )
    try:
        handle.seek(0)
        archive = zipfile.ZipFile(handle)
    except ZIP_READ_ERRORS as exc:
        raise DumpError(path, f"truncated or corrupt zip file ({exc})") from None
    if end is None:  # zipfile found an end record where torch's reader finds none
        archive.close()
        raise DumpError(path, "truncated or corrupt zip file (no end record)")
    with archive:
        records = archive.infolist()
        if len(records) > limits.max_zip_records:
            raise LimitExceeded(
                path,
                "max_zip_records",
                limits.max_zip_records,
                f"the zip holds {len(records)} records",
            )
        try:
            prefix = check_layout(path, handle, end, records)
        except OSError as exc:
            raise DumpError(path, f"cannot read: {exc.strerror or exc}") from None
        record = select_data_pkl(path, prefix, records)
        data = _read_record(path, archive, record, limits)
        RecordReader(path, handle, records, prefix, size).check_exact(record)
        # torch looks storage records up as it looks up data.pkl: ASCII case-insensitively
        # (check_layout refused names equal but for case, so each lowered name is one record).
        by_name = {lower_name(r.filename): r for r in records}
        storages: list[StorageRef] = []
        by_key: dict[str | int, StorageRef] = {}
        key_problems: list[str] = []
        first_pids: dict[str | int, tuple[Any, ...]] = {}

        def persistent_load(m: Machine, pid: Any) -> StorageRef:
            if (
                not isinstance(pid, tuple)
                or len(pid) != 5
                or pid[0] != "storage"
                or not isinstance(pid[1], StorageType)
                or not isinstance(pid[2], (str, int))
                or not isinstance(pid[3], str)
                or type(pid[4]) is not int
                or not 0 <= pid[4] < 2**63
            ):
                raise m.error(
                    "storage record reference is not ('storage', type, key, location, numel)"
                )
            # torch.load caches storages in a dict by the key as unpickled, so keys equal in
            # Python (1 and True) are one storage, keys that differ (0 and '0') two, even where
            # they name the same record; it names the record f"data/{key}", so an int key (which
            # torch.save never writes) names the record of its digits, True the record 'True'.
            if isinstance(pid[2], int) and pid[2].bit_length() > 64:
                raise m.error("storage key is an integer of more than 64 bits")
            if not key_problems:
                problem = storage_key_deviation(pid, len(storages), first_pids.get(pid[2]))
                if problem is not None:
                    key_problems.append(f"data.pkl byte {m._op_pos} (BINPERSID): {problem}")
            first_pids.setdefault(pid[2], pid)
            known = by_key.get(pid[2])
            if known is not None:  # views of one storage name the same record, as in torch.load
                return known
            key = f"{pid[2]}"
            # The location (the device string) is shown in reports: no control characters.
            storage = StorageRef(pid[1].dtype, key, shown(pid[3], 200), pid[4])
            by_key[pid[2]] = storage
            name = f"{prefix}/data/{key}"
            found = by_name.get(lower_name(name))
            storage.record = name
            storage.record_size = found.file_size if found is not None else None
            storages.append(storage)
            return storage

        machine = Machine(
            data,
            path=path,
            limits=limits,
            resolve=allowlist.resolve,
            persistent_load=persistent_load,
        )
        try:
            root = machine.load()
        except ReadMismatch as exc:
            exc.calls = _unsafe(machine)
            raise
        deviation = _deviation(
            path, handle, size, records, prefix, storages, data, key_problems
        ) or _machine_deviation(machine, "data.pkl")
        if all(machine.globals_seen.values()):
            # torch refuses the archive before data.pkl (a hostile global found in the pickle
            # is still the more useful answer, so this comes after it).
            reader = RecordReader(path, handle, records, prefix, size)
            refusal = torch_refusal(reader)
            if refusal is not None:
                raise TorchRefuses(path, f"torch.load refuses the file: {refusal}")
            check_deflated_storages(reader, storages, limits)
            dropped = dropped_bad_view(root, machine.tensors_built, limits)
            if dropped is not None:
                raise TorchRefuses(
                    path,
                    f"torch.load refuses the file: a tensor the pickle builds and then drops "
                    f"(a later entry replaces it) {dropped}; torch fails while building it",
                )
            for storage in storages:
                if storage.record_size is not None and storage.record_size > storage.nbytes:
                    # get_storage_from_record wants the record's size to be exactly the
                    # storage's (a short or missing record is PP113, with its key).
                    raise TorchRefuses(
                        path,
                        f"torch.load refuses the file: record {shown(storage.record or '')} "
                        f"holds {storage.record_size} bytes, its storage {storage.nbytes} "
                        "(torch: record size does not match expected size)",
                    )
                if not restorable(storage.location):
                    raise TorchRefuses(
                        path,
                        f"torch.load refuses the file: no restore function for storage "
                        f"location {storage.location} (torch 2.13 restores cpu, meta, mps, "
                        "and cuda, hpu, xpu, mtia, privateuseone, alone or as NAME:N)",
                    )
    return Dump(
        path=path,
        container="zip",
        root=root,
        size=size,
        record_prefix=prefix,
        globals_seen=machine.globals_seen,
        storages=storages,
        pickle_bytes=len(data),
        protocol=machine.protocol,
        deviation=deviation,
        weights_only_refusal=weights_only_refusal(data),
    )


def _unsafe(machine: Machine) -> tuple[str, ...]:
    """The globals outside the allowlist that the pickle named so far."""
    return tuple(name for name, allowed in machine.globals_seen.items() if not allowed)


def _machine_deviation(machine: Machine, label: str) -> Deviation | None:
    """The first value the pickle builds that the writer never writes (see Machine.deviate)."""
    if machine.deviation is None:
        return None
    where, what, severe = machine.deviation
    return Deviation(f"{label} {where}", what, severe)


def _deviation(
    path: str,
    handle: Any,
    size: int,
    records: list[zipfile.ZipInfo],
    prefix: str,
    storages: list[StorageRef],
    data: bytes,
    key_problems: list[str],
) -> Deviation | None:
    """The first place the archive differs from what torch.save writes: its records and
    headers, then data.pkl's opcodes, then its storage keys."""
    import zlib

    keys = [storage.key for storage in storages]
    try:
        found = zip_deviation(handle, size, records, f"{prefix}/", keys, zlib.crc32(data))
    except OSError as exc:
        raise DumpError(path, f"cannot read: {exc.strerror or exc}") from None
    if found is None:
        found = pickle_deviation(data, (2,), "data.pkl")
    if found is None and key_problems:
        where, _, what = key_problems[0].partition(": ")
        found = Deviation(where, what, True)
    return found


#: Compression methods torch.load reads (its zip reader knows only these two).
_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}


def _read_record(
    path: str, archive: zipfile.ZipFile, record: zipfile.ZipInfo, limits: Limits
) -> bytes:
    name = shown(record.filename)
    if record.file_size > limits.max_pickle_bytes:
        raise LimitExceeded(
            path,
            "max_pickle_bytes",
            limits.max_pickle_bytes,
            f"{name} declares {record.file_size} bytes",
        )
    if record.compress_type not in _METHODS:
        # zipfile inflates bzip2 and lzma records whole, whatever size the header declares.
        raise DumpError(
            path,
            f"{name} is compressed with method {record.compress_type}, "
            "which torch.load cannot read (only stored or deflate)",
        )
    try:
        with archive.open(record) as stream:
            # Read one byte past the limit: a record whose header lies about its size
            # (a deflate bomb) is stopped here instead of filling memory.
            data = stream.read(limits.max_pickle_bytes + 1)
    except ZIP_READ_ERRORS as exc:
        raise DumpError(path, f"cannot read {name} ({exc})") from None
    if len(data) > limits.max_pickle_bytes:
        raise LimitExceeded(
            path, "max_pickle_bytes", limits.max_pickle_bytes, f"{name} inflates past the limit"
        )
    return data


def _text_hint(data: bytes) -> str:
    """'; it is text: a log is read by triage' when ``data`` begins as lines of text (UTF-8,
    printable): the usual mistake is a server log given to the dump reader."""
    head = data[:4096]
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:  # a multi-byte character cut at the end is still text
        if exc.start < len(head) - 4:
            return ""
        text = head[: exc.start].decode("utf-8")
    if not text.strip() or not all(c.isprintable() or c in "\t\r\n" for c in text):
        return ""
    return "; it is text: if it is a server log, triage reads it (ppaux triage FILE)"
