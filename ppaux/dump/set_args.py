"""The storage offset, size and stride a tensor rebuild hands ``Tensor.set_``
(``torch._utils._rebuild_tensor``, which ``_rebuild_tensor_v2``, ``_v3`` and ``_rebuild_qtensor``
call, torch 2.x), checked as ``set_`` checks them: what ``set_`` refuses, torch.load refuses in
either mode (PP117), in torch's words. The tests compare each answer with torch's own ``set_``.
"""

from __future__ import annotations

__all__ = ["set_refusal", "set_strides"]

_INT64_END = 2**63
_UINT64_END = 2**64


def _int64(value: object) -> bool:
    # torch's argument parser takes a Python int (not a bool) that fits an int64.
    return type(value) is int and -_INT64_END <= value < _INT64_END


def _int_list(value: object) -> bool:
    return isinstance(value, (tuple, list)) and all(_int64(v) for v in value)


def _numel_overflows(size: tuple[int, ...] | list[int]) -> bool:
    """c10's count of elements: the sizes multiplied as unsigned 64-bit numbers, an overflow at
    any step (or a count past int64) refused. A negative size passes where a 0 before it (or
    only 1s) keep the product from overflowing: ``(0, -1)`` is taken, ``(2, -1)`` is not."""
    product, overflowed = 1, False
    for value in size:
        product *= value % _UINT64_END
        if product >= _UINT64_END:
            overflowed, product = True, product % _UINT64_END
    return overflowed or product >= _INT64_END


def set_refusal(offset: object, size: object, stride: object, max_dims: int) -> str | None:
    """Why ``Tensor.set_(storage, offset, size, stride)`` refuses these arguments, or None where
    it takes them (or where a length over ``max_dims`` is left to the reader's limit). The
    storage's bounds are checked elsewhere."""
    for value in (size, stride):
        if isinstance(value, (tuple, list)) and len(value) > max_dims:
            return None
    if not _int64(offset) or not _int_list(size) or not (stride is None or _int_list(stride)):
        return (
            "Tensor.set_ is given a storage offset, size or stride that is not an int64 or a "
            "tuple of int64s (set_() received an invalid combination of arguments)"
        )
    assert isinstance(offset, int) and isinstance(size, (tuple, list))
    if offset < 0:
        return f"Tensor: invalid storage offset {offset}"
    # Non-negative sizes past int64 elements are left to the view's reach (PP116).
    if any(v < 0 for v in size) and _numel_overflows(size):
        return (
            f"a tensor size {list(size)} whose count of elements overflows (numel: integer "
            "multiplication overflow)"
        )
    if stride is None or not stride:
        return None  # set_'s default stride: the contiguous one
    assert isinstance(stride, (tuple, list))
    if len(size) != len(stride):
        return f"unequal size length ({len(size)}) and stride length ({len(stride)})"
    if 0 not in size and any(n > 1 and s < 0 for n, s in zip(size, stride, strict=True)):
        return (
            f"Storage size calculation overflowed with sizes={list(size)} and "
            f"strides={list(stride)}"
        )
    return None


def set_strides(
    size: tuple[int, ...] | list[int], stride: tuple[int, ...] | list[int]
) -> tuple[int, ...]:
    """The strides ``Tensor.set_`` gives a tensor for arguments it takes: a negative stride
    (taken only on a dimension of at most one element, or in an empty tensor) is replaced, from
    the last dimension to the first, by 1 on the last and by the next dimension's stride times
    its size (at least 1) on the others, as c10's legacy ``setStorage`` does (torch 2.x); the
    tests compare it with torch's own."""
    strides = list(stride)
    for d in range(len(strides) - 1, -1, -1):
        if strides[d] < 0:
            strides[d] = 1 if d == len(strides) - 1 else strides[d + 1] * max(size[d + 1], 1)
    return tuple(strides)
