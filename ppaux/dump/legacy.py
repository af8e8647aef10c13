"""The legacy (non-zip) ``torch.save`` stream, as torch nests one inside a pickle (a whole file
in that format is :mod:`ppaux.dump.legacy_file`).

``pickle.dumps(tensor)`` stores each storage as ``torch.storage._load_from_bytes(b'...')``, whose
bytes are a legacy ``torch.save`` stream: a magic number, a protocol version, system info, the
object pickle (storages as persistent ids), the list of storage keys, then raw storage bytes.
This module parses that stream with the same safe machine, so nothing inside runs either.
"""

from __future__ import annotations

from typing import Any

from ppaux.dump.model import DTYPE_ITEMSIZE, Opaque, StorageRef, StorageType
from ppaux.dump.pickle_vm import Machine
from ppaux.dump.torch_reading import restorable
from ppaux.errors import DumpError, ReadMismatch, TorchRefuses
from ppaux.text import shown

__all__ = ["LEGACY_MAGIC", "is_legacy_stream", "read_inner_storage"]

#: First value of every legacy torch.save stream.
LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_LEGACY_PREFIX = b"\x80\x02\x8a\x0a" + LEGACY_MAGIC.to_bytes(10, "little")
_MAX_NESTING = 2


def is_legacy_stream(data: bytes) -> bool:
    """True when ``data`` starts like a legacy (non-zip) torch.save stream."""
    return data.startswith(_LEGACY_PREFIX)


def _legacy_storage(m: Machine, pid: Any) -> Any:
    if not isinstance(pid, tuple) or len(pid) < 5 or pid[0] != "storage":
        return Opaque("persistent id", "call", pid if isinstance(pid, tuple) else (pid,))
    storage_type, key, location, numel = pid[1:5]
    if (
        not isinstance(storage_type, StorageType)
        or type(numel) is not int
        or not 0 <= numel < 2**63
        or not isinstance(key, str)
        or not isinstance(location, str)
    ):
        raise m.error("nested storage record is malformed")
    if not restorable(location):
        raise TorchRefuses(
            m.path,
            f"torch.load refuses the file: a nested torch.save stream's storage location "
            f"{shown(location, 200)} has no restore function",
        )
    storage = StorageRef(storage_type.dtype, key, shown(location, 200), numel)
    m.storages.append(storage)  # type: ignore[attr-defined]
    return storage


def _attach_storage_bytes(
    path: str, payload: bytes, pos: int, storages: list[StorageRef], names: Any
) -> None:
    """Keep each storage's bytes (after the key list: per key an int64 element count and the
    raw bytes) so that replay can rebuild the tensor. A tail torch would not read as these
    storages is never passed over: a key the object never named, a count other than the
    storage's size or bytes cut short is refused as torch refuses it (PP117), and a storage
    the key list leaves out, whose memory torch leaves as it found it, is a reading that
    differs (PP202)."""
    by_key = {s.key: s for s in storages}
    if not isinstance(names, list):
        raise ReadMismatch(
            path, "a nested torch.save stream whose storage keys are not a list of keys"
        )
    for name in names:
        storage = by_key.get(name) if isinstance(name, str) else None
        if storage is None:
            raise TorchRefuses(
                path,
                f"torch.load refuses the file: a nested torch.save stream lists storage key "
                f"{shown(name, 40)!r}, which its object never names (torch: KeyError)",
            )
        count = int.from_bytes(payload[pos : pos + 8], "little", signed=True)
        end = pos + 8 + count * DTYPE_ITEMSIZE.get(storage.dtype, 1)
        if pos + 8 > len(payload) or count != storage.numel or end > len(payload):
            raise TorchRefuses(
                path,
                f"torch.load refuses the file: a nested torch.save stream's storage "
                f"{storage.key!r} has {storage.numel} elements, and its record "
                + ("is cut short" if count == storage.numel else f"counts {count}"),
            )
        storage.data = payload[pos + 8 : end]
        pos = end
    unlisted = [s.key for s in storages if s.data is None]
    if unlisted:
        raise ReadMismatch(
            path,
            f"a nested torch.save stream leaves storage {shown(unlisted[0], 40)!r} out of its "
            "key list: torch gives that tensor whatever memory it is allocated",
        )


def read_inner_storage(outer: Machine, payload: bytes) -> Any:
    """Describe the storage held by a nested legacy stream, merging its globals into ``outer``.

    torch reads five pickles from the stream, all with a plain unpickler (``_load_from_bytes``
    calls ``torch.load(weights_only=False)``): the magic number, the protocol version, the system
    info, the object, and the list of storage keys. Each is interpreted here, so that code in
    any of them is seen.
    """
    depth = getattr(outer, "nesting", 0) + 1
    if depth > _MAX_NESTING:
        raise outer.error("nested torch.save streams go deeper than a real file ever does")
    if not is_legacy_stream(payload):
        raise outer.error("torch.storage._load_from_bytes holds no legacy torch.save stream")
    pos = 0
    value: Any = None
    names: Any = None
    storages: list[StorageRef] = []
    for step in range(5):  # magic, protocol version, system info, the object, the storage keys
        inner = Machine(
            payload,
            path=outer.path,
            limits=outer.limits,
            resolve=outer.resolve,
            persistent_load=_legacy_storage if step == 3 else None,
            start=pos,
        )
        inner.nesting = depth  # type: ignore[attr-defined]
        inner.storages = storages  # type: ignore[attr-defined]
        inner.items = outer.items
        inner.ops = outer.ops
        inner.copied = outer.copied
        try:
            loaded = inner.load()
        except ReadMismatch:
            raise  # torch's own refusal or reading, said as such
        except DumpError as exc:
            raise outer.error(f"nested torch.save stream: {exc.reason}") from None
        finally:
            # What the stream called before it ended or was refused is the file's, whatever
            # follows.
            outer.items = inner.items
            outer.ops = inner.ops
            outer.copied = inner.copied
            for name, allowed in inner.globals_seen.items():
                outer.globals_seen[name] = outer.globals_seen.get(name, False) or allowed
        pos = inner.pos
        if step == 3:
            value = loaded
        elif step == 4:
            names = loaded
    _attach_storage_bytes(outer.path, payload, pos, storages, names)
    return value
