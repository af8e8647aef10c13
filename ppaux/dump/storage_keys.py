"""What ``torch.save`` writes in a persistent id: the keys it numbers storages with, and the
same storage class, location and size each time a key comes back (the rest of the pickle is
:mod:`ppaux.dump.grammar`)."""

from __future__ import annotations

__all__ = ["ReadsAlike", "record_name", "storage_key_deviation"]


class ReadsAlike(str):
    """A reason a storage key is not as torch.save writes it, where torch reads the same
    record as ppaux (the finding is a warning)."""


def record_name(prefix: str, key: str) -> str:
    """The record torch reads for the storage ``key`` in an archive whose records are under
    ``prefix``: ``prefix/data/key``, up to the first NUL (torch's ``PyTorchStreamReader``
    looks a record up by the name's C string, torch 2.13 caffe2/serialize/inline_container.cc
    ``getRecordID``)."""
    return f"{prefix}/data/{key}".split("\x00", 1)[0]


def storage_key_deviation(
    pid: tuple[object, ...], known: int, first: tuple[object, ...] | None = None
) -> str | None:
    """Why a persistent id is not one torch.save writes, ``known`` storages having been
    met: its key is ``str(known)`` for a new storage, a decimal string for a seen one, and a
    seen key (``first``, the persistent id it was first written in) comes with the storage
    class, location and number of elements it came with then (one storage has one dtype, one
    device and one size)."""
    key = pid[2]
    if first is not None:
        if repr(first[1]) != repr(pid[1]):
            return f"storage key {key!r} written with {pid[1]!r}, first with {first[1]!r}"
        if first[3] != pid[3]:
            return f"storage key {key!r} written at location {pid[3]!r}, first at {first[3]!r}"
        if first[4] != pid[4]:
            return f"storage key {key!r} written with {pid[4]} elements, first with {first[4]}"
    if isinstance(key, str) and "\x00" in key:
        return ReadsAlike(
            f"storage key {key!r} holds a NUL, which torch.save never writes: torch looks its "
            f"record up by a C string, which ends there, and reads data/{key.split(chr(0))[0]}"
        )
    if not isinstance(key, str) or not 0 < len(key) <= 20 or not key.isascii():
        return "storage key is not a decimal string of at most 20 digits"
    if not key.isdigit():
        return "storage key is not a decimal string"
    if str(int(key)) != key:
        return f"storage key {key!r} is not written as torch.save numbers storages"
    if int(key) > known:
        return f"storage key {key!r} where torch.save writes {str(known)!r} (the next)"
    return None
