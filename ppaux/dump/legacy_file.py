"""A file in ``torch.save``'s non-zip format (``_use_new_zipfile_serialization=False``), read
through the same safe machine as a zip's data.pkl, with the writer's model of every byte.

torch 2.13 still writes this format (torch/serialization.py ``_legacy_save``; the zip became the
default in 1.6). The file is five pickles, all at one protocol (``pickle_protocol``, 2 unless
given), then the storages' bytes:

1. the magic number ``0x1950A86A20F9469CFC6C``;
2. the format version, 1001;
3. the system info ``{'protocol_version': 1001, 'little_endian': True, 'type_sizes':
   {'short': 2, 'int': 4, 'long': 4}}`` (``struct``'s standard sizes, the same on every machine);
4. the object, each storage a persistent id ``('storage', <torch.XStorage>, key, location,
   numel, None)``: the key is the decimal text of the storage's address, so distinct storages
   have distinct keys and a storage met again repeats its first id; the view field is always
   None (the writer's own test for a view compares a storage with itself);
5. the keys of every storage met, sorted as text;

then, per key in that order, the storage's element count as a little-endian int64 and its
bytes (little-endian whatever the machine), and nothing more.

torch.load (``_legacy_load``) reads the five pickles (with its weights-only unpickler by
default), refuses a magic number or version other than these, ignores the system info, then
reads one record per listed key in the listed order: a key the object never named, a count
whose int64 byte size is not the storage's or a record cut short is refused; a storage whose
key is not listed keeps whatever memory it was given; bytes after the last record are never
read. How it reads an id the writer never writes (an int key, a bytes location, a view field)
is :mod:`ppaux.dump.legacy_ids`.
:func:`read_legacy` refuses what torch refuses, keeps each storage's bytes as torch reads them,
and reports the first byte that differs from what the writer writes as the dump's deviation.
"""

from __future__ import annotations

import functools
import pickle
from collections.abc import Callable
from typing import Any

from ppaux.dump import allowlist, weights_only
from ppaux.dump.grammar import Deviation, pickle_deviation
from ppaux.dump.legacy import LEGACY_MAGIC, LEGACY_VERSION, SYS_INFO
from ppaux.dump.legacy_ids import LegacyId, count_reads_as, decoded_tag, key_text, storage_id
from ppaux.dump.model import DTYPE_ITEMSIZE, StorageRef, StorageType
from ppaux.dump.pickle_vm import Machine
from ppaux.dump.structure import Dump, failed_after_calls, machine_deviation
from ppaux.errors import DumpError, LimitExceeded, ReadMismatch, TorchRefuses
from ppaux.limits import Limits
from ppaux.text import cut

__all__ = ["read_legacy"]

_NAMES = ("the magic number", "the version", "the system info", "the object", "the storage keys")


class _Pickles:
    """The five pickles run one after another on one budget (items, opcodes, bytes copied),
    their globals merged, each one's span kept."""

    def __init__(self, path: str, data: bytes, limits: Limits) -> None:
        self.path = path
        # The pickles are bounded as any pickle is; the storages' bytes after them are not.
        self.cut = len(data) > limits.max_pickle_bytes
        self.data = data[: limits.max_pickle_bytes] if self.cut else data
        self.limits = limits
        self.globals_seen: dict[str, bool] = {}
        self.spans: list[tuple[int, int]] = []
        self.machines: list[Machine] = []

    def run(self, start: int, persistent_load: Callable[[Machine, Any], Any] | None = None) -> Any:
        machine = Machine(
            self.data,
            path=self.path,
            limits=self.limits,
            resolve=allowlist.resolve,
            persistent_load=persistent_load,
            start=start,
        )
        if self.machines:
            machine.spend_on_from(self.machines[-1])
        machine.globals_seen = self.globals_seen  # one record of what the file names
        self.machines.append(machine)
        try:
            value = machine.load()
        except DumpError as exc:
            if self.cut and machine.ran_out and not isinstance(exc, ReadMismatch | LimitExceeded):
                limit = self.limits.max_pickle_bytes
                raise LimitExceeded(
                    self.path, "max_pickle_bytes", limit, f"the pickles run past byte {limit}"
                ) from None
            raise failed_after_calls(machine, exc) from None
        self.spans.append((start, machine.pos))
        return value

    def label(self, index: int) -> str:
        return f"pickle {index + 1} ({_NAMES[index]}, from byte {self.spans[index][0]})"


class _Storages:
    """The persistent ids of the object pickle, as torch.load reads them: one storage per key
    (the first id of a key makes it; a later one gets the same storage)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.by_key: dict[str, StorageRef] = {}
        self.storages: list[StorageRef] = []
        self.problem: Deviation | None = None

    def __call__(self, m: Machine, pid: object) -> StorageRef:
        where = f"byte {m.op_pos}"
        if not isinstance(pid, tuple) or not pid:
            raise TorchRefuses(
                self.path,
                f"torch.load refuses the file: {where}: a persistent id that is not a tuple "
                "(torch: saved_id must be a tuple)",
            )
        tag = decoded_tag(pid[0])
        if tag == "module":
            # A whole nn.Module saved: its class goes by reference (with its source), and
            # torch.load(weights_only=False) imports it.
            raise ReadMismatch(
                self.path,
                f"{where}: a module class saved by reference, which "
                "torch.load(weights_only=False) imports; ppaux reads tensors and plain "
                "containers (save the module's state_dict() instead)",
            )
        if tag != "storage":
            raise TorchRefuses(
                self.path,
                f"torch.load refuses the file: {where}: a persistent id tagged "
                f"{cut(repr(pid[0]), 40)} (torch: Unknown saved id type)",
            )
        if len(pid) > 1 and isinstance(pid[1], StorageType) and pid[1].name == "UntypedStorage":
            # The writer names a storage of a dtype without a storage class of its own (uint16
            # to uint64, float8, complex32) by its byte storage; the legacy reader asks that
            # class for a dtype it does not have.
            raise TorchRefuses(
                self.path,
                f"torch.load refuses the file: {where}: a storage saved as "
                "torch.storage.UntypedStorage, which the legacy format's reader cannot read "
                "(torch: type object 'torch.storage.UntypedStorage' has no attribute 'dtype'); "
                "save it with the zip format (torch.save's default)",
            )
        found = storage_id(self.path, where, pid, "torch.load refuses the file", self.by_key)
        key = found.key
        known = self.by_key.get(key)
        if self.problem is None:
            # A key that is no address is read by torch as by ppaux (one storage per key), and
            # so are the notes' ids; a key met again with another class or size is not where
            # the first storage is empty (torch then makes one of the later class).
            what = _key_problem(found, known) if known is not None or isinstance(key, str) else None
            if what:
                self.problem = Deviation(f"file {where} (BINPERSID)", what, known is not None)
            elif found.notes:
                self.problem = Deviation(
                    f"file {where} (BINPERSID)", "; ".join(found.notes), found.severe
                )
        if known is not None:
            return known
        storage = StorageRef(
            found.storage_type.dtype, key_text(key), cut(found.location, 200), found.numel
        )
        self.by_key[key] = storage
        self.storages.append(storage)
        return storage


def _key_problem(found: LegacyId, known: StorageRef | None) -> str | None:
    """Why a storage id is not one the writer writes: its key is the decimal text of an
    address, and a key met again comes with its first storage class, location and size."""
    key = found.key
    if known is not None:
        if known.dtype != found.storage_type.dtype:
            return (
                f"storage key {key_text(key)!r} written as {found.storage_type!r}, first as "
                f"{known.dtype}"
            )
        if known.location != cut(found.location, 200):
            return f"storage key {key_text(key)!r} written at two locations"
        if known.numel != found.numel:
            return (
                f"storage key {key_text(key)!r} written with {found.numel} elements, "
                f"first with {known.numel}"
            )
        return None
    if not (0 < len(key) <= 20 and key.isascii() and key.isdigit() and str(int(key)) == key):
        return f"storage key {key_text(key)!r} is not the decimal text of an address"
    if int(key) == 0 or int(key) >= 2**64:
        return f"storage key {key!r} is not an address"
    return None


def _differ(data: bytes, start: int, end: int, expected: bytes, label: str) -> Deviation | None:
    """The first byte of ``data[start:end]`` that is not ``expected``'s."""
    actual = data[start:end]
    if actual == expected:
        return None
    at = next(
        (i for i, (a, b) in enumerate(zip(actual, expected, strict=False)) if a != b),
        min(len(actual), len(expected)),
    )
    return Deviation(f"{label} byte {at}", "not the bytes the writer writes there", False)


def _protocol(data: bytes) -> int:
    """The protocol the first pickle is written at (protocol 1 has no PROTO)."""
    return data[1] if len(data) > 1 and data[0] == 0x80 else 1


def read_legacy(path: str, data: bytes, size: int, limits: Limits) -> Dump:
    """Read the legacy-format file ``data`` (its first pickle holds the magic number)."""
    pickles = _Pickles(path, data, limits)
    magic = pickles.run(0)
    if magic != LEGACY_MAGIC:  # the caller checked; kept for callers that did not
        raise DumpError(path, "not a legacy torch.save file (no magic number)")
    version = pickles.run(pickles.spans[0][1])
    # torch compares with != (a float 1001.0 passes); ppaux's values compare as torch's do.
    if type(version) not in (int, float) or version != LEGACY_VERSION:
        raise TorchRefuses(
            path,
            f"torch.load refuses the file: {pickles.label(1)} holds {cut(repr(version), 80)}, "
            f"not {LEGACY_VERSION} (torch: Invalid protocol version)",
        )
    pickles.run(pickles.spans[1][1])  # the system info: read (it may name globals), not used
    storages = _Storages(path)
    root = pickles.run(pickles.spans[2][1], storages)
    keys = pickles.run(pickles.spans[3][1])
    pos = pickles.spans[4][1]
    if not isinstance(keys, (list, tuple)):
        raise ReadMismatch(
            path, f"{pickles.label(4)} is not a list of storage keys, which is what ppaux reads"
        )
    for key in keys:
        if isinstance(key, (list, dict, set, bytearray)):
            raise TorchRefuses(
                path,
                f"torch.load refuses the file: {pickles.label(4)} lists a "
                f"{type(key).__name__} (torch: unhashable type)",
            )
        if not isinstance(key, (str, bytes, int, float, tuple, type(None))):
            raise ReadMismatch(
                path, f"{pickles.label(4)} lists a {type(key).__name__}, which ppaux does not read"
            )
    read = all(pickles.globals_seen.values())  # else the file is a finding already
    counted = None
    if read:
        pos, counted = _read_records(path, data, pos, keys, storages)
    deviation = _grammar(pickles, storages, keys)
    if (
        deviation is not None
        and type(version) is not int
        and deviation.where.startswith(pickles.label(1))
    ):
        deviation = Deviation(
            pickles.label(1),
            f"the version is {version!r}, a {type(version).__name__}: torch.load compares it "
            f"equal to {LEGACY_VERSION} and reads on",
            False,
        )
    deviation = deviation or counted or (_trailing(data, pos) if read else None)
    return Dump(
        path=path,
        container="legacy",
        root=root,
        size=size,
        globals_seen=pickles.globals_seen,
        storages=storages.storages,
        pickle_bytes=pickles.spans[4][1],
        protocol=pickles.machines[3].protocol,
        deviation=deviation,
        weights_only_check=functools.partial(
            _weights_only, pickles.data, pickles.spans, [pickles.label(i) for i in range(5)]
        ),
    )


def _read_records(
    path: str, data: bytes, pos: int, keys: list[Any] | tuple[Any, ...], storages: _Storages
) -> tuple[int, Deviation | None]:
    """Read one record per listed key, in the listed order, as torch.load does; return the
    offset just past the last one and the first count torch reads otherwise than written. A
    key listed twice is read twice, the later bytes kept."""
    deviation = None
    for key in keys:
        storage = storages.by_key.get(key)
        if storage is None:
            raise TorchRefuses(
                path,
                f"torch.load refuses the file: the storage key list names {key_text(key)!r}, "
                "which the object never refers to (torch: storage key not found)",
            )
        if pos + 8 > len(data):
            raise TorchRefuses(
                path,
                f"torch.load refuses the file: byte {pos}: the record of storage "
                f"{storage.key} is cut short (torch: unexpected EOF)",
            )
        count = int.from_bytes(data[pos : pos + 8], "little", signed=True)
        itemsize = DTYPE_ITEMSIZE.get(storage.dtype, 1)
        if count_reads_as(count, itemsize) != storage.nbytes:
            raise TorchRefuses(
                path,
                f"torch.load refuses the file: byte {pos}: the record of storage {storage.key} "
                f"counts {count} elements, the object {storage.numel} (torch: storage has "
                "wrong byte size)",
            )
        if storage.location == "meta" and deviation is None:
            deviation = Deviation(
                f"byte {pos}",
                f"the data of storage {storage.key} at location 'meta', which torch.save never "
                "writes (a meta tensor is saved without a storage)",
                False,
            )
        if count != storage.numel and deviation is None:
            deviation = Deviation(
                f"byte {pos}",
                f"the record of storage {storage.key} counts {count} elements, the object "
                f"{storage.numel}: torch.load multiplies the count by {itemsize} in int64, "
                f"which wraps to the storage's {storage.nbytes} bytes, and reads them",
                False,
            )
        end = pos + 8 + storage.nbytes
        if end > len(data):
            raise TorchRefuses(
                path,
                f"torch.load refuses the file: byte {pos}: the record of storage "
                f"{storage.key} holds {len(data) - pos - 8} of its {storage.nbytes} bytes "
                "(torch: unexpected EOF)",
            )
        storage.data = memoryview(data)[pos + 8 : end]  # no copy: the file is held whole
        storage.record_size = storage.nbytes
        pos = end
    return pos, deviation


def _grammar(
    pickles: _Pickles, storages: _Storages, keys: list[Any] | tuple[Any, ...]
) -> Deviation | None:
    """The first place, in file order, that the pickles differ from what the writer writes."""
    data = pickles.data
    protocol = _protocol(data)
    if protocol not in range(1, 6):
        return Deviation(
            f"{pickles.label(0)} byte 0",
            f"protocol {protocol}, where the writer uses 1 to 5",
            protocol > 5,
        )
    for index, value in enumerate((LEGACY_MAGIC, LEGACY_VERSION, SYS_INFO)):
        start, stop = pickles.spans[index]
        expected = pickle.dumps(value, protocol=protocol)
        found = _differ(data, start, stop, expected, pickles.label(index))
        if found is not None:
            return found
    start, stop = pickles.spans[3]
    found = machine_deviation(
        pickles.machines[3],
        "file",
        pickle_deviation(data[start:stop], (protocol,), pickles.label(3)) or storages.problem,
    )
    if found is not None:
        return found
    start, stop = pickles.spans[4]
    written = [k for k in storages.by_key if isinstance(k, str)]  # text keys only, here
    expected = pickle.dumps(sorted(written), protocol=protocol)
    found = _differ(data, start, stop, expected, pickles.label(4))
    if found is not None:
        listed = set(keys)
        missing = [k for k in storages.by_key if k not in listed]
        if missing:
            # torch.load leaves that storage's memory as it was allocated: its values are not
            # the file's.
            return Deviation(
                found.where,
                f"storage {key_text(missing[0])} is not listed: torch.load never reads its "
                "bytes and leaves its memory uninitialised",
                True,
            )
        why = "the storage keys are not each listed once, in sorted order"
        return Deviation(found.where, why, False)
    return None


def _trailing(data: bytes, end: int) -> Deviation | None:
    if end < len(data):
        return Deviation(
            f"byte {end}",
            f"{len(data) - end} bytes after the last storage record, which torch.load never reads",
            False,
        )
    return None


def _weights_only(data: bytes, spans: list[tuple[int, int]], labels: list[str]) -> str | None:
    """Why torch.load's weights-only unpickler refuses one of the five pickles (at ``spans`` of
    ``data``, called ``labels``), or None."""
    for (start, stop), label in zip(spans, labels, strict=True):
        found = weights_only.refusal(data[start:stop])
        if found is not None:
            return f"{label} byte {found[0]}: {found[1]}"
    return None
