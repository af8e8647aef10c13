"""A sparse tensor's layout and parts as torch.load checks them.

torch.save writes a sparse tensor as ``_rebuild_sparse_tensor(_get_layout(name), data)``:
``name`` is ``str(layout)`` (``'torch.sparse_coo'``, ...), ``data`` is ``(indices, values,
size, is_coalesced)`` for COO (indices a 2-d int64 tensor of ``sparse_dim`` rows and ``nnz``
columns, values of ``nnz`` rows) and ``(compressed_indices, plain_indices, values, size)`` for
the compressed layouts. torch 2.13's ``_get_layout`` (``torch/serialization.py``) refuses a name
that is not a layout's (KeyError); ``_rebuild_sparse_tensor`` (``torch/_utils.py``) refuses a
layout that is not sparse, another count of parts, and ``torch.sparse_coo_tensor`` a size whose
length is not ``sparse_dim + dense_dim``, values and indices of another ``nnz`` and an
``is_coalesced`` that is neither a bool nor None, in either of torch.load's modes: each is
refused here with torch's reason (PP117). What it reads but torch.save never writes is a
deviation (PP118).
"""

from __future__ import annotations

from typing import Any

from ppaux.dump.model import TensorRef
from ppaux.dump.pickle_vm import Machine
from ppaux.dump.sparse_invariants import compressed_names, compressed_shape_problem
from ppaux.errors import TorchRefuses

__all__ = ["TORCH_LAYOUTS", "check_compressed", "check_coo", "check_layout_name", "sparse_kind"]

#: The names ``_get_layout`` knows: ``str()`` of each ``torch.layout`` in torch 2.13's namespace.
TORCH_LAYOUTS = frozenset(
    {
        "torch.strided",
        "torch.sparse_coo",
        "torch.sparse_csr",
        "torch.sparse_csc",
        "torch.sparse_bsr",
        "torch.sparse_bsc",
        "torch._mkldnn",
        "torch.jagged",
    }
)
#: torch's C++ names of the index dtypes, as its checks print them.
_TORCH_NAMES = {
    "int64": "Long",
    "int32": "Int",
    "int16": "Short",
    "int8": "Char",
    "float32": "Float",
}
_COMPRESSED = frozenset(
    {"torch.sparse_csr", "torch.sparse_csc", "torch.sparse_bsr", "torch.sparse_bsc"}
)


def _refuse(m: Machine, why: str) -> TorchRefuses:
    return TorchRefuses(m.path, f"torch.load refuses the file: {why} (at byte {m.op_pos})")


def check_layout_name(m: Machine, name: str) -> None:
    """Refuse a name ``_get_layout`` has no layout for."""
    if name not in TORCH_LAYOUTS:
        shown = repr(name) if len(name) <= 80 else repr(name[:80]) + "..."
        raise _refuse(m, f"_get_layout has no layout named {shown} (KeyError)")


def sparse_kind(m: Machine, layout: str, data: object) -> bool:
    """True for COO, False for a compressed layout; refuses another layout or a count of
    parts ``_rebuild_sparse_tensor`` cannot unpack."""
    if layout != "torch.sparse_coo" and layout not in _COMPRESSED:
        raise _refuse(m, f"rebuilding sparse tensor for layout {layout[:80]} (NotImplementedError)")
    if not isinstance(data, (tuple, list)):
        raise m.error("sparse tensor data is not a tuple")
    if isinstance(data, list):
        m.deviate("sparse tensor data in a list, where torch.save writes a tuple", False)
    coo = layout == "torch.sparse_coo"
    counts = (3, 4) if coo else (4,)
    if len(data) not in counts:
        if len(data) > 4:
            why = "too many values to unpack (expected 4)"
        else:
            why = f"not enough values to unpack (expected {counts[-1]}, got {len(data)})"
        raise _refuse(m, why)
    return coo


def _tensor(value: object) -> TensorRef | None:
    return value if isinstance(value, TensorRef) and value.kind == "dense" else None


def check_coo(m: Machine, data: tuple[Any, ...] | list[Any], size: tuple[int, ...]) -> None:
    """What ``torch.sparse_coo_tensor(indices, values, size, check_invariants=False,
    is_coalesced=...)`` refuses, and what torch.save would not have written."""
    if len(data) == 3:
        m.deviate("sparse COO data without is_coalesced, which torch.save writes", False)
    coalesced = data[3] if len(data) == 4 else None
    if coalesced is not None and type(coalesced) is not bool:
        raise _refuse(
            m,
            "sparse_coo_tensor() received an invalid combination of arguments: is_coalesced "
            f"is a {type(coalesced).__name__}",
        )
    indices, values = _tensor(data[0]), _tensor(data[1])
    if indices is None or values is None or len(indices.shape) != 2 or not values.shape:
        m.deviate("sparse COO indices or values that are not the tensors torch.save writes")
        return
    sparse_dim, nnz = indices.shape
    dense_dim = len(values.shape) - 1
    if len(size) != sparse_dim + dense_dim:
        raise _refuse(
            m,
            f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(size)}, "
            f"sparse_dim = {sparse_dim}, dense_dim = {dense_dim}",
        )
    if values.shape[0] != nnz:
        raise _refuse(
            m,
            "indices and values must have same nnz, but got nnz from indices: "
            f"{nnz}, nnz from values: {values.shape[0]}",
        )
    if indices.dtype != "int64" or tuple(values.shape[1:]) != tuple(size[sparse_dim:]):
        m.deviate("sparse COO indices or values that are not the ones torch.save writes")


def check_compressed(
    m: Machine, layout: str, data: tuple[Any, ...] | list[Any], size: tuple[int, ...]
) -> None:
    """What torch.save would not have written for a compressed layout: indices of one integer
    dtype, as many compressed indices as the size has compressed rows (or columns) and one
    more, the plain indices as long as the values' count of entries (torch's words where its
    ``_validate_sparse_compressed_tensor_args`` words it)."""
    compressed, plain, values = (_tensor(v) for v in data[:3])
    if compressed is None or plain is None or values is None:
        m.deviate("sparse compressed parts that are not the tensors torch.save writes")
        return
    if compressed.dtype != plain.dtype:
        names = compressed_names(layout)
        words = [_TORCH_NAMES.get(v.dtype, v.dtype) for v in (compressed, plain)]
        m.deviate(
            f"sparse compressed indices of two dtypes (torch's invariant check: {names[0]} and "
            f"{names[1]} must have the same dtype, bot got {words[0]} and {words[1]}, "
            "respectively)"
        )
        return
    batch = len(plain.shape) - 1
    if (
        plain.dtype not in ("int32", "int64")
        or len(compressed.shape) != len(plain.shape)
        or not plain.shape
        or len(values.shape) <= batch
    ):
        m.deviate("sparse compressed indices or values that are not the ones torch.save writes")
        return
    problem = compressed_shape_problem(layout, compressed, plain, values, size)
    if problem is not None:
        m.deviate(
            f"a {layout} tensor whose parts torch's _validate_sparse_compressed_tensor_args "
            f"refuses ({problem}); torch.load reads it without checking, and the tensor fails "
            "or reads out of bounds where it is used"
        )
