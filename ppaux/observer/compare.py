"""What the two paths produced, taken apart into named leaves and compared.

An auxiliary output, a host output or a request is walked into ``{path: leaf}``: ``.field``
for attributes (``__dict__``, dataclass fields, ``__slots__``), ``[key]`` for mappings, ``[i]``
for lists and tuples; a tensor, a number, a string or any other object is a leaf. Two walks are
compared leaf by leaf, tensors by dtype, shape, device, layout and bits. Imports torch when used.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from typing import Any

__all__ = ["Difference", "describe", "differences", "leaves", "snapshot"]

_SCALARS = (int, float, complex, str, bytes, bool, type(None))
#: Walks stop this deep; anything deeper is one leaf.
MAX_DEPTH = 5
#: Containers longer than this are one leaf.
MAX_ITEMS = 256


@dataclass(frozen=True)
class Difference:
    """One leaf that differs: ``path`` (``.entropy``, ``.customized_info['scores'][0]``),
    ``what`` ('dtype', 'shape', 'device', 'layout', 'bits', 'value', 'type', 'missing',
    'extra'), and the two sides described."""

    path: str
    what: str
    left: str
    right: str


def _fields(obj: Any) -> dict[str, Any] | None:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name, None) for f in dataclasses.fields(obj)}
    found: dict[str, Any] = {}
    slots = [
        name
        for klass in type(obj).__mro__
        for name in getattr(klass, "__slots__", ())
        if isinstance(name, str) and name not in ("__dict__", "__weakref__")
    ]
    for name in slots:
        if hasattr(obj, name):
            found[name] = getattr(obj, name)
    if hasattr(obj, "__dict__") and isinstance(vars(obj), dict):
        found.update(vars(obj))
    return found if found or slots or hasattr(obj, "__dict__") else None


def leaves(obj: Any, prefix: str = "", depth: int = 0) -> dict[str, Any]:
    """``{path: leaf}`` for ``obj`` (see the module's docstring)."""
    import torch

    if isinstance(obj, (torch.Tensor, _SCALARS)) or depth >= MAX_DEPTH:
        return {prefix: obj}
    if isinstance(obj, dict):
        if len(obj) > MAX_ITEMS:
            return {prefix: obj}
        out: dict[str, Any] = {}
        for key, value in obj.items():
            out.update(leaves(value, f"{prefix}[{key!r}]", depth + 1))
        return out or {prefix: obj}
    if isinstance(obj, (list, tuple)):
        if len(obj) > MAX_ITEMS:
            return {prefix: obj}
        out = {}
        for index, value in enumerate(obj):
            out.update(leaves(value, f"{prefix}[{index}]", depth + 1))
        return out or {prefix: obj}
    if type(obj).__module__ == "numpy":
        return {prefix: obj}
    fields = _fields(obj)
    if fields is None or (callable(obj) and not fields):
        return {prefix: obj}
    out = {}
    for name, value in fields.items():
        if name.startswith("__"):
            continue
        out.update(leaves(value, f"{prefix}.{name}", depth + 1))
    return out or {prefix: obj}


def snapshot(obj: Any) -> dict[str, Any]:
    """:func:`leaves` with every tensor cloned and every other leaf copied: what ``obj`` holds
    now, kept apart from later writes into its memory."""
    import torch

    out: dict[str, Any] = {}
    for path, value in leaves(obj).items():
        if isinstance(value, torch.Tensor):
            out[path] = value.detach().clone()
        else:
            try:
                out[path] = copy.deepcopy(value)
            except Exception:  # an object that cannot be copied is compared by its repr
                out[path] = _Repr(repr(value))
    return out


@dataclass(frozen=True)
class _Repr:
    text: str


def describe(value: Any) -> str:
    """A short description: 'float32 (4,) cpu' for a tensor, the type and repr otherwise."""
    import torch

    if isinstance(value, torch.Tensor):
        layout = (
            "" if value.layout == torch.strided else f" {str(value.layout).removeprefix('torch.')}"
        )
        shape = tuple(value.shape)
        dtype = str(value.dtype).removeprefix("torch.")
        return f"{dtype} {shape} {value.device}{layout}"
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{type(value).__name__} {text}"


def _values(tensor: Any) -> str:
    import torch

    flat = tensor.detach()
    if flat.layout != torch.strided:
        flat = flat.to_dense()
    flat = flat.reshape(-1)[:6].cpu().tolist()
    more = ", ..." if tensor.numel() > 6 else ""
    return "[" + ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in flat) + more + "]"


def _bits(tensor: Any) -> Any:
    """The tensor's bytes, flat, on the CPU (its values for bool and empty tensors).

    A fresh copy: ``contiguous()`` keeps a size-1 dimension's stride (a column of a (1, 2)
    matrix has stride 2 and is contiguous), which ``view(torch.uint8)`` refuses."""
    import torch

    if tensor.is_quantized:  # its integers; the parameters are compared apart
        tensor = tensor.int_repr()
    flat = tensor.reshape(-1)
    if not flat.numel() or flat.dtype == torch.bool:
        return flat.cpu()
    fresh = torch.empty(flat.shape, dtype=flat.dtype, device=flat.device).copy_(flat)
    return fresh.view(torch.uint8).cpu()


def _quantization(tensor: Any) -> tuple[Any, ...]:
    """A quantized tensor's scheme and parameters (scale and zero point, per tensor or per
    channel)."""
    import torch

    scheme = tensor.qscheme()
    if scheme in (torch.per_tensor_affine, torch.per_tensor_symmetric):
        return (scheme, tensor.q_scale(), tensor.q_zero_point())
    return (
        scheme,
        tensor.q_per_channel_axis(),
        tensor.q_per_channel_scales().tolist(),
        tensor.q_per_channel_zero_points().tolist(),
    )


def _tensor_difference(path: str, a: Any, b: Any) -> Difference | None:
    import torch

    if a.dtype != b.dtype:
        return Difference(path, "dtype", describe(a), describe(b))
    if tuple(a.shape) != tuple(b.shape):
        return Difference(path, "shape", describe(a), describe(b))
    if a.device != b.device:
        return Difference(path, "device", describe(a), describe(b))
    if a.layout != b.layout:
        return Difference(path, "layout", describe(a), describe(b))
    left = a.detach().to_dense() if a.layout != torch.strided else a.detach()
    right = b.detach().to_dense() if b.layout != torch.strided else b.detach()
    if left.is_quantized and _quantization(left) != _quantization(right):
        return Difference(
            path,
            "quantization",
            f"{describe(a)} {_quantization(left)}",
            f"{describe(b)} {_quantization(right)}",
        )
    same = torch.equal(_bits(left), _bits(right))
    if not same:
        return Difference(
            path, "bits", f"{describe(a)} {_values(a)}", f"{describe(b)} {_values(b)}"
        )
    return None


def _equal(a: Any, b: Any) -> bool:
    try:
        result = a == b
        if isinstance(result, bool):
            return result
        return bool(getattr(result, "all", lambda: result)())
    except Exception:  # objects that cannot be compared are compared by their repr
        return repr(a) == repr(b)


def differences(left: dict[str, Any], right: dict[str, Any]) -> list[Difference]:
    """Every leaf that differs between two walks, in ``left``'s order, then ``right``'s extras."""
    import torch

    found: list[Difference] = []
    for path, a in left.items():
        if path not in right:
            found.append(Difference(path, "missing", describe(a), "absent"))
            continue
        b = right[path]
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
            item = _tensor_difference(path, a, b)
            if item is not None:
                found.append(item)
        elif isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor) or type(a) is not type(b):
            found.append(Difference(path, "type", describe(a), describe(b)))
        elif not _equal(a, b):
            found.append(Difference(path, "value", describe(a), describe(b)))
    for path, b in right.items():
        if path not in left:
            found.append(Difference(path, "extra", "absent", describe(b)))
    return found
