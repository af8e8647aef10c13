"""A storage's persistent id and record count in torch's legacy format (a legacy file's object
pickle, or the stream nested in ``torch.storage._load_from_bytes``), read as torch 2.13's legacy
loader (``_legacy_load``) reads them.

The writer's id is ``('storage', <torch.XStorage>, key, location, numel, None)`` with the key the
decimal text of an address and the location text. The loader asks less: it decodes a bytes tag
or location as ASCII, keeps one storage per key by Python equality (an int or bytes key works as
text does; ``1``, ``1.0`` and ``True`` are one key), and takes each record's element count
times the element size in int64, so a count that wraps to the storage's byte size is read as
that size. :func:`storage_id` returns what torch reads and, as notes, how the id differs from
the writer's where torch still reads it; it raises :class:`TorchRefuses` where torch refuses
and :class:`ReadMismatch` where torch reads something ppaux does not model.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, field
from typing import Any

from ppaux.dump.device_index import device_reading, device_refusal
from ppaux.dump.model import StorageType
from ppaux.dump.torch_reading import restorable
from ppaux.errors import ReadMismatch, TorchRefuses
from ppaux.text import cut

__all__ = ["LegacyId", "count_reads_as", "decoded_tag", "key_text", "storage_id"]

_INT64 = 2**64
#: Key types whose equality and hash ppaux's values share with torch's (one storage per key).
_KEY_TYPES = (str, bytes, int, float, type(None))


@dataclass
class LegacyId:
    """A storage id as torch reads it; ``notes`` say how it differs from the writer's."""

    storage_type: StorageType
    key: Any
    location: str
    numel: int
    notes: list[str] = field(default_factory=list)
    #: Whether a note says torch reads another value than the one written (a device index
    #: its parser cuts to another device).
    severe: bool = False


def key_text(key: object) -> str:
    """A storage key as shown in findings: text as it is, any other key as its repr."""
    if isinstance(key, str):
        return cut(key, 40)
    if isinstance(key, int) and key.bit_length() > 128:  # never turned into all its digits
        return f"<an int of {key.bit_length()} bits>"
    if isinstance(key, tuple):
        return f"<a tuple of {len(key)}>"
    return cut(repr(key)[:200], 40)


def decoded_tag(value: object) -> Any:
    """A persistent id's tag as torch's loader reads it (bytes decoded as ASCII)."""
    if isinstance(value, bytes) and value.isascii():
        return value.decode("ascii")
    return value


def count_reads_as(count: int, itemsize: int) -> int:
    """The byte size torch's record reader takes from an element count: the product in int64,
    wrapping as C++ does."""
    return (count * itemsize + 2**63) % _INT64 - 2**63


def _plain_key(key: object) -> bool:
    if isinstance(key, tuple):
        return all(_plain_key(part) for part in key)
    return isinstance(key, _KEY_TYPES)


def storage_id(
    path: str, where: str, pid: Sequence[object], refuses: str, known: Container[object]
) -> LegacyId:
    """Read ``pid`` (a persistent id whose tag is 'storage') as torch's legacy loader does.

    ``where`` places it in findings ('byte 341'); ``refuses`` opens a refusal ('torch.load
    refuses the file'); ``known`` holds the keys met before (by torch's equality)."""

    def refused(why: str) -> TorchRefuses:
        return TorchRefuses(path, f"{refuses}: {where}: {why}")

    if len(pid) != 6:
        # torch unpacks the id after its tag into five names.
        raise refused(
            f"a storage id of {len(pid)} fields, not 6 (torch: too many or too few "
            "values to unpack)"
        )
    _, storage_type, key, location, numel, view = pid
    notes: list[str] = []
    severe = False
    if not isinstance(pid[0], str):
        notes.append("the storage id's tag is bytes, which torch decodes as ASCII")
    if isinstance(location, bytes):
        if not location.isascii():
            raise refused(
                f"storage location {cut(repr(location), 200)} is not ASCII "
                "(torch: UnicodeDecodeError)"
            )
        notes.append(
            f"storage location {cut(repr(location), 200)} is bytes, which torch decodes as ASCII"
        )
        location = location.decode("ascii")
    if not isinstance(storage_type, StorageType):
        raise ReadMismatch(
            path,
            f"{where}: a storage id whose class is not a storage class, which ppaux does not read",
        )
    if isinstance(key, (list, dict, set, bytearray)):
        raise refused(
            f"storage key {key_text(key)} is a {type(key).__name__} (torch: unhashable type)"
        )
    if not _plain_key(key):
        raise ReadMismatch(
            path,
            f"{where}: a storage key of type {type(key).__name__}, which "
            "torch keeps by its own equality and ppaux does not read",
        )
    if not isinstance(key, str):
        notes.append(
            f"storage key {key_text(key)} is a {type(key).__name__}, not the decimal text of an "
            "address (torch keeps one storage per key by Python equality, as ppaux does)"
        )
    if key not in known:
        # A key met first makes the storage: torch allocates its size and restores its
        # location (a later id of that key gets the first storage, whatever it says).
        location, numel, severe = _first_met(location, numel, refused, notes)
    elif type(numel) is not int or not isinstance(location, str):
        raise ReadMismatch(
            path,
            f"{where}: storage key {key_text(key)} named again with a "
            "size or location ppaux does not read",
        )
    if view is not None:
        raise _view(path, where, refused, view, key)
    return LegacyId(storage_type, key, location, numel, notes, severe)


def _first_met(
    location: object, numel: object, refused: Callable[[str], TorchRefuses], notes: list[str]
) -> tuple[str, int, bool]:
    """Check a storage id whose key is met first, as torch allocates and restores it; a note
    where torch reads the location as another device. The location and size, and whether that
    note is severe."""
    severe = False
    if type(numel) is not int:
        raise refused(
            f"a storage size {cut(repr(numel), 80)} that is not an int (torch: "
            "UntypedStorage() expected a sequence type)"
        )
    if not 0 <= numel < 2**63:
        raise refused(f"a storage size of {numel} elements, which torch cannot allocate")
    if isinstance(location, str) and (why := device_refusal(location)) is not None:
        # restore_location parses the location as the zip reader's does (device_index).
        raise refused(f"storage location {cut(location, 200)} ({why})")
    if not isinstance(location, str) or not restorable(location):
        raise refused(
            f"no restore function for storage location {cut(location, 200)} (torch "
            "2.13 restores cpu, meta, mps, and cuda, hpu, xpu, mtia, privateuseone, alone "
            "or as NAME:N)"
        )
    read = device_reading(location)
    if read is not None:
        notes.append(
            f"storage location {cut(location, 200)}: torch's device parser cuts the index "
            f"to 8 signed bits and reads {read}"
        )
        severe = True
    return location, numel, severe


def _view(
    path: str, where: str, refused: Callable[[str], TorchRefuses], view: object, key: object
) -> ReadMismatch:
    """What torch 2.13 does with a view field the writer never writes: it unpacks it as
    (view key, offset, size) and gives the tensor a storage cut from bytes offset*itemsize to
    (offset+size)*itemsize of the first storage (a Python slice: clipped at its end, a negative
    offset counted from it), kept under the view key for every later id naming that key."""
    if isinstance(view, tuple) and len(view) != 3:
        return refused(
            f"a view field of {len(view)} values, not (key, offset, size) (torch: "
            "too many or too few values to unpack)"
        )
    if isinstance(view, tuple) and type(view[1]) is int and type(view[2]) is int:
        _, offset, size = view
        return ReadMismatch(
            path,
            f"{where}: a storage id with a view field (offset {offset}, {size} elements): "
            f"torch.load builds the tensor on a storage cut from elements {offset} to "
            f"{offset + size} of storage {key_text(key)} (clipped at its end, kept under view "
            f"key {key_text(view[0])}); the writer never writes one and ppaux does not read it",
        )
    return ReadMismatch(
        path,
        f"{where}: a storage id with a view field {cut(repr(view), 80)}, which torch.load "
        "unpacks as (view key, offset, size) and ppaux does not read; the writer never "
        "writes one",
    )
