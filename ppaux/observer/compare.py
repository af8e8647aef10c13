"""What the two paths produced, as records, and their comparison.

In the child, an auxiliary output, a host output or a request is walked into ``{path: leaf}``
(:func:`leaves`): ``.field`` for attributes (``__dict__``, dataclass fields, ``__slots__``),
``[key]`` for mappings, ``[i]`` for lists and tuples; a tensor, a number, a string or any other
object is a leaf. Each leaf becomes a record of plain data (:func:`record`): a tensor's dtype,
shape, strides, device, layout and the sha256 of its canonical bytes (with its first values);
any other value's qualified type name, a bounded text and the key it is compared by.

In the parent, :func:`differences` compares two walks record by record; it imports nothing
beyond the standard library. Equality is bitwise for tensors (a NaN equals a NaN in the same
place; -0.0 and 0.0 differ) and by value for the rest, a NaN float equal to a NaN.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from hashlib import sha256 as _sha256  # bound before any target's code can patch hashlib
from typing import Any

__all__ = ["Difference", "describe", "differences", "leaves", "record", "records"]

_SCALARS = (int, float, complex, str, bytes, bool, type(None))
#: Walks stop this deep; anything deeper is one leaf.
MAX_DEPTH = 5
#: Containers longer than this are one leaf.
MAX_ITEMS = 256
#: The most characters of a value's text a record keeps (its key is a digest beyond that).
MAX_TEXT = 200
#: The rule each kind of leaf is compared by, named in the findings.
TENSOR_RULE = "bitwise: dtype, shape, device, layout and bytes; NaN equals NaN in the same place"
VALUE_RULE = "by value; NaN equals NaN"
#: A memory address in a repr ('<_thread.lock object at 0x7f3a...>'), not part of a value.
_ADDRESS = re.compile(r"\bat 0x[0-9a-fA-F]+|\b0x[0-9a-fA-F]{8,}\b")


@dataclass(frozen=True)
class Difference:
    """One leaf that differs: ``path`` (``.entropy``, ``.customized_info['scores'][0]``),
    ``what`` ('dtype', 'shape', 'device', 'layout', 'bits', 'value', 'type', 'missing',
    'extra'), and the two sides described."""

    path: str
    what: str
    left: str
    right: str


# ----------------------------------------------------------------------------------------------
# The child: walking and describing (torch, the target's objects)


def _fields(obj: Any) -> dict[str, Any] | None:
    found: dict[str, Any] = {}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        # Its declared fields, then whatever else the instance holds: an attribute set after
        # construction (in __post_init__, by after_sample, by consume on a request) is part of
        # what a path produced, and is compared too.
        found = {f.name: getattr(obj, f.name, None) for f in dataclasses.fields(obj)}
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


#: ``skip(path, a_list)``: how many leading items of the list at ``path`` :func:`leaves` leaves
#: out (described before, and taken as unchanged).
Skip = Callable[[str, list[Any]], int]

#: ``same(path, value)``: whether :func:`leaves` leaves out the plain value (exactly one of
#: :data:`_SCALARS`' types) at ``path``: the very object described there before, taken as
#: unchanged.
Same = Callable[[str, Any], bool]

_PLAIN = frozenset(_SCALARS)


def leaves(
    obj: Any,
    prefix: str = "",
    depth: int = 0,
    skip: Skip | None = None,
    same: Same | None = None,
) -> dict[str, Any]:
    """``{path: leaf}`` for ``obj`` (see the module's docstring). The target's own methods
    (``__getattribute__``, properties, ``__eq__``) may raise here: the caller says whose.

    With ``skip``, a list (exactly a ``list``) at a path leaves out its first ``skip(path,
    list)`` items: only the items after them are walked, and more than :data:`MAX_ITEMS` of
    them are one leaf ``path[start:]``; a list with nothing after them gives no leaf (nor does
    a holder whose every child gave none). With ``same``, a plain value for which
    ``same(path, value)`` is true gives no leaf either. Without them, every walk gives a
    leaf."""
    if isinstance(obj, _SCALARS) or depth >= MAX_DEPTH:
        if same is not None and type(obj) in _PLAIN and same(prefix, obj):
            return {}
        return {prefix: obj}
    import torch

    if isinstance(obj, torch.Tensor):
        return {prefix: obj}
    if isinstance(obj, dict):
        if len(obj) > MAX_ITEMS:
            return {prefix: obj}
        out: dict[str, Any] = {}
        walked = False
        for key, value in list(obj.items()):
            walked = True
            out.update(leaves(value, f"{prefix}[{_key_text(key)}]", depth + 1, skip, same))
        return out if out or walked else {prefix: obj}
    if isinstance(obj, (list, tuple)):
        if skip is not None and type(obj) is list:
            start = skip(prefix, obj)
            if start > 0:
                return _rest(obj, start, prefix, depth, skip, same)
        if len(obj) > MAX_ITEMS:
            return {prefix: obj}
        out = {}
        walked = False
        for index, value in enumerate(list(obj)):
            walked = True
            out.update(leaves(value, f"{prefix}[{index}]", depth + 1, skip, same))
        return out if out or walked else {prefix: obj}
    if type(obj).__module__ == "numpy":
        return {prefix: obj}
    fields = _fields(obj)
    if fields is None or (callable(obj) and not fields):
        return {prefix: obj}
    out = {}
    walked = False
    for name, value in fields.items():
        if name.startswith("__"):
            continue
        walked = True
        out.update(leaves(value, f"{prefix}.{name}", depth + 1, skip, same))
    # A child that gave nothing was skipped (see above), not empty: it left no leaf, and
    # neither does its holder.
    return out if out or walked else {prefix: obj}


def _rest(
    items: list[Any],
    start: int,
    prefix: str,
    depth: int,
    skip: Skip | None,
    same: Same | None = None,
) -> dict[str, Any]:
    """The leaves of ``items[start:]`` (see :func:`leaves`): the cost is theirs alone."""
    rest = items[start:]
    if len(rest) > MAX_ITEMS:
        return {f"{prefix}[{start}:]": rest}
    out: dict[str, Any] = {}
    for index, value in enumerate(rest, start):
        out.update(leaves(value, f"{prefix}[{index}]", depth + 1, skip, same))
    return out


def _key_text(key: Any) -> str:
    if isinstance(key, (str, int, float, bool, type(None))):
        return repr(key)
    return repr(key)[:MAX_TEXT]


def _qualname(value: Any) -> str:
    klass = type(value)
    module = getattr(klass, "__module__", "") or ""
    name = getattr(klass, "__qualname__", klass.__name__)
    return name if module == "builtins" else f"{module}.{name}"


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 3] + "..."


#: Elements hashed at a time where a tensor must be copied first (not contiguous, not on the
#: host): the copy a digest makes is at most this many elements, whatever the tensor's size.
_CHUNK = 1 << 20


def _digest_into(digest: Any, tensor: Any) -> None:
    """Feed ``digest`` the tensor's bytes, flat, in row-major order: read in place where the
    tensor is a contiguous host tensor, else copied to the host a chunk at a time."""
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
    flat = tensor.detach().reshape(-1)
    if flat.dtype == torch.bool:
        flat = flat.to(torch.uint8)
    size = flat.element_size()
    for start in range(0, flat.numel(), _CHUNK):
        chunk = flat[start : start + _CHUNK]
        if chunk.device.type != "cpu" or not chunk.is_contiguous():
            fresh = torch.empty(chunk.shape, dtype=chunk.dtype, device="cpu")
            fresh.copy_(chunk)
            chunk = fresh
        # The chunk's memory as a buffer (no copy); it is alive while ``chunk`` is.
        digest.update((ctypes.c_char * (chunk.numel() * size)).from_address(chunk.data_ptr()))


def _tensor_digest(tensor: Any) -> str:
    """sha256 of the tensor's canonical bytes (see :func:`_digest_into`)."""
    digest = _sha256()
    _digest_into(digest, tensor)
    return digest.hexdigest()


def _first_values(tensor: Any) -> str:
    import torch

    flat = tensor.detach()
    if flat.is_nested:
        return "[nested]"
    if flat.layout != torch.strided:
        flat = flat.to_dense()
    if flat.is_quantized:
        flat = flat.dequantize()
    values = flat.reshape(-1)[:6].cpu().tolist()
    more = ", ..." if tensor.numel() > 6 else ""
    shown = (f"{v:g}" if isinstance(v, float) else str(v) for v in values)
    return "[" + ", ".join(shown) + more + "]"


def _quantization(tensor: Any) -> str | None:
    import torch

    if not tensor.is_quantized:
        return None
    scheme = tensor.qscheme()
    if scheme in (torch.per_tensor_affine, torch.per_tensor_symmetric):
        return repr((str(scheme), tensor.q_scale(), tensor.q_zero_point()))
    return repr(
        (
            str(scheme),
            tensor.q_per_channel_axis(),
            tensor.q_per_channel_scales().tolist(),
            tensor.q_per_channel_zero_points().tolist(),
        )
    )


def _tensor_record(tensor: Any) -> dict[str, Any]:
    import torch

    layout = str(tensor.layout).removeprefix("torch.")
    nested = bool(tensor.is_nested)
    try:
        strides = list(tensor.stride()) if tensor.layout == torch.strided and not nested else None
    except RuntimeError:
        strides = None
    shape = None if nested else list(tensor.shape)
    return {
        "kind": "tensor",
        "dtype": str(tensor.dtype).removeprefix("torch."),
        "shape": shape,
        "strides": strides,
        "device": str(tensor.device),
        "layout": "nested" if nested else layout,
        "quantization": _quantization(tensor),
        "sha256": _tensor_digest(tensor),
        "values": _first_values(tensor),
    }


def _value_key(value: Any, text: str) -> str:
    if isinstance(value, float):
        return "nan" if math.isnan(value) else repr(0.0 if value == 0 else value)
    if isinstance(value, complex):
        return repr(complex(*("nan" if math.isnan(p) else p for p in (value.real, value.imag))))
    if isinstance(value, (bool, int, type(None))):
        return repr(value)
    if not isinstance(value, (str, bytes)):
        # The default repr of an object (a lock, a generator, an observer) names its address,
        # which two paths never share: the same object state must compare equal.
        text = _ADDRESS.sub("0x?", text)
    return "sha256:" + _sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


#: Records of plain values (exactly ``int``, ``bool``, ``None``, a ``str`` of at most
#: :data:`_KEPT_TEXT` characters, ``float``) already made, by type and value: a request's
#: fields hold the same few values at every step. Such a value's record depends on nothing but
#: its type and its value (no method of the target's runs for it), and a record is never
#: changed once made. At most :data:`_KEPT_RECORDS` are kept; then the memo starts again.
_MADE: dict[tuple[type, Any], dict[str, Any]] = {}
_KEPT_RECORDS = 4096
_KEPT_TEXT = 256


def _plain_key(value: Any) -> tuple[type, Any] | None:
    """The memo's key for ``value``, or None when its record is made afresh each time."""
    kind = type(value)
    if kind is float:
        # hex() tells -0.0 from 0.0 and every NaN from a number, where == would not.
        return (kind, value.hex())
    if kind is int or kind is bool or value is None:
        return (kind, value)
    if kind is str and len(value) <= _KEPT_TEXT:
        return (kind, value)
    return None


def record(value: Any) -> dict[str, Any]:
    """A leaf as plain data: see the module's docstring. ``repr`` of a non-tensor leaf runs its
    own ``__repr__``, which may raise (the caller says whose failure that is)."""
    key = _plain_key(value)
    if key is not None:
        made = _MADE.get(key)
        if made is None:
            if len(_MADE) >= _KEPT_RECORDS:
                _MADE.clear()
            made = _MADE[key] = _made(value)
        return made
    return _made(value)


def _made(value: Any) -> dict[str, Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return _tensor_record(value)
    text = value if isinstance(value, str) else repr(value)
    if not isinstance(text, str):
        raise TypeError(f"__repr__ returned {type(text).__name__}, not str")
    return {
        "kind": "value",
        "type": _qualname(value),
        "text": _cut(repr(value) if isinstance(value, str) else text),
        "key": _value_key(value, text),
    }


def records(
    obj: Any, skip: Skip | None = None, same: Same | None = None
) -> dict[str, dict[str, Any]]:
    """``{path: record}`` of ``obj``'s leaves (``skip`` and ``same``: see :func:`leaves`)."""
    return {path: record(value) for path, value in leaves(obj, skip=skip, same=same).items()}


# ----------------------------------------------------------------------------------------------
# The parent: comparing records (pure)


def describe(item: dict[str, Any]) -> str:
    """A short description of a record: 'float32 (4,) cpu', 'float 0.5'."""
    if item.get("kind") == "tensor":
        shape = "nested" if item.get("shape") is None else str(tuple(item["shape"]))
        layout = "" if item.get("layout") == "strided" else f" {item.get('layout')}"
        return f"{item.get('dtype')} {shape} {item.get('device')}{layout}"
    kind = str(item.get("type", "?")).rpartition(".")[2]
    return f"{kind} {_cut(str(item.get('text', '')))[:80]}"


def _tensor_difference(path: str, a: dict[str, Any], b: dict[str, Any]) -> Difference | None:
    for what in ("dtype", "shape", "device", "layout"):
        if a.get(what) != b.get(what):
            return Difference(path, what, describe(a), describe(b))
    if a.get("quantization") != b.get("quantization"):
        return Difference(
            path,
            "quantization",
            f"{describe(a)} {a.get('quantization')}",
            f"{describe(b)} {b.get('quantization')}",
        )
    if a.get("sha256") != b.get("sha256"):
        return Difference(
            path, "bits", f"{describe(a)} {a.get('values')}", f"{describe(b)} {b.get('values')}"
        )
    return None


def differences(
    left: dict[str, dict[str, Any]], right: dict[str, dict[str, Any]]
) -> list[Difference]:
    """Every leaf that differs between two walks' records, in ``left``'s order, then
    ``right``'s extras."""
    found: list[Difference] = []
    for path, a in left.items():
        if path not in right:
            found.append(Difference(path, "missing", describe(a), "absent"))
            continue
        b = right[path]
        tensors = (a.get("kind") == "tensor", b.get("kind") == "tensor")
        if all(tensors):
            item = _tensor_difference(path, a, b)
            if item is not None:
                found.append(item)
        elif any(tensors) or a.get("type") != b.get("type"):
            found.append(Difference(path, "type", describe(a), describe(b)))
        elif a.get("key") != b.get("key"):
            found.append(Difference(path, "value", describe(a), describe(b)))
    for path, b in right.items():
        if path not in left:
            found.append(Difference(path, "extra", "absent", describe(b)))
    return found
