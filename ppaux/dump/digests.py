"""The bytes a dump's values stand for, read and hashed without torch: a tensor by a SHA-256
digest of the elements it views (read from its storage record a block at a time, in the
file's byte order; a conjugate or negative view by the values it reads, as torch.load gives
them), any other value by a digest of its parts. :mod:`ppaux.dump.diff` compares
two dumps by these digests.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from ppaux.dump.distinct import each_once
from ppaux.dump.model import DTYPE_ITEMSIZE, NdArrayRef, Opaque, StorageRef, TensorRef
from ppaux.dump.records import RecordReader, torch_byteorder
from ppaux.dump.structure import Dump
from ppaux.dump.view_values import resolver
from ppaux.errors import DumpError, PpauxError
from ppaux.limits import Limits

__all__ = ["BLOCK_BYTES", "NotCompared", "StorageRecords", "ValueDigests", "sha"]

#: Bytes read from a storage record at a time while digesting it.
BLOCK_BYTES = 1 << 20

#: Capture metadata fields that differ between any two captures and are not worth listing.


class NotCompared(PpauxError):
    """A value whose data ppaux cannot read safely; the message says why (it becomes PP608)."""


# ----------------------------------------------------------------------------------------------
# Reading storage bytes, lazily and in blocks


class StorageRecords:
    """Digests of byte ranges of one dump's storages, read a block at a time."""

    def __init__(self, dump: Dump) -> None:
        self.dump = dump
        self._reader: RecordReader | None = None
        self._big = False
        self._cache: dict[tuple[int, int, int, tuple[str, ...]], str] = {}

    def close(self) -> None:
        """Close the file, if it was opened."""
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def digest(self, storage: StorageRef, start: int, end: int, bits: tuple[str, ...] = ()) -> str:
        """SHA-256 of bytes ``start:end`` of ``storage``, read as a view with ``bits`` reads
        them (see :mod:`ppaux.dump.view_values`); :class:`NotCompared` if unreadable."""
        key = (id(storage), start, end, bits)
        known = self._cache.get(key)
        if known is not None:
            return known
        digest = hashlib.sha256()
        sink: Callable[[Any], Any] = digest.update
        if bits:
            resolve = resolver(storage.dtype, bits)
            if resolve is None:
                raise NotCompared(f"ppaux does not read a {'/'.join(bits)} view of {storage.dtype}")
            sink = _Whole(*resolve, digest.update)
        if storage.data is not None:
            if len(storage.data) < end:
                raise NotCompared(f"its storage holds {len(storage.data)} bytes, {end} needed")
            sink(storage.data[start:end])
        else:
            self._read(storage, start, end, sink)
        self._cache[key] = digest.hexdigest()
        return self._cache[key]

    def _read(
        self, storage: StorageRef, start: int, end: int, sink: Callable[[bytes], Any]
    ) -> None:
        if self.dump.container != "zip" or storage.record is None:
            raise NotCompared("the file keeps no data for it")
        # One reader of records for every command: found as torch finds them, streamed a
        # block at a time, every zip or zlib error one DumpError line.
        try:
            if self._reader is None:
                self._reader = RecordReader.open(self.dump.path, self.dump.record_prefix)
                order = self._reader.find("byteorder")
                text = None
                if order is not None:
                    text = b"".join(self._reader.blocks(order, 0, min(order.file_size, 16)))
                self._big = torch_byteorder(text)[0] == "big"
            info = self._reader.find_full(storage.record)
            if info is None:
                raise NotCompared(f"storage record {storage.record} is missing")
            blocks = self._reader.blocks(info, start, end, BLOCK_BYTES)
            unit = _swap_unit(storage.dtype) if self._big else 1
            if unit == 1:
                for block in blocks:
                    sink(block)
                return
            # torch swaps a big-endian file's storages to this machine's order as it loads
            # them: the digest is of the values torch holds, whatever order the file keeps.
            carry = b""
            for block in blocks:
                data = carry + block
                cut = len(data) - len(data) % unit
                sink(_swapped(data[:cut], unit))
                carry = data[cut:]
        except DumpError as exc:
            raise NotCompared(exc.reason) from None


class _Whole:
    """A sink that hands ``resolve`` whole elements of ``unit`` bytes, whatever the blocks."""

    def __init__(self, unit: int, resolve: Callable[[bytes], bytes], sink: Callable[[bytes], Any]):
        self.unit, self.resolve, self.sink = unit, resolve, sink
        self.carry = b""

    def __call__(self, block: bytes | memoryview) -> None:
        data = self.carry + bytes(block)
        cut = len(data) - len(data) % self.unit
        self.sink(self.resolve(data[:cut]))
        self.carry = data[cut:]


def _swap_unit(dtype: str) -> int:
    """Bytes torch swaps as one unit in a storage of ``dtype`` (each half of a complex)."""
    size = DTYPE_ITEMSIZE.get(dtype, 1)
    return size // 2 if dtype.startswith("complex") else size


def _swapped(data: bytes, unit: int) -> bytes:
    """``data`` with every ``unit``-byte element's bytes reversed."""
    import array

    codes = {2: "H", 4: "I", 8: "Q"}
    if unit in codes and array.array(codes[unit]).itemsize == unit:
        values = array.array(codes[unit])
        values.frombytes(data)
        values.byteswap()
        return values.tobytes()
    return b"".join(data[i : i + unit][::-1] for i in range(0, len(data), unit))


# ----------------------------------------------------------------------------------------------
# Digests of values


class ValueDigests:
    """Canonical digests of the reader's values: equal digests, equal values."""

    def __init__(self, records: StorageRecords, limits: Limits) -> None:
        self.records = records
        self.limits = limits
        self._memo: dict[int, str] = {}
        self._ints: dict[int, str] = {}  # an int's digest, by its value

    def digest(self, value: object) -> str:
        """The digest of ``value``; :class:`NotCompared` when part of it cannot be read."""
        return self._digest(value, 0, set())

    def tensor(self, ref: TensorRef) -> str:
        """SHA-256 of the bytes ``ref`` views, in storage order from its first element to its
        last (for sparse and quantized tensors, combined with their parts' digests)."""
        known = self._memo.get(id(ref))
        if known is not None:
            return known
        if ref.kind == "meta" or ref.device == "meta":
            data = sha("meta")
        elif ref.storage is not None and ref.kind in ("dense", "quantized"):
            itemsize = DTYPE_ITEMSIZE.get(ref.dtype, 1)
            stride = ref.stride or ()
            data = hashlib.sha256().hexdigest()
            if ref.numel:
                last = ref.offset + sum(
                    (size - 1) * step for size, step in zip(ref.shape, stride, strict=False)
                )
                data = self.records.digest(
                    ref.storage, ref.offset * itemsize, (last + 1) * itemsize, ref.bits
                )
        elif ref.kind == "dense":
            raise NotCompared("the file keeps no data for it")
        else:
            data = sha(ref.kind)
        if ref.parts:
            data = sha(
                data
                + ",".join(
                    f"{name}={self._digest(part, 1, set())}"
                    for name, part in sorted(ref.parts.items())
                )
            )
        self._memo[id(ref)] = data
        return data

    def _digest(self, value: object, depth: int, active: set[int]) -> str:
        if value.__class__ in _EMPTY and not value and depth <= self.limits.max_depth:
            return _EMPTY[value.__class__]  # what the steps below make of it, worked out once
        if isinstance(value, TensorRef):
            meta = f"T{value.dtype}{value.shape}{value.stride}{value.kind}{value.layout}"
            return sha(meta + self.tensor(value))
        if isinstance(value, bool):
            return _TRUE if value else _FALSE
        if isinstance(value, int):
            known = self._ints.get(value) if type(value) is int else None
            if known is None:
                known = sha(f"i{value:x}")
                if type(value) is int and len(self._ints) < _INTS_KEPT:
                    self._ints[value] = known
            return known
        if isinstance(value, float):
            return sha(f"f{value.hex()}")
        if isinstance(value, complex):
            return sha(f"c{value.real.hex()},{value.imag.hex()}")
        if isinstance(value, str):
            return sha("s" + value.encode("utf-8", "surrogatepass").hex())
        if isinstance(value, (bytes, bytearray)):
            return sha("y" + bytes(value).hex())
        if value is None:
            return _NONE
        known = self._memo.get(id(value))
        if known is not None:
            return known
        if id(value) in active:
            return sha("cycle")
        if depth > self.limits.max_depth:
            raise NotCompared(f"it nests deeper than max_depth={self.limits.max_depth}")
        active.add(id(value))
        try:
            parts = self._parts(value, depth, active)
        finally:
            active.discard(id(value))
        result = _joined_sha(f"{type(value).__name__}:", parts)
        self._memo[id(value)] = result
        return result

    def _parts(self, value: object, depth: int, active: set[int]) -> list[str]:
        def sub(item: object) -> str:
            return self._digest(item, depth + 1, active)

        if isinstance(value, (list, tuple)):
            return each_once(sub, value)
        if isinstance(value, dict):
            # Python's dict equality ignores order: so do the digests.
            keys = each_once(sub, value.keys())
            return sorted(map(str.__add__, keys, each_once(sub, value.values())))
        if isinstance(value, (set, frozenset)):
            return sorted(sub(v) for v in value)
        if isinstance(value, NdArrayRef):
            raise NotCompared("ppaux reads a numpy array's dtype and shape, never its data")
        if isinstance(value, Opaque):
            raise NotCompared(f"it holds a {value.name} object, whose class ppaux never imports")
        return [repr(value)]  # dtypes, storage types, globals: named, never imported


#: Digests of ints kept by value (a pickle repeats small ints, each its own object).
_INTS_KEPT = 1 << 16

#: Parts of a container's digest joined and hashed at a time: the text of all of them, 65
#: bytes a part, is never held whole.
_JOINED = 4096


def _joined_sha(head: str, parts: list[str]) -> str:
    """``sha(head + ",".join(parts))``, hashed a slice of parts at a time."""
    if len(parts) <= _JOINED:
        return sha(head + ",".join(parts))
    digest = hashlib.sha256(head.encode("utf-8", "surrogatepass"))
    for start in range(0, len(parts), _JOINED):
        text = ",".join(parts[start : start + _JOINED])
        digest.update((("," if start else "") + text).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


#: Digests of values a pickle may hold a million of, a byte each, worked out once.
_NONE, _TRUE, _FALSE = sha("n"), sha("bTrue"), sha("bFalse")
_EMPTY: dict[type, str] = {
    kind: _joined_sha(f"{kind.__name__}:", []) for kind in (list, dict, tuple, set, frozenset)
}


# ----------------------------------------------------------------------------------------------
# Comparing
