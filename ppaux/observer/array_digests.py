"""Digests of tensors, numpy arrays and buffers, and their first values as text (see
:mod:`ppaux.observer.digests`, whose words these follow): a tensor by the values torch gives
for it, a piece of at most :data:`_CHUNK` elements at a time, every NaN canonical; an array by
its bytes in C order; a ``memoryview`` or ``bytearray`` by its bytes.

Runs in the check's child; imports torch and numpy inside the functions that need them.
"""

from __future__ import annotations

from builtins import isinstance, len, repr, str  # noqa: UP029  (bound before the target loads)
from collections.abc import Callable, Iterator
from hashlib import sha256 as _sha256  # bound before any target's code can patch hashlib
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from hashlib import _Hash

    import numpy
    import torch

__all__ = [
    "array_digest",
    "array_values",
    "buffer_key",
    "buffer_text",
    "tensor_digest",
    "tensor_values",
]

#: Elements digested at a time where a piece must be copied first: the copy a digest makes is
#: at most this many elements, whatever the tensor's size.
_CHUNK = 1 << 20

#: What :func:`_pieces` cuts: a tensor or a numpy array.
_Array = TypeVar("_Array", "torch.Tensor", "numpy.ndarray[Any, Any]")


def _pieces(
    value: _Array, size: Callable[[_Array], int], contiguous: Callable[[_Array], bool]
) -> Iterator[_Array]:
    """``value``'s elements in row-major order, as pieces of at most :data:`_CHUNK` elements
    (views where ``value`` is contiguous, slabs along its first dimension where not)."""
    if size(value) == 0:
        return
    if len(value.shape) == 0 or contiguous(value):
        flat = value.reshape(-1)  # a view: contiguous, or one element
        for start in range(0, size(flat), _CHUNK):
            yield flat[start : start + _CHUNK]
        return
    row = size(value) // value.shape[0]
    if row > _CHUNK:
        for index in range(value.shape[0]):
            yield from _pieces(value[index], size, contiguous)
        return
    rows = max(1, _CHUNK // row)
    for start in range(0, value.shape[0], rows):
        yield value[start : start + rows]


def _int_type(torch: ModuleType, width: int) -> Any:
    return {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}.get(width)


def _host_piece(torch: ModuleType, piece: torch.Tensor) -> tuple[torch.Tensor, bool]:
    """The piece as a flat, contiguous host tensor of resolved values; whether it was copied."""
    owned = False
    if piece.is_conj() or piece.is_neg() or piece.device.type != "cpu" or not piece.is_contiguous():
        fresh = torch.empty(piece.shape, dtype=piece.dtype, device="cpu")
        fresh.copy_(piece)  # copy_ gives the values: conjugate and negative bits resolved
        piece, owned = fresh, True
    if piece.dtype == torch.bool:
        piece, owned = piece.to(torch.uint8), True
    flat = piece.reshape(-1)
    if not (flat.is_floating_point() or flat.is_complex()):
        return flat, owned
    values = torch.view_as_real(flat).reshape(-1) if flat.is_complex() else flat
    ints = _int_type(torch, values.element_size())
    mask = torch.isnan(values)
    if ints is None or not bool(mask.any()):
        return flat, owned
    if not owned:
        values = values.clone()
    # On the values' device by name, whatever default device the target set.
    canonical = torch.full((1,), float("nan"), dtype=values.dtype, device=values.device)
    canonical = canonical.view(ints)
    values.view(ints).masked_fill_(mask, canonical[0])
    return values, True


def tensor_digest(tensor: torch.Tensor) -> str:
    """sha256 of a tensor's values (see the module's docstring): a nested tensor's parts one
    after another, a sparse one's dense values, a quantized one's integers."""
    digest = _sha256()
    _digest_into(digest, tensor)
    return digest.hexdigest()


def _digest_into(digest: _Hash, tensor: torch.Tensor) -> None:
    import ctypes

    import torch

    if tensor.is_nested:
        for part in tensor.unbind():
            _digest_into(digest, part)
        return
    if tensor.layout != torch.strided:
        tensor = tensor.to_dense()
    if tensor.is_quantized:  # its integers; the parameters are compared apart
        tensor = tensor.int_repr()
    for piece in _pieces(tensor.detach(), lambda t: t.numel(), lambda t: t.is_contiguous()):
        flat, _ = _host_piece(torch, piece)
        # The piece's memory as a buffer (no copy); it is alive while ``flat`` is.
        length = flat.numel() * flat.element_size()
        if length:
            digest.update((ctypes.c_char * length).from_address(flat.data_ptr()))


def _float_text(value: float, width: int) -> str:
    """``value`` (read from a float of ``width`` bytes) in the fewest significant digits, six at
    least, that read back as the same value of that width: two values that differ never print
    alike (a float32's needs up to 9 digits, a float64's up to 17)."""
    import math
    import struct

    if not math.isfinite(value):
        return f"{value:g}"
    code = {4: "f", 8: "d"}.get(width)
    for digits in range(6, 18):
        text = f"{value:.{digits}g}"
        if code is None or struct.pack(code, float(text)) == struct.pack(code, value):
            return text  # a 16-bit float's 6 digits always read back as it
    return repr(value)


def _shown(values: list[Any], more: bool, width: int = 8) -> str:
    shown = (_float_text(v, width) if isinstance(v, float) else str(v) for v in values)
    return "[" + ", ".join(shown) + (", ..." if more else "") + "]"


def tensor_values(tensor: torch.Tensor) -> str:
    """The first values of a tensor, resolved, as text."""
    import torch

    flat = tensor.detach()
    if flat.is_nested:
        return "[nested]"
    if flat.layout != torch.strided:
        flat = flat.to_dense()
    if flat.is_quantized:
        flat = flat.dequantize()
    first = next(_pieces(flat, lambda t: t.numel(), lambda t: t.is_contiguous()), None)
    if first is None:
        return "[]"
    values = first.reshape(-1)[:6].resolve_conj().resolve_neg().cpu().tolist()
    width = first.element_size() // (2 if first.is_complex() else 1)
    return _shown(values, tensor.numel() > 6, width)


def array_digest(value: numpy.ndarray[Any, Any]) -> str:
    """sha256 of a numpy array's bytes in C order, every NaN canonical."""
    import numpy as np

    digest = _sha256()
    for piece in _pieces(value, lambda a: int(a.size), lambda a: bool(a.flags.c_contiguous)):
        flat = np.ascontiguousarray(piece).reshape(-1)
        owned = flat is not piece
        if flat.dtype.kind in "fc":
            values = flat.view(flat.real.dtype) if flat.dtype.kind == "c" else flat
            width = values.dtype.itemsize
            mask = np.isnan(values)
            if width in (2, 4, 8) and mask.any():
                if not owned:
                    values = values.copy()
                canonical = np.array([np.nan], dtype=values.dtype).view(f"u{width}")[0]
                values.view(f"u{width}")[mask] = canonical
                flat = values
        digest.update(flat.view(np.uint8).data)
    return digest.hexdigest()


def array_values(value: numpy.ndarray[Any, Any]) -> str:
    """The first values of a numpy array, as text."""
    width = int(value.dtype.itemsize) // (2 if value.dtype.kind == "c" else 1)
    return _shown(value.flat[:6].tolist(), int(value.size) > 6, width)


def _buffer_bytes(value: memoryview | bytearray) -> bytes | None:
    """A buffer's bytes in C order; None for a released ``memoryview``."""
    try:
        return value.tobytes() if isinstance(value, memoryview) else bytes(value)
    except ValueError:  # released: it holds nothing
        return None


def buffer_text(value: memoryview | bytearray) -> str:
    """A ``memoryview``'s or ``bytearray``'s text: its size and its first bytes."""
    data = _buffer_bytes(value)
    if data is None:
        return "released"
    return f"{len(data):,} bytes: {data[:64]!r}"


def buffer_key(value: memoryview | bytearray) -> str:
    """A ``memoryview``'s or ``bytearray``'s key: its format, shape and bytes."""
    data = _buffer_bytes(value)
    if data is None:
        return "released"
    head = f"{value.format} {value.shape} " if isinstance(value, memoryview) else ""
    return "sha256:" + _sha256(head.encode() + data).hexdigest()
