"""numpy arrays made torch tensors from the bytes numpy pickled: the dtype, byte order, shape and
order the pickle names, read without numpy (which never runs)."""

from __future__ import annotations

import math
import sys
from typing import Any

from ppaux.dump import DTYPE_ITEMSIZE, NUMPY_NAMES, NdArrayRef
from ppaux.text import cut

__all__ = ["numpy_problem", "numpy_tensor"]


def _numpy_layout(ref: NdArrayRef) -> tuple[str, int, bool]:
    """torch's dtype name, the item size and whether the bytes are big-endian, for ``ref``;
    :class:`ValueError` with the reason when ppaux does not convert it."""
    descr = ref.descr
    if ref.problem is not None:
        raise ValueError(ref.problem)
    if descr is None or ref.raw is None:
        if ref.dtype.startswith("object") or (descr is not None and descr.spec.startswith("O")):
            raise ValueError(
                "a numpy array of objects holds Python objects, not numbers, and ppaux never "
                "rebuilds objects; convert it where it is made, to numbers first"
            )
        raise ValueError("its pickled data is not the dtype and bytes numpy writes for an array")
    spec = descr.spec.lstrip("<>=|")
    name = NUMPY_NAMES.get(spec)
    if name is None or name not in DTYPE_ITEMSIZE:  # torch names it as numpy does, if it has it
        raise ValueError(
            f"numpy dtype {cut(descr.name, 40)} has no torch equivalent; convert it to numbers "
            "first"
        )
    # numpy takes the byte order from the dtype's pickled state (its __setstate__ overrides
    # what the spec said); only a dtype never given a state keeps its spec's.
    if descr.built:
        order = descr.byteorder
    else:
        order = descr.spec[0] if descr.spec[:1] in ("<", ">") else "="
    big = order == ">" or (order == "=" and sys.byteorder == "big")
    size = int(spec[1:])
    numel = math.prod(ref.shape)
    if len(ref.raw) != numel * size:
        raise ValueError(
            f"its data holds {len(ref.raw)} bytes, not the {numel * size} that its dtype and "
            f"shape {list(ref.shape)} need; numpy refuses it"
        )
    return name, size, big


def numpy_problem(ref: NdArrayRef) -> str | None:
    """Why the numpy array ``ref`` cannot be converted from its bytes, or None when it can."""
    try:
        _numpy_layout(ref)
    except ValueError as exc:
        return str(exc)
    return None


def numpy_tensor(ref: NdArrayRef) -> Any:
    """The tensor ``torch.tensor(array)`` gives for the numpy array ``ref``, built from the bytes
    numpy pickled (dtype, byte order, shape and order as the pickle names them), without numpy.
    """
    import torch

    name, size, big = _numpy_layout(ref)
    raw = ref.raw or b""
    dtype = getattr(torch, name)
    if not raw:
        return torch.empty(ref.shape, dtype=dtype)
    data = torch.frombuffer(bytearray(raw), dtype=torch.uint8)
    if big and size > 1:
        # Each number's bytes reversed; a complex number is two numbers of half the size.
        part = size // 2 if name.startswith("complex") else size
        data = data.view(-1, part).flip(1).reshape(-1)
    if name == "bool":
        flat = data != 0  # numpy reads any non-zero byte as True
    else:
        flat = data.view(dtype)
    if ref.fortran and len(ref.shape) > 1:
        # Column-major bytes: the reversed shape in row-major order, transposed back.
        dims = list(range(len(ref.shape)))[::-1]
        return flat.reshape(ref.shape[::-1]).permute(dims).contiguous()
    return flat.reshape(ref.shape).clone()
