"""A quantized tensor's quantizer parameters and view as torch.load checks them.

torch.save writes a quantized tensor as ``_rebuild_qtensor(storage, offset, size, stride,
quantizer_params, requires_grad, hooks)``, ``quantizer_params`` being ``(qscheme, scale,
zero_point)`` (a float and an int) for ``per_tensor_affine`` and ``(qscheme, scales,
zero_points, axis)`` for the per-channel schemes (1-d tensors of ``size[axis]`` elements,
float64 and int64 for ``per_channel_affine``, float32 for both under
``per_channel_affine_float_qparams``). torch 2.13's ``_rebuild_qtensor``
(``torch/_utils.py``) refuses another qscheme, another count of parameters, an axis out of
the size's range, scales or zero points of another length, and a view past the storage's
end (``setStorage``), in either of torch.load's modes, and ``_empty_affine_quantized`` a
storage of a dtype that is not quantized: each is refused here with torch's reason (PP117).
What it reads but torch.save never writes is a deviation (PP118).
"""

from __future__ import annotations

from typing import Any

from ppaux.dump.model import TensorRef, TorchValue
from ppaux.dump.pickle_vm import Machine
from ppaux.dump.torch_reading import view_reach
from ppaux.errors import TorchRefuses

__all__ = ["check_quantized", "zero_point_problem"]

_PER_TENSOR = "torch.per_tensor_affine"
_QUANTIZED_DTYPES = frozenset({"qint8", "quint8", "qint32", "quint4x2", "quint2x4"})
#: The per-channel schemes, with the dtypes torch.save writes their scales and zero points in.
_PER_CHANNEL = {
    "torch.per_channel_affine": ("float64", "int64"),
    "torch.per_channel_affine_float_qparams": ("float32", "float32"),
}


#: The range of a zero point of each quantized dtype (torch 2.13's ``checkZeroPoint``).
ZERO_POINT_RANGE = {
    "quint8": (0, 255),
    "qint8": (-128, 127),
    "qint32": (-(2**31), 2**31 - 1),
    "quint4x2": (0, 15),
    "quint2x4": (0, 3),
}


def zero_point_problem(scheme: str, dtype: str, zero_point: int) -> str | None:
    """torch's message when a tensor of ``dtype`` with ``zero_point`` is dequantized (every
    use of its values), None where the zero point is in range."""
    low, high = ZERO_POINT_RANGE.get(dtype, (zero_point, zero_point))
    name = f"dequantize_tensor_{scheme}_affine"
    if zero_point > high:
        return f"{name} zero_point {zero_point} is above upper bound."
    if zero_point < low:
        return f"{name} zero_point {zero_point} is below lower bound."
    return None


def _refuse(m: Machine, why: str) -> TorchRefuses:
    return TorchRefuses(m.path, f"torch.load refuses the file: {why} (at byte {m.op_pos})")


def _unpack(m: Machine, params: tuple[Any, ...] | list[Any], count: int) -> None:
    if len(params) > count:
        raise _refuse(m, f"too many values to unpack (expected {count}, got {len(params)})")
    if len(params) < count:
        raise _refuse(m, f"not enough values to unpack (expected {count}, got {len(params)})")


def check_quantized(m: Machine, tensor: TensorRef, params: object) -> None:
    """Refuse what ``_rebuild_qtensor`` refuses for ``tensor`` (already set on its storage)
    and ``params``; record what it reads that torch.save never writes."""
    if not isinstance(params, (tuple, list)) or not params:
        m.deviate("quantizer parameters that are not the tuple torch.save writes")
        return
    if not isinstance(params, tuple):
        m.deviate("quantizer parameters in a list, where torch.save writes a tuple", False)
    qscheme = params[0]
    name = qscheme.name if isinstance(qscheme, TorchValue) else None
    if name == _PER_TENSOR:
        _unpack(m, params, 3)
        _check_per_tensor(m, params[1], params[2])
    elif name in _PER_CHANNEL:
        _unpack(m, params, 4)
        _check_per_channel(m, tensor, name, params)
    elif qscheme.__class__ is TorchValue or isinstance(qscheme, str):
        shown = name if name is not None else repr(qscheme)[:80]
        raise _refuse(m, f"Can't deserialize quantized tensor with qscheme {shown}")
    else:
        m.deviate("a quantized tensor's qscheme that is not a torch.qscheme")
        return
    if tensor.dtype not in _QUANTIZED_DTYPES:
        raise _refuse(
            m,
            f"a quantized tensor over a {tensor.dtype} storage (torch: Creation of quantized "
            "tensor requires quantized dtype like torch.quint8)",
        )
    reach = view_reach(tensor)
    if reach is not None:
        raise _refuse(m, f"a quantized tensor {reach} (torch: setStorage ... out of bounds)")
    if name == _PER_TENSOR and type(params[2]) is int:
        problem = zero_point_problem("per_tensor", tensor.dtype, params[2])
        if problem is not None:
            m.deviate(
                f"a quantized tensor whose zero point {params[2]} is out of range for "
                f"{tensor.dtype}; torch.load reads it without checking, and using its values "
                f"fails (torch: {problem})"
            )


def _check_per_tensor(m: Machine, scale: object, zero_point: object) -> None:
    if type(zero_point) in (float, bool):
        raise _refuse(
            m,
            "_empty_affine_quantized(): argument 'zero_point' must be int, not "
            f"{type(zero_point).__name__}",
        )
    if type(zero_point) is not int or type(scale) not in (float, int):
        m.deviate(
            "a quantized tensor's scale or zero point that is not the float and int "
            "torch.save writes"
        )
    elif type(scale) is int:
        m.deviate("a quantized tensor's scale as an int, where torch.save writes a float", False)


def _length(value: object) -> int | None:
    if isinstance(value, TensorRef) and value.kind == "dense":
        return value.numel
    if isinstance(value, list):
        return len(value)
    return None


def _check_per_channel(
    m: Machine, tensor: TensorRef, name: str, params: tuple[Any, ...] | list[Any]
) -> None:
    _, scales, zero_points, axis = params
    size = tensor.shape
    if type(axis) not in (int, bool):
        m.deviate("a quantized tensor's axis that is not an int")
        return
    if type(axis) is bool:
        m.deviate("a quantized tensor's axis as a bool, where torch.save writes an int")
    if not 0 <= axis < len(size):
        raise _refuse(
            m, f"_rebuild_qtensor: per_channel axis {axis} out of range for size {tuple(size)}"
        )
    expected = size[axis]
    scales_len, zero_points_len = _length(scales), _length(zero_points)
    if scales_len is None or zero_points_len is None:
        m.deviate(
            "a quantized tensor's scales or zero points that are not the tensors torch.save writes"
        )
        return
    if scales_len != expected or zero_points_len != expected:
        raise _refuse(
            m,
            "_rebuild_qtensor: per_channel scales/zero_points length must equal "
            f"size[axis]={expected}, got scales={scales_len}, zero_points={zero_points_len}",
        )
    if isinstance(scales, TensorRef) and len(scales.shape) != 1:
        raise _refuse(m, "scale tensor must have dimension 1")
    dtypes = tuple(getattr(v, "dtype", None) for v in (scales, zero_points))
    if dtypes != _PER_CHANNEL[name] or any(
        len(getattr(v, "shape", ())) != 1 for v in (scales, zero_points)
    ):
        m.deviate(
            f"a quantized tensor's scales and zero points that are not the 1-d "
            f"{' and '.join(_PER_CHANNEL[name])} tensors torch.save writes"
        )
