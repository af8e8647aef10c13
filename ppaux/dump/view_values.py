"""The values a conjugate or negative view reads, from the bytes it views, without torch.

torch.save keeps a view's bytes as they lie and records its bits (``{'conj': True}``,
``{'neg': True}``); torch.load sets the bits again, so the tensor reads its stored values
conjugated (the imaginary half of each element negated) or negated. :mod:`ppaux.dump.digests`
digests those values, so that a view and a tensor holding the values it reads compare equal.
Elements are taken in little-endian order (torch.save's, and the order a big-endian file's
storages are swapped to before this is applied).
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["resolver"]

#: Floating dtypes whose top bit is the sign, by element size: negating flips it.
_SIGNED_FLOATS = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
}

#: Complex dtypes: the size of each of its two halves (real, then imaginary).
_COMPLEX_HALVES = {"complex128": 8, "complex64": 4, "complex32": 2}

#: Integer dtypes (two's complement, or unsigned with wraparound): element size.
_INTEGERS = {
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint64": 8,
    "uint32": 4,
    "uint16": 2,
    "uint8": 1,
}


def _sign(size: int) -> bytes:
    """One little-endian element of ``size`` bytes with only its sign bit set."""
    return bytes(size - 1) + b"\x80"


def resolver(dtype: str, bits: tuple[str, ...]) -> tuple[int, Callable[[bytes], bytes]] | None:
    """(element size, function) turning whole elements of ``dtype`` into the values a view with
    ``bits`` reads; None where ppaux does not model that dtype's negation."""
    neg, conj = "neg" in bits, "conj" in bits
    if dtype in _COMPLEX_HALVES:
        half = _COMPLEX_HALVES[dtype]
        real, imaginary = (
            _sign(half) if neg else bytes(half),
            _sign(half) if neg != conj else bytes(half),
        )
        return 2 * half, _flipping(real + imaginary)
    if conj:
        return None  # the reader refuses a conjugate bit on a real dtype, as torch does
    if not neg:
        return 1, bytes
    if dtype in _SIGNED_FLOATS:
        size = _SIGNED_FLOATS[dtype]
        return size, _flipping(_sign(size))
    if dtype in _INTEGERS:
        size = _INTEGERS[dtype]
        return size, _negating(size)
    return None


def _flipping(mask: bytes) -> Callable[[bytes], bytes]:
    unit = len(mask)

    def flip(data: bytes) -> bytes:
        if not data or not any(mask):
            return bytes(data)
        pattern = int.from_bytes(mask * (len(data) // unit), "little")
        return (int.from_bytes(data, "little") ^ pattern).to_bytes(len(data), "little")

    return flip


def _negating(size: int) -> Callable[[bytes], bytes]:
    modulus = 1 << (8 * size)

    def negate(data: bytes) -> bytes:
        return b"".join(
            ((modulus - int.from_bytes(data[i : i + size], "little")) % modulus).to_bytes(
                size, "little"
            )
            for i in range(0, len(data), size)
        )

    return negate
