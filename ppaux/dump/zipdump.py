"""Reading a torch.save zip without torch: its end record and directory (counted before
zipfile builds them), the records torch would read, ``data.pkl`` through the pickle machine with
the storage references it names, and where torch.load would read the archive otherwise."""

from __future__ import annotations

import functools
import zipfile
from typing import Any, BinaryIO

from ppaux.dump import allowlist
from ppaux.dump.device_index import device_reading, device_refusal
from ppaux.dump.element_values import ElementReader
from ppaux.dump.grammar import Deviation, pickle_deviation
from ppaux.dump.model import StorageRef, StorageType
from ppaux.dump.nested_zip import use_zip_reader
from ppaux.dump.packed_values import check_packed
from ppaux.dump.pickle_vm import Machine
from ppaux.dump.records import ZIP_READ_ERRORS, RecordReader
from ppaux.dump.storage_keys import ReadsAlike, record_name, storage_key_deviation
from ppaux.dump.structure import Dump, failed_after_calls, machine_deviation
from ppaux.dump.torch_reading import (
    check_deflated_storages,
    dropped_bad_view,
    restorable,
    torch_refusal,
    weights_only_refusal,
)
from ppaux.dump.zip_grammar import zip_deviation
from ppaux.dump.zipfile_view import zipfile_view
from ppaux.dump.zipview import check_layout, end_record, lower_name, select_data_pkl
from ppaux.errors import (
    CAUSE_EDITED,
    CAUSE_NEWER_TORCH,
    DumpError,
    LimitExceeded,
    TorchRefuses,
)
from ppaux.limits import Limits
from ppaux.text import cut

__all__ = ["read_zip"]


def _count_directory(handle: BinaryIO, start: int, end: int, limit: int) -> int:
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


def read_zip(
    path: str, handle: BinaryIO, size: int, limits: Limits, *, outer: Machine | None = None
) -> Dump:
    """Read a torch.save zip: its end record and directory, the records it names, data.pkl
    through the interpreter, and the writer model's verdict on every byte. ``outer`` is the
    machine of a pickle that nests this zip (``torch.storage._load_from_bytes``): its budgets
    and the globals it has seen are shared with data.pkl's.

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
        archive = zipfile.ZipFile(zipfile_view(handle, size))
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
        reader = RecordReader(path, handle, records, prefix, size)
        data = _read_record(path, reader, record, limits)
        reader.check_exact(record)
        # torch looks storage records up as it looks up data.pkl: ASCII case-insensitively
        # (check_layout refused names equal but for case, so each lowered name is one record).
        by_name = {lower_name(r.filename): r for r in records}
        storages: list[StorageRef] = []
        by_key: dict[str | int, StorageRef] = {}
        key_problems: list[tuple[str, str, bool]] = []
        first_pids: dict[str | int, tuple[Any, ...]] = {}

        def persistent_load(m: Machine, pid: object) -> StorageRef:
            if isinstance(pid, str) and all(m.globals_seen.values()):
                # torch.save(..., pickle_protocol=0) names each storage by the text of its
                # tuple (PERSID); torch.load takes only a tuple.
                raise TorchRefuses(
                    path,
                    f"torch.load refuses the file: data.pkl byte {m.op_pos} names a storage "
                    "by text (PERSID, as a pickle of protocol 0 does), not by a tuple "
                    "(torch: saved_id must be a tuple)",
                )
            pid = _as_torch_reads(m, pid, by_key)
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
                    where = f"data.pkl byte {m.op_pos} (BINPERSID)"
                    key_problems.append((where, problem, not isinstance(problem, ReadsAlike)))
            first_pids.setdefault(pid[2], pid)
            known = by_key.get(pid[2])
            if known is not None:  # views of one storage name the same record, as in torch.load
                return known
            _check_location(m, pid[3])
            key = f"{pid[2]}"
            # The location (the device string) is kept as the file spells it, cut to a bound;
            # every format shows it escaped.
            storage = StorageRef(pid[1].dtype, key, cut(pid[3], 200), pid[4])
            storage.untyped = pid[1].name == "UntypedStorage"
            by_key[pid[2]] = storage
            # torch looks the record up by the name's C string (PyTorchStreamReader::
            # getRecordID passes name.c_str() to miniz), which ends at a NUL in the key.
            name = record_name(prefix, key)
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
        if outer is not None:
            machine.spend_on_from(outer)
            machine.nesting = outer.nesting + 1
        try:
            root = machine.load()
        except DumpError as exc:
            raise failed_after_calls(machine, exc) from None
        finally:
            if outer is not None:
                outer.spend_on_from(machine)
                for name, allowed in machine.globals_seen.items():
                    outer.globals_seen[name] = outer.globals_seen.get(name, False) or allowed
        packed_refusal = None
        try:
            check_packed(machine, ElementReader(reader))
        except TorchRefuses as exc:
            packed_refusal = exc  # raised where torch refuses nothing before it
        unchecked: list[int] = []
        deviation = machine_deviation(
            machine,
            "data.pkl",
            _deviation(
                path, handle, size, records, prefix, storages, data, key_problems, limits, unchecked
            ),
        )
        if all(machine.globals_seen.values()):
            # torch refuses the archive before data.pkl (a hostile global found in the pickle
            # is still the more useful answer, so this comes after it).
            reader = RecordReader(path, handle, records, prefix, size)
            refusal = torch_refusal(reader)
            if refusal is not None:
                newer = "past the newest" in refusal  # a version record a newer torch writes
                raise TorchRefuses(
                    path,
                    f"torch.load refuses the file: {refusal}",
                    (CAUSE_NEWER_TORCH, CAUSE_EDITED) if newer else (CAUSE_EDITED,),
                )
            check_deflated_storages(reader, storages, limits)
            if packed_refusal is not None:
                raise packed_refusal
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
                        f"torch.load refuses the file: record {cut(storage.record or '')} "
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
        crc_unchecked=(len(unchecked), sum(unchecked)),
        weights_only_check=functools.partial(weights_only_refusal, data),
    )


def _as_torch_reads(m: Machine, pid: object, known: dict[str | int, StorageRef]) -> Any:
    """``pid`` as torch.load's zip reader takes it: a bytes tag, and the bytes location of a
    storage met first, decoded as ASCII (``_maybe_decode_ascii``), each a value the writer never
    writes; a location torch cannot decode or restore from is its refusal. A key met before
    gets the first storage, whatever location it comes with (torch reads none)."""
    if not isinstance(pid, tuple) or len(pid) != 5:
        return pid
    tag, storage_type, key, location, numel = pid
    if isinstance(tag, bytes) and tag.isascii():
        m.deviate(
            f"a storage id's tag {cut(repr(tag), 40)} is bytes, which torch decodes as ASCII",
            severe=False,
        )
        tag = tag.decode("ascii")
    fresh = not isinstance(key, (str, int)) or key not in known
    if isinstance(location, bytes) and fresh:
        if not location.isascii():
            raise TorchRefuses(
                m.path,
                f"torch.load refuses the file: data.pkl byte {m.op_pos}: storage location "
                f"{cut(repr(location), 200)} is not ASCII (torch: UnicodeDecodeError)",
            )
        m.deviate(
            f"storage location {cut(repr(location), 200)} is bytes, which torch decodes as ASCII",
            severe=False,
        )
        location = location.decode("ascii")
    elif fresh and tag == "storage" and not isinstance(location, (str, bytes)):
        raise TorchRefuses(
            m.path,
            f"torch.load refuses the file: data.pkl byte {m.op_pos}: storage location "
            f"{cut(repr(location), 80)} is of type {type(location).__name__}, not text "
            "(torch: TypeError while restoring it)",
        )
    return (tag, storage_type, key, location, numel)


def _deviation(
    path: str,
    handle: BinaryIO,
    size: int,
    records: list[zipfile.ZipInfo],
    prefix: str,
    storages: list[StorageRef],
    data: bytes,
    key_problems: list[tuple[str, str, bool]],
    limits: Limits,
    unchecked: list[int],
) -> Deviation | None:
    """The first place the archive differs from what torch.save writes: its records and
    headers, then data.pkl's opcodes, then its storage keys. The sizes of the records whose
    CRC was past ``max_crc_bytes`` go into ``unchecked``."""
    import zlib

    keys = [record_name("", storage.key)[len("/data/") :] for storage in storages]
    try:
        found = zip_deviation(
            handle,
            size,
            records,
            f"{prefix}/",
            keys,
            zlib.crc32(data),
            limits.max_crc_bytes,
            unchecked,
        )
    except OSError as exc:
        raise DumpError(path, f"cannot read: {exc.strerror or exc}") from None
    if found is None:
        found = pickle_deviation(data, (1, 2, 3, 4, 5), "data.pkl")
    if found is None and key_problems:
        found = Deviation(*key_problems[0])
    if found is None:
        found = _meta_record(storages)
    return found


def _check_location(m: Machine, location: str) -> None:
    """torch.load restores a storage's location when its key is first met, at the BINPERSID
    (torch/serialization.py ``_load``: ``load_tensor`` calls ``restore_location``), so a
    location it cannot restore stops it there: a call the pickle makes before has run, one
    after never runs."""
    path, pos = m.path, m.op_pos
    why = device_refusal(location)
    if why is not None:
        raise TorchRefuses(
            path,
            f"torch.load refuses the file: data.pkl byte {pos} (BINPERSID): storage location "
            f"{cut(location, 200)} ({why})",
        )
    read = device_reading(location)
    if read is not None:
        m.deviate(
            f"storage location {cut(location, 200)}: torch's device parser cuts the index to 8 "
            f"signed bits and reads {read}"
        )
    if not restorable(location):
        raise TorchRefuses(
            path,
            f"torch.load refuses the file: data.pkl byte {pos} (BINPERSID): no restore "
            f"function for storage location {cut(location, 200)} (torch 2.13 restores cpu, "
            "meta, mps, and cuda, hpu, xpu, mtia, privateuseone, alone or as NAME:N)",
        )


def _meta_record(storages: list[StorageRef]) -> Deviation | None:
    """torch.save writes a meta tensor without a storage (``_rebuild_meta_tensor_no_storage``)
    and cannot write a meta storage's bytes: a storage at 'meta' with a record is not its."""
    for storage in storages:
        if storage.location == "meta" and storage.record_size is not None:
            return Deviation(
                f"record {cut(storage.record or '')}",
                "the data of a storage at location 'meta', which torch.save never writes "
                "(a meta tensor is saved without a storage)",
                False,
            )
    return None


#: Compression methods torch.load reads (its zip reader knows only these two).
_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}


def _read_record(path: str, reader: RecordReader, record: zipfile.ZipInfo, limits: Limits) -> bytes:
    """The pickle record's bytes, read as torch's zip reader reads them: the name from the
    central directory only (the local header's is skipped by its length) and no CRC checked
    (zip_grammar reports a name or CRC other than torch.save's)."""
    name = cut(record.filename)
    if record.file_size > limits.max_pickle_bytes:
        raise LimitExceeded(
            path,
            "max_pickle_bytes",
            limits.max_pickle_bytes,
            f"{name} declares {record.file_size} bytes",
        )
    if record.compress_type not in _METHODS:
        raise DumpError(
            path,
            f"{name} is compressed with method {record.compress_type}, "
            "which torch.load cannot read (only stored or deflate)",
        )
    return b"".join(reader.blocks(record, 0, record.file_size))


use_zip_reader(read_zip)
