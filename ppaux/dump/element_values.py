"""The elements of a small dense tensor, read from its storage's bytes as torch.load reads them.

The checks of a packed tensor's index values (:mod:`ppaux.dump.packed_values`) need the values
of its index tensors: a sparse tensor's indices, a nested tensor's sizes, strides and offsets,
a per-channel quantized tensor's zero points. Each is read from the storage record it views (a
torch.save zip) or the bytes a legacy file keeps, in the file's byte order, element by element
in the tensor's view order. Reading is bounded: past :data:`MAX_ELEMENT_BYTES` in all for one
file, a tensor's values are not read and :attr:`ElementReader.over` says so.
"""

from __future__ import annotations

import array
import itertools

from ppaux.dump.model import DTYPE_ITEMSIZE, StorageRef, TensorRef
from ppaux.dump.records import RecordReader, torch_byteorder
from ppaux.errors import DumpError

__all__ = ["MAX_ELEMENT_BYTES", "ElementReader"]

#: Bytes of index values read for one file, in all (about two million int64 values).
MAX_ELEMENT_BYTES = 16 << 20

#: The array type code of each dtype whose values are read, by the dtype's element size.
_CODES = {
    "int64": "q",
    "int32": "i",
    "int16": "h",
    "int8": "b",
    "uint8": "B",
    "float64": "d",
    "float32": "f",
}


class ElementReader:
    """Values of dense tensors of one file; ``records`` is its zip's records (None for a file
    whose storages keep their bytes)."""

    def __init__(self, records: RecordReader | None, budget: int = MAX_ELEMENT_BYTES) -> None:
        self._records = records
        self._budget = budget
        self._big: bool | None = None
        #: Whether a tensor's values were left unread: past the budget.
        self.over = False

    def values(self, tensor: object) -> list[int] | list[float] | None:
        """``tensor``'s elements in its view order (row-major over its shape); None where it
        is not a dense tensor of a dtype read here, views past its storage, or its bytes are
        not there (other checks name those)."""
        if not isinstance(tensor, TensorRef) or tensor.kind != "dense":
            return None
        storage, code = tensor.storage, _CODES.get(tensor.dtype)
        if storage is None or code is None or tensor.stride is None:
            return None
        if len(tensor.stride) != len(tensor.shape) or any(s < 0 for s in tensor.stride):
            return None
        if tensor.numel == 0:
            return []
        item = DTYPE_ITEMSIZE[tensor.dtype]
        span = 1 + sum((n - 1) * s for n, s in zip(tensor.shape, tensor.stride, strict=True))
        start, end = tensor.offset * item, (tensor.offset + span) * item
        if end - start > self._budget:
            self.over = True
            return None
        self._budget -= end - start
        data = self._bytes(storage, start, end)
        if data is None:
            return None
        flat = array.array(code)
        flat.frombytes(data)
        if self._big_endian():
            flat.byteswap()
        if _contiguous(tensor.shape, tensor.stride):
            return flat.tolist()
        ranges = [range(n) for n in tensor.shape]
        return [
            flat[sum(i * s for i, s in zip(at, tensor.stride, strict=True))]
            for at in itertools.product(*ranges)
        ]

    def _bytes(self, storage: StorageRef, start: int, end: int) -> bytes | None:
        if storage.data is not None:
            data = bytes(storage.data[start:end])
            return data if len(data) == end - start else None
        if self._records is None or storage.record is None:
            return None
        record = self._records.find_full(storage.record)
        if record is None or record.file_size < end:
            return None
        try:
            return b"".join(self._records.blocks(record, start, end))
        except DumpError:
            return None

    def _big_endian(self) -> bool:
        if self._big is None:
            self._big = False
            order = self._records.find("byteorder") if self._records is not None else None
            if order is not None and self._records is not None:
                try:
                    text = b"".join(self._records.blocks(order, 0, min(order.file_size, 16)))
                except DumpError:
                    text = None
                self._big = torch_byteorder(text)[0] == "big"
        return self._big


def _contiguous(shape: tuple[int, ...], stride: tuple[int, ...]) -> bool:
    expected = 1
    for size, step in zip(reversed(shape), reversed(stride), strict=True):
        if size != 1 and step != expected:
            return False
        expected *= size
    return True
