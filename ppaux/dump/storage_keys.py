"""What ``torch.save`` writes in a persistent id: the keys it numbers storages with, and the
same storage class, location and size each time a key comes back (the rest of the pickle is
:mod:`ppaux.dump.grammar`)."""

from __future__ import annotations

__all__ = ["storage_key_deviation"]


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
    if not isinstance(key, str) or not 0 < len(key) <= 20 or not key.isascii():
        return "storage key is not a decimal string of at most 20 digits"
    if not key.isdigit():
        return "storage key is not a decimal string"
    if str(int(key)) != key:
        return f"storage key {key!r} is not written as torch.save numbers storages"
    if int(key) > known:
        return f"storage key {key!r} where torch.save writes {str(known)!r} (the next)"
    return None
