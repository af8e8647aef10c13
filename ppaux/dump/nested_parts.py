"""A strided nested tensor's parts as torch.save writes them and torch.load checks them.

torch 2.13's ``Tensor._reduce_ex_internal`` (``torch/_tensor.py``) writes a nested tensor of
the strided layout as ``_rebuild_nested_tensor(buffer, sizes, strides, offsets)``: the buffer
a 1-d tensor over the whole storage, ``sizes`` and ``strides`` int64 tensors of one row per
part and one column per dimension of a part, ``offsets`` an int64 tensor of one storage offset
per part. ``_rebuild_nested_tensor`` (``torch/_utils.py``) calls
``torch._nested_view_from_buffer``, whose checks (``aten/src/ATen/native/nested/
NestedTensorMath.cpp`` and ``NestedTensorImpl.cpp``) refuse, as INTERNAL ASSERTs or a dtype
error, whatever else: those are refused here with torch's message (PP117), in torch's order.
The values of sizes, strides and offsets are checked once the storages are known
(:mod:`ppaux.dump.packed_values`).
"""

from __future__ import annotations

from typing import Any

from ppaux.dump.model import TensorRef
from ppaux.dump.pickle_vm import Machine
from ppaux.errors import TorchRefuses

__all__ = ["check_nested_parts"]

_TORCH_DTYPE = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char"}


def _refuse(m: Machine, why: str) -> TorchRefuses:
    return TorchRefuses(
        m.path,
        f"torch.load refuses the file: _rebuild_nested_tensor: {why} (at byte {m.op_pos})",
    )


def _dtype_word(dtype: str) -> str:
    """torch's C++ name of a scalar type, as its 'expected scalar type' error prints it."""
    if dtype.startswith(("float", "bfloat", "complex")):
        return {"float32": "Float", "float64": "Double", "float16": "Half"}.get(dtype, dtype)
    return _TORCH_DTYPE.get(dtype, dtype)


def check_nested_parts(m: Machine, buffer: TensorRef, parts: tuple[Any, ...]) -> None:
    """Refuse what ``torch._nested_view_from_buffer`` refuses of the buffer and the sizes,
    strides and offsets tensors."""
    names = ("nested_size", "nested_strides", "offsets")
    for name, value in zip(names, parts, strict=True):
        if not isinstance(value, TensorRef) or value.kind != "dense":
            what = "a dense tensor" if isinstance(value, TensorRef) else type(value).__name__
            raise _refuse(m, f"_nested_view_from_buffer(): argument '{name}' is {what}")
    sizes, strides, offsets = parts
    if len(buffer.shape) != 1:
        raise _refuse(m, "buffer.dim() == 1 INTERNAL ASSERT FAILED (the input buffer must be flat)")
    if len(sizes.shape) != 2:
        raise _refuse(
            m,
            "nested_sizes.dim() == 2 INTERNAL ASSERT FAILED (expected the nested size tensor "
            "to be two-dimensional)",
        )
    if not strides.shape or sizes.shape[0] != strides.shape[0]:
        raise _refuse(m, "nested_sizes.size(0) == nested_strides.size(0) INTERNAL ASSERT FAILED")
    if not offsets.shape or strides.shape[0] != offsets.shape[0]:
        raise _refuse(m, "nested_strides.size(0) == storage_offsets.size(0) INTERNAL ASSERT FAILED")
    for value in (sizes, strides, offsets):
        if value.dtype != "int64":
            raise _refuse(m, f"expected scalar type Long but found {_dtype_word(value.dtype)}")
    if tuple(sizes.shape) != tuple(strides.shape):
        raise _refuse(m, "nested_sizes.sizes() == nested_strides.sizes() INTERNAL ASSERT FAILED")
    if len(offsets.shape) != 1:
        m.deviate("a strided nested tensor's offsets that are not the 1-d tensor torch.save writes")
