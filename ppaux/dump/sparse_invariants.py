"""A sparse tensor's index values against the invariants torch checks them by.

torch 2.13's ``_rebuild_sparse_tensor`` (``torch/_utils.py``) builds a sparse tensor with
``check_invariants=False``, and ``torch.load`` checks it after unpickling only where
``torch.sparse.check_sparse_tensor_invariants`` is enabled (off by default): a file whose
indices break an invariant is read, and the tensor it gives fails or reads out of bounds when
used. torch.save writes the indices of a valid tensor, so each broken invariant is a
deviation, worded as torch's checks word it:

- COO (``_validate_sparse_coo_tensor_args``, ``aten/src/ATen/native/sparse/SparseTensor.cpp``):
  per sparse dimension, no negative index and none at or past the size; a tensor saved as
  coalesced has its indices sorted and distinct.
- CSR, CSC, BSR, BSC (``_validate_sparse_compressed_tensor_args``,
  ``aten/src/ATen/native/sparse/SparseCsrTensor.cpp``): the size divisible by the block
  size, one compressed index per compressed row (or column) and one more, one plain index per
  value; then per batch, the compressed indices start at 0, end at ``nnz`` and step by 0 to
  the plain dimension's count, the plain indices lie in that count and are sorted and distinct
  within each compressed row.

Each function gives torch's message for the first invariant broken, or None.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import pairwise
from typing import Any

from ppaux.dump.model import TensorRef

__all__ = ["compressed_names", "compressed_problem", "compressed_shape_problem", "coo_problem"]

#: Values of a tensor, or None where they are not read (see ElementReader.values).
Values = Callable[[object], "list[int] | list[float] | None"]

#: Per compressed layout: the names torch gives the compressed and plain indices and the
#: dimensions they count, and whether rows are compressed.
_NAMES = {
    "torch.sparse_csr": ("crow_indices", "col_indices", "rows", "columns", True),
    "torch.sparse_bsr": ("crow_indices", "col_indices", "rows", "columns", True),
    "torch.sparse_csc": ("ccol_indices", "row_indices", "columns", "rows", False),
    "torch.sparse_bsc": ("ccol_indices", "row_indices", "columns", "rows", False),
}
_BLOCKED = frozenset({"torch.sparse_bsr", "torch.sparse_bsc"})


def coo_problem(tensor: TensorRef, values_of: Values) -> str | None:
    """torch's message for the first COO invariant the saved indices break, or None."""
    parts = tensor.parts or {}
    indices = parts.get("indices")
    if not isinstance(indices, TensorRef) or indices.dtype != "int64":
        return None  # a deviation already
    flat = values_of(indices)
    if flat is None or len(indices.shape) != 2:
        return None
    sparse_dim, nnz = indices.shape
    if not nnz or sparse_dim > len(tensor.shape):
        return None
    rows = [flat[d * nnz : (d + 1) * nnz] for d in range(sparse_dim)]
    for dim, row in enumerate(rows):
        low, high = min(row), max(row)
        if low < 0:
            return f"found negative index {low} for dim {dim}"
        if high >= tensor.shape[dim]:
            return (
                f"size is inconsistent with indices: for dim {dim}, size is "
                f"{tensor.shape[dim]} but found index {high}"
            )
    if parts.get("coalesced") is True:
        columns = list(zip(*rows, strict=True))
        if any(a >= b for a, b in pairwise(columns)):
            return "cannot set is_coalesced to true if indices correspond to uncoalesced COO tensor"
    return None


def compressed_names(layout: str) -> tuple[str, str, str, str, bool]:
    """torch's names of a compressed layout's indices and of the dimensions they count."""
    return _NAMES[layout]


def compressed_shape_problem(
    layout: str, compressed: TensorRef, plain: TensorRef, values: TensorRef, size: Sequence[int]
) -> str | None:
    """torch's message for the first shape invariant of a compressed layout that the saved
    parts break (their dtypes and counts of dimensions already as torch.save writes them)."""
    cname, pname, cdim, _, rows_compressed = compressed_names(layout)
    batch = len(plain.shape) - 1
    block = (1, 1)
    if layout in _BLOCKED:
        if len(values.shape) < batch + 3:
            return None
        block = (values.shape[batch + 1], values.shape[batch + 2])
        for at in range(2):
            extent = size[batch + at] if batch + at < len(size) else None
            if extent is None:
                return None
            if block[at] == 0 or extent % block[at]:
                return (
                    f"tensor shape[{batch + at}] (={extent}) must be divisible with "
                    f"blocksize[{at}] (={block[at]}) as defined by values shape"
                )
    if len(size) < batch + 2:
        return None
    at = batch if rows_compressed else batch + 1
    count = size[at] // block[0 if rows_compressed else 1]
    if compressed.shape[-1] != count + 1:
        return (
            f"{cname}.shape[-1] must be equal to the number of {cdim} + 1 (={count + 1}), "
            f"but got {compressed.shape[-1]}"
        )
    nnz = values.shape[batch] if len(values.shape) > batch else None
    if nnz is not None and plain.shape[-1] != nnz:
        return (
            f"{pname}.shape[-1] must be equal to nnz (={nnz}) as defined by "
            f"values.shape[{batch}], but got {plain.shape[-1]}"
        )
    return None


def compressed_problem(tensor: TensorRef, values_of: Values) -> str | None:
    """torch's message for the first index invariant of a compressed layout that the saved
    indices break, or None (shapes are :func:`compressed_shape_problem`'s)."""
    parts = tensor.parts or {}
    compressed, plain, values = (
        parts.get(k) for k in ("compressed_indices", "plain_indices", "values")
    )
    if not all(isinstance(v, TensorRef) for v in (compressed, plain, values)):
        return None
    assert isinstance(compressed, TensorRef) and isinstance(plain, TensorRef)
    assert isinstance(values, TensorRef)
    cname, pname, _, _, rows_compressed = compressed_names(tensor.layout)
    batch = len(plain.shape) - 1
    if len(tensor.shape) < batch + 2 or len(values.shape) <= batch:
        return None
    block = values.shape[batch + 1 : batch + 3] if tensor.layout in _BLOCKED else (1, 1)
    extent = tensor.shape[batch + (1 if rows_compressed else 0)]
    nplain = extent // block[1 if rows_compressed else 0] if all(block) else 0
    if compressed.dtype != plain.dtype or plain.dtype not in ("int32", "int64"):
        return None  # a deviation already (torch's dtype check)
    cflat, pflat = values_of(compressed), values_of(plain)
    if cflat is None or pflat is None:
        return None
    clen, nnz = compressed.shape[-1], plain.shape[-1]
    batches = len(cflat) // clen if clen else 0
    rows = [cflat[b * clen : (b + 1) * clen] for b in range(batches)]
    plains = [pflat[b * nnz : (b + 1) * nnz] for b in range(batches)]
    return _index_problem(cname, pname, rows, plains, nnz, nplain, rows_compressed)


def _index_problem(
    cname: str,
    pname: str,
    rows: list[Any],
    plains: list[Any],
    nnz: int,
    nplain: int,
    rows_compressed: bool,
) -> str | None:
    """The invariants ``_validate_compressed_sparse_indices`` checks, in its order: the
    first and last compressed index of every batch, the range of every plain index, then row
    by row the step of the compressed indices and the order of that row's plain indices."""
    plain_count = "ncols" if rows_compressed else "nrows"
    if any(row and row[0] != 0 for row in rows):
        return f"`{cname}[..., 0] == 0` is not satisfied."
    if any(row and row[-1] != nnz for row in rows):
        return f"`{cname}[..., -1] == nnz` is not satisfied."
    if any(not 0 <= i < nplain for plain in plains for i in plain):
        return f"`0 <= {pname} < {plain_count}` is not satisfied."
    short = "nrows" if rows_compressed else "ncols"
    for row, plain in zip(rows, plains, strict=True):
        for a, b in pairwise(row):
            if not 0 <= b - a <= nplain:
                return (
                    f"`0 <= {cname}[..., 1:] - {cname}[..., :-1] <= {plain_count}` is not "
                    "satisfied."
                )
            piece = plain[a:b]
            if any(x >= y for x, y in pairwise(piece)):
                return (
                    f"`{pname}[..., {cname}[..., i - 1]:{cname}[..., i]] for all i = 1, ..., "
                    f"{short} are sorted and distinct along the last dimension values` is not "
                    "satisfied."
                )
    return None
