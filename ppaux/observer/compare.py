"""What the two paths produced, as records, and their comparison.

In the child, an auxiliary output, a host output or a request is walked into ``{path: leaf}``
(:func:`~ppaux.observer.walk.leaves`, re-exported here). Each leaf becomes a record of plain data
(:func:`record`): a tensor's dtype, shape, strides, device, layout and the sha256 of its values
(with its first values); a numpy array's the same, of its bytes in C order; any other value's
qualified type name, a bounded text and the key it is compared by: a digest of its values for a
buffer and for a container or an object digested whole (see :mod:`.digests`), else its text. A
value that cannot be compared within the bounds (or whose text is only its address) has a record
that says *not compared* (:func:`uncompared`), and the report lists it.

In the parent, :func:`differences` compares two walks record by record; it imports nothing
beyond the standard library. Equality is bitwise for tensors (a NaN equals a NaN in the same
place; -0.0 and 0.0 differ) and by value for the rest, as Python's ``==`` has it (-0.0 equals
0.0 in a float and in each part of a complex; a dict's items in any order), a NaN equal to a
NaN.
"""

from __future__ import annotations

from builtins import isinstance, len, repr, str, type  # noqa: UP029  (bound before the target loads)
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ppaux.observer.digests import (
    ADDRESS,
    DECIMAL_BITS,
    Digests,
    NotCompared,
    array_digest,
    array_values,
    buffer_key,
    buffer_text,
    digest_bounds,
    int_text,
    is_array,
    only_address,
    plain_text,
    read_bound,
    tensor_digest,
    tensor_values,
    value_key,
)
from ppaux.observer.walk import (
    SCALARS,
    Same,
    Skip,
    fields_of,
    leaves,
)
from ppaux.suggestions import RaiseLimit

if TYPE_CHECKING:
    import numpy
    import torch

__all__ = [
    "Difference",
    "describe",
    "differences",
    "inside",
    "record",
    "records",
    "uncompared",
]

#: The most characters of a value's text a record keeps (its key is a digest beyond that).
MAX_TEXT = 200
#: The rule each kind of leaf is compared by, named in the findings.
TENSOR_RULE = (
    "bitwise: dtype, shape, device, layout and values (conjugate and negative views resolved); "
    "NaN equals NaN in the same place"
)
VALUE_RULE = (
    "by value, as Python's ==: -0.0 equals 0.0, a dict's order does not count; NaN equals NaN"
)
#: The key of a value that is not compared (its record's text says why).
NOT_COMPARED = "not compared"

#: What a tensor on the meta device gives for its values: it has none.
META_NO_DATA = "no data: on the meta device"


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


def _qualname(value: object) -> str:
    klass = type(value)
    module = getattr(klass, "__module__", "") or ""
    name = getattr(klass, "__qualname__", klass.__name__)
    return name if module == "builtins" else f"{module}.{name}"


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 3] + "..."


def _quantization(tensor: torch.Tensor) -> str | None:
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


def preview(value: object, depth: int = 0) -> str:
    """A short text of a value digested whole: its first few items, never the whole repr."""
    if isinstance(value, (str, bytes)):
        return repr(value[:40]) + ("..." if len(value) > 40 else "")
    if isinstance(value, int) and value.bit_length() > DECIMAL_BITS:
        return int_text(value)[:40]
    if isinstance(value, (int, float, complex, bool, type(None))):
        return repr(value)[:40]
    if isinstance(value, (list, tuple, dict)):
        brackets = {tuple: "()", dict: "{}"}.get(type(value), "[]")
        if depth >= 2:
            return f"{brackets[0]}...{brackets[1]}"
        if isinstance(value, dict):
            pairs = list(value.items())[:4]
            shown = [f"{preview(k, depth + 1)}: {preview(v, depth + 1)}" for k, v in pairs]
        else:
            shown = [preview(item, depth + 1) for item in list(value[:4])]
        more = ", ..." if len(value) > len(shown) else ""
        return brackets[0] + ", ".join(shown) + more + brackets[1]
    shape = getattr(value, "shape", None)
    return f"<{_qualname(value)}{' ' + str(tuple(shape)) if shape is not None else ''}>"


def _tensor_record(tensor: torch.Tensor) -> dict[str, Any]:
    import torch

    layout = str(tensor.layout).removeprefix("torch.")
    nested = bool(tensor.is_nested)
    try:
        strides = list(tensor.stride()) if tensor.layout == torch.strided and not nested else None
    except RuntimeError:
        strides = None
    shape = None if nested else list(tensor.shape)
    # A tensor on the meta device has a shape and no values: described by the rest alone, so
    # that the path that reads its values (copy_to_host, the wire) meets the failure sglang's
    # would.
    meta = bool(tensor.is_meta)
    if not meta:
        read_bound(int(tensor.numel()))  # past the bound: not compared (NotCompared)
    return {
        "kind": "tensor",
        "dtype": str(tensor.dtype).removeprefix("torch."),
        "shape": shape,
        "strides": strides,
        "device": str(tensor.device),
        "layout": "nested" if nested else layout,
        "quantization": _quantization(tensor),
        "sha256": META_NO_DATA if meta else tensor_digest(tensor),
        "values": f"[{META_NO_DATA}]" if meta else _values_text(tensor),
    }


def _values_text(tensor: torch.Tensor) -> str:
    """The first values of ``tensor`` as text; for a dtype torch holds but cannot read as
    numbers (``float4_e2m1fn_x2``, ``bits8``: ``tolist`` raises), its first bytes."""
    import torch

    try:
        return tensor_values(tensor)
    except RuntimeError:
        raw = tensor.detach().reshape(-1)[:6].contiguous().cpu().view(torch.uint8)
        shown = ", ".join(f"0x{b:02x}" for b in raw.reshape(-1).tolist())
        return f"bytes [{shown}{', ...' if tensor.numel() > 6 else ''}]"


def _array_record(value: numpy.ndarray[Any, Any]) -> dict[str, Any]:
    read_bound(int(value.size))
    return {
        "kind": "array",
        "dtype": str(value.dtype),
        "shape": list(value.shape),
        "strides": list(value.strides),
        "device": "numpy",
        "layout": "strided",
        "quantization": None,
        "sha256": array_digest(value),
        "values": array_values(value),
    }


def _tensor_text(tensor: torch.Tensor) -> str:
    made = _tensor_record(tensor)
    del made["values"], made["strides"]
    return repr(sorted(made.items()))


#: Records of plain values (exactly ``int``, ``bool``, ``None``, a ``str`` of at most
#: :data:`_KEPT_TEXT` characters, ``float``) and of empty ones (exactly an empty ``list``,
#: ``tuple`` or ``dict``) already made, by type and value: a request's fields hold the same few
#: values at every step. Such a value's record depends on nothing but its type and its value
#: (no method of the target's runs for it; an empty one's also on the digest's bounds in force,
#: part of its key), and a record is never changed once made. At most :data:`_KEPT_RECORDS` are
#: kept; then the memo starts again.
_MADE: dict[tuple[type, Any], dict[str, Any]] = {}
#: The types whose record never digests anything whole.
_PLAIN = frozenset(SCALARS)
_KEPT_RECORDS = 4096
_KEPT_TEXT = 256


def _plain_key(value: object) -> tuple[type, Any] | None:
    """The memo's key for ``value``, or None when its record is made afresh each time."""
    kind = type(value)
    if type(value) is float:
        # hex() tells -0.0 from 0.0 and every NaN from a number, where == would not.
        return (kind, value.hex())
    if kind is int or kind is bool or value is None:
        return (kind, value)
    if type(value) is str and len(value) <= _KEPT_TEXT:
        return (kind, value)
    if (kind is list or kind is tuple or kind is dict) and not value:
        # An empty list (a request's ``output_ids`` before a token, at every step): its record
        # is its type's, digested within the bounds in force.
        return (kind, digest_bounds())
    return None


def record(value: object, digests: Digests | None = None) -> dict[str, Any]:
    """A leaf as plain data: see the module's docstring. ``repr`` of a non-tensor leaf runs its
    own ``__repr__``, which may raise (the caller says whose failure that is). ``digests``: the
    description's digests of values digested whole (a fresh one when None)."""
    key = _plain_key(value)
    if key is not None:
        made = _MADE.get(key)
        if made is None:
            if len(_MADE) >= _KEPT_RECORDS:
                _MADE.clear()
            made = _MADE[key] = _made(value, None)
        return made
    return _made(value, digests)


def _whole(value: object) -> bool:
    """Whether ``value`` is digested whole: a container, an array of objects, or an object
    with fields (met where a walk stopped)."""
    if isinstance(value, (list, tuple, dict, set, frozenset)) or is_array(value, objects=True):
        return True
    if isinstance(value, SCALARS) or type(value).__module__ == "numpy":
        return False
    return bool(fields_of(value))  # an object with no fields is its text (its own __repr__)


def _not_compared(value: object, why: str) -> dict[str, Any]:
    return {"kind": "value", "type": _qualname(value), "text": why, "key": NOT_COMPARED}


def _too_large(value: object, why: NotCompared) -> dict[str, Any]:
    """The record of a value not compared for ``why``, naming the limit that stopped it."""
    found = _not_compared(value, f"not compared: {why.bare()}")
    limits = [s.name for s in why.suggestions if isinstance(s, RaiseLimit)]
    if limits:
        found["limit"] = limits[0]  # the limit that stopped it, as data
    return found


def _made(value: object, digests: Digests | None) -> dict[str, Any]:
    import torch

    try:
        if isinstance(value, torch.Tensor):
            return _tensor_record(value)
        if is_array(value):
            return _array_record(value)
    except NotCompared as why:  # more elements than a digest reads
        return _too_large(value, why)
    if isinstance(value, (memoryview, bytearray)):
        return {
            "kind": "value",
            "type": _qualname(value),
            "text": _cut(buffer_text(value)),
            "key": buffer_key(value),
        }
    if _whole(value):
        if digests is None:
            digests = Digests(fields_of, _tensor_text)
        try:
            key = "sha256:" + digests.digest(value)
        except NotCompared as why:
            return _too_large(value, why)
        return {
            "kind": "value",
            "type": _qualname(value),
            "text": _cut(preview(value)),  # compared by ``key``: a digest of all of it
            "key": key,
        }
    # A str's, bytes' or long int's text is made from its start (never the whole value's
    # repr); its key digests all of it.
    text = plain_text(value, MAX_TEXT - 40)
    if not isinstance(value, (str, bytes, int)) and only_address(value, text):
        return _not_compared(value, f"not compared: {ADDRESS.sub('0x?', text)} (only its address)")
    return {
        "kind": "value",
        "type": _qualname(value),
        "text": _cut(text),
        "key": value_key(value, text),
    }


def records(
    obj: object, skip: Skip | None = None, same: Same | None = None
) -> dict[str, dict[str, Any]]:
    """``{path: record}`` of ``obj``'s leaves (``skip`` and ``same``: see :func:`leaves`); the
    values digested whole share one :class:`~ppaux.observer.digests.Digests` (none is made
    where every leaf is a plain value: a step's records of a request, mostly)."""
    found = leaves(obj, skip=skip, same=same)
    if all(type(value) in _PLAIN for value in found.values()):
        return {path: record(value) for path, value in found.items()}  # nothing digested whole
    digests = Digests(fields_of, _tensor_text)
    return {path: record(value, digests) for path, value in found.items()}


def uncompared(found: dict[str, dict[str, Any]]) -> dict[str, str]:
    """``{path: why}`` of the records in ``found`` that say their value was not compared."""
    return {
        path: str(item.get("text", ""))
        for path, item in found.items()
        if isinstance(item, dict) and item.get("key") == NOT_COMPARED
    }


# ----------------------------------------------------------------------------------------------
# The parent: comparing records (pure)


def describe(item: dict[str, Any]) -> str:
    """A short description of a record: 'float32 (4,) cpu', 'float 0.5'."""
    if item.get("kind") == "tensor":
        shape = "nested" if item.get("shape") is None else str(tuple(item["shape"]))
        layout = "" if item.get("layout") == "strided" else f" {item.get('layout')}"
        return f"{item.get('dtype')} {shape} {item.get('device')}{layout}"
    if item.get("kind") == "array":
        return f"ndarray {item.get('dtype')} {tuple(item.get('shape') or ())}"
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


#: The kinds of record compared by their values' bits.
_ARRAYS = ("tensor", "array")


def differences(
    left: dict[str, dict[str, Any]], right: dict[str, dict[str, Any]]
) -> list[Difference]:
    """Every leaf that differs between two walks' records, in ``left``'s order, then
    ``right``'s extras."""
    found: list[Difference] = []
    for path, a in left.items():
        if path not in right:
            found.append(Difference(path, "missing", describe(a), _now_inside(path, right)))
            continue
        b = right[path]
        tensors = (a.get("kind") in _ARRAYS, b.get("kind") in _ARRAYS)
        if all(tensors) and a.get("kind") == b.get("kind"):
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


def inside(key: str, path: str) -> bool:
    """Whether the leaf at ``key`` is the value at ``path`` or a value inside it."""
    return key == path or (key.startswith(path) and key[len(path) : len(path) + 1] in ("[", "."))


def _now_inside(path: str, right: dict[str, dict[str, Any]]) -> str:
    """What ``right`` holds at ``path``, a leaf of the other walk it has not: the leaves
    inside it (an empty list filled since), else ``absent``."""
    held = [(key, item) for key, item in right.items() if inside(key, path)]
    if not held:
        return "absent"
    shown = ", ".join(f"{key} {describe(item)}" for key, item in held[:3])
    return f"holding {shown}{', ...' if len(held) > 3 else ''}"
