"""What ``torch.save`` writes in a persistent id: the storage classes it names and the keys it
numbers storages with (the rest of the pickle is :mod:`ppaux.dump.grammar`)."""

from __future__ import annotations

__all__ = ["STORAGE_TYPES", "storage_key_deviation"]

#: The storage classes torch.save names in a persistent id (torch/storage.py, 2.13).
STORAGE_TYPES = frozenset(
    f"{kind}Storage"
    for kind in [
        "Double",
        "Float",
        "Half",
        "Long",
        "Int",
        "Short",
        "Char",
        "Byte",
        "Bool",
        "BFloat16",
        "ComplexDouble",
        "ComplexFloat",
        "QUInt8",
        "QInt8",
        "QInt32",
        "QUInt4x2",
        "QUInt2x4",
        "Bits1x8",
        "Bits2x4",
        "Bits4x2",
        "Bits8",
        "Bits16",
        "Float8_e5m2",
        "Float8_e4m3fn",
        "Float8_e5m2fnuz",
        "Float8_e4m3fnuz",
        "Untyped",
        "ComplexHalf",
        "UInt16",
        "UInt32",
        "UInt64",
        "Float8_e8m0fnu",
        "Float4_e2m1fn_x2",
    ]
)


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
