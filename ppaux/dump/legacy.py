"""The legacy (non-zip) ``torch.save`` stream, as torch nests one inside a pickle (a whole file
in that format is :mod:`ppaux.dump.legacy_file`).

``pickle.dumps(tensor)`` stores each storage as ``torch.storage._load_from_bytes(b'...')``, whose
bytes are a legacy ``torch.save`` stream: a magic number, a protocol version, system info, the
object pickle (storages as persistent ids), the list of storage keys, then raw storage bytes.
This module parses that stream with the same safe machine, so nothing inside runs either.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from ppaux.dump.legacy_ids import count_reads_as, decoded_tag, key_text, storage_id
from ppaux.dump.model import DTYPE_ITEMSIZE, Opaque, StorageRef
from ppaux.dump.nested_zip import ZIP_LOCAL_MAGIC, nested_too_deep, read_inner_zip
from ppaux.dump.pickle_vm import Machine
from ppaux.errors import DumpError, ReadMismatch, TorchRefuses
from ppaux.text import cut

__all__ = ["LEGACY_MAGIC", "LEGACY_VERSION", "SYS_INFO", "is_legacy_stream", "read_inner_storage"]

#: First value of every legacy torch.save stream.
LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_LEGACY_PREFIX = b"\x80\x02\x8a\x0a" + LEGACY_MAGIC.to_bytes(10, "little")
_MAX_NESTING = 2
#: The format version the legacy writer writes (and the only one torch.load reads).
LEGACY_VERSION = _VERSION = 1001
#: The system info the writer pickles third (torch ignores it when loading).
SYS_INFO = {
    "protocol_version": LEGACY_VERSION,
    "little_endian": True,
    "type_sizes": {"short": 2, "int": 4, "long": 4},
}
_KEYS = (str, bytes, int, float, tuple, type(None))


def _as_written(value: object, written: object) -> bool:
    """Whether ``value`` is ``written``, item for item and type for type (``True`` is not
    ``1``), as plain data (dicts, ints, strs)."""
    if type(value) is not type(written):
        return False
    if isinstance(value, dict) and isinstance(written, dict):
        return list(value) == list(written) and all(
            _as_written(value[k], written[k]) for k in written
        )
    return value == written


def is_legacy_stream(data: bytes) -> bool:
    """True when ``data`` starts like a legacy (non-zip) torch.save stream."""
    return data.startswith(_LEGACY_PREFIX)


_REFUSES = "torch.load refuses the file: a nested torch.save stream"


def _legacy_storage(m: Machine, pid: object, by_key: dict[Any, StorageRef]) -> Any:
    if not isinstance(pid, tuple) or not pid or decoded_tag(pid[0]) != "storage":
        return Opaque("persistent id", "call", pid if isinstance(pid, tuple) else (pid,))
    found = storage_id(m.path, f"byte {m.op_pos}", pid, _REFUSES, by_key)
    for note in found.notes:
        m.deviate(f"a nested torch.save stream's {note}", severe=found.severe)
    known = by_key.get(found.key)
    if known is not None:
        return known
    storage = StorageRef(
        found.storage_type.dtype, key_text(found.key), cut(found.location, 200), found.numel
    )
    by_key[found.key] = storage
    return storage


def _attach_storage_bytes(
    outer: Machine, payload: bytes, pos: int, by_key: dict[Any, StorageRef], names: object
) -> None:
    """Keep each storage's bytes (after the key list: per key an int64 element count and the
    raw bytes) so that replay can rebuild the tensor. A tail torch would not read as these
    storages is never passed over: a key the object never named, a count torch does not take
    for the storage's size or bytes cut short is refused as torch refuses it (PP117), and a
    storage the key list leaves out, whose memory torch leaves as it found it, is a reading
    that differs (PP202). A count that wraps to the size and bytes after the last record, which
    torch reads past and never reads, are not as the writer writes them."""
    path = outer.path
    if not isinstance(names, (list, tuple)):
        raise ReadMismatch(
            path, "a nested torch.save stream whose storage keys are not a list of keys"
        )
    for name in names:
        if isinstance(name, (list, dict, set, bytearray)):
            raise TorchRefuses(path, f"{_REFUSES} lists a {type(name).__name__} as a storage key")
        storage = by_key.get(name) if isinstance(name, _KEYS) else None
        if storage is None:
            raise TorchRefuses(
                path,
                f"{_REFUSES} lists storage key {key_text(name)!r}, which its object never "
                "names (torch: KeyError)",
            )
        count = int.from_bytes(payload[pos : pos + 8], "little", signed=True)
        end = pos + 8 + storage.nbytes
        itemsize = DTYPE_ITEMSIZE.get(storage.dtype, 1)
        readable = count_reads_as(count, itemsize) == storage.nbytes
        if pos + 8 > len(payload) or not readable or end > len(payload):
            raise TorchRefuses(
                path,
                f"{_REFUSES}'s storage {storage.key!r} has {storage.numel} elements, and its "
                + ("record is cut short" if readable else f"record counts {count}"),
            )
        if count != storage.numel:
            outer.deviate(
                f"a nested torch.save stream's record of storage {storage.key!r} counts {count} "
                f"elements, the object {storage.numel}: torch.load multiplies the count by "
                f"{itemsize} in int64, which wraps to the storage's {storage.nbytes} bytes",
                severe=False,
            )
        storage.data = payload[pos + 8 : end]
        pos = end
    unlisted = [s.key for s in by_key.values() if s.data is None]
    if unlisted:
        raise ReadMismatch(
            path,
            f"a nested torch.save stream leaves storage {cut(unlisted[0], 40)!r} out of its "
            "key list: torch gives that tensor whatever memory it is allocated",
        )
    if pos < len(payload):
        outer.deviate(
            f"a nested torch.save stream holds {len(payload) - pos} bytes after its last "
            "storage record, which torch.load never reads",
            severe=False,
        )


def read_inner_storage(outer: Machine, payload: bytes) -> Any:
    """Describe the storage held by a nested legacy stream, merging its globals into ``outer``.

    torch reads five pickles from the stream, all with a plain unpickler (``_load_from_bytes``
    calls ``torch.load(weights_only=False)``): the magic number, the protocol version, the system
    info, the object, and the list of storage keys. Each is interpreted here, so that code in
    any of them is seen. A zip archive in its place is read by :mod:`ppaux.dump.nested_zip`.
    """
    depth = outer.nesting + 1
    if depth > _MAX_NESTING:
        raise nested_too_deep(outer, _MAX_NESTING)
    if payload.startswith(ZIP_LOCAL_MAGIC):
        return read_inner_zip(outer, payload)
    if not is_legacy_stream(payload):
        raise outer.error("torch.storage._load_from_bytes holds no legacy torch.save stream")
    pos = 0
    value: Any = None
    names: Any = None
    version: Any = None
    by_key: dict[Any, StorageRef] = {}
    for step in range(5):  # magic, protocol version, system info, the object, the storage keys
        inner = Machine(
            payload,
            path=outer.path,
            limits=outer.limits,
            resolve=outer.resolve,
            persistent_load=partial(_legacy_storage, by_key=by_key) if step == 3 else None,
            start=pos,
        )
        inner.nesting = depth
        inner.spend_on_from(outer)
        try:
            loaded = inner.load()
        except ReadMismatch:
            raise  # torch's own refusal or reading, said as such
        except DumpError as exc:
            raise outer.error(f"nested torch.save stream: {exc.reason}") from None
        finally:
            # What the stream called before it ended or was refused is the file's, whatever
            # follows.
            outer.spend_on_from(inner)
            for name, allowed in inner.globals_seen.items():
                outer.globals_seen[name] = outer.globals_seen.get(name, False) or allowed
        pos = inner.pos
        if step == 1:
            version = loaded
            # torch compares the version with != (a float 1001.0 passes) and refuses another.
            if type(version) not in (int, float) or version != _VERSION:
                raise TorchRefuses(
                    outer.path,
                    f"{_REFUSES}'s version is {cut(repr(version), 80)}, not {_VERSION} "
                    "(torch: Invalid protocol version)",
                )
            if type(version) is not int:
                outer.deviate(
                    f"a nested torch.save stream's version is {version!r}, which torch.load "
                    f"compares equal to {_VERSION} and reads on",
                    severe=False,
                )
        elif step == 2 and not _as_written(loaded, SYS_INFO):
            # torch.load reads past the system info whatever it holds; the writer writes one.
            outer.deviate(
                "a nested torch.save stream's system info is not the one the writer pickles "
                f"({cut(repr(loaded), 80)}; torch.load ignores it)",
                severe=False,
            )
        elif step == 3:
            value = loaded
        elif step == 4:
            names = loaded
    _attach_storage_bytes(outer, payload, pos, by_key, names)
    return value
