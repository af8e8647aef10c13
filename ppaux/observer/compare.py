"""What the two paths produced, as records, and their comparison.

In the child, an auxiliary output, a host output or a request is walked into ``{path: leaf}``
(:func:`leaves`): ``.field`` for attributes (``__dict__``, dataclass fields, ``__slots__``),
``[key]`` for mappings, ``[i]`` for lists and tuples; a tensor, a number, a string or any other
object is a leaf, and so is a container past :data:`MAX_ITEMS` items or :data:`MAX_DEPTH` deep, or
met once the walk gave :data:`MAX_LEAVES` leaves. Each leaf becomes a record of plain data
(:func:`record`): a tensor's dtype, shape, strides, device, layout and the sha256 of its values
(with its first values); a numpy array's the same, of its bytes in C order; any other value's
qualified type name, a bounded text and the key it is compared by: a digest of its values for a
buffer and for a container or an object digested whole (see :mod:`.digests`), else its text. A
value that cannot be compared within the bounds (or whose text is only its address) has a record
that says *not compared* (:func:`uncompared`), and the report lists it.

In the parent, :func:`differences` compares two walks record by record; it imports nothing
beyond the standard library. Equality is bitwise for tensors (a NaN equals a NaN in the same
place; -0.0 and 0.0 differ) and by value for the rest, a NaN float equal to a NaN.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from hashlib import sha256 as _sha256  # bound before any target's code can patch hashlib
from typing import Any

from ppaux.observer.digests import (
    ADDRESS,
    Digests,
    NotCompared,
    array_digest,
    array_values,
    buffer_key,
    buffer_text,
    is_array,
    only_address,
    preview,
    tensor_digest,
    tensor_values,
    value_key,
)
from ppaux.suggestions import RaiseLimit

__all__ = [
    "Difference",
    "describe",
    "differences",
    "leaves",
    "record",
    "records",
    "shown_name",
    "uncompared",
]

_SCALARS = (int, float, complex, str, bytes, bool, type(None))
#: Walks stop this deep; anything deeper is one leaf.
MAX_DEPTH = 5
#: Containers longer than this are one leaf.
MAX_ITEMS = 256
#: The leaves one walk gives before every container it meets after is one leaf.
MAX_LEAVES = 2048
#: The most characters of a mapping's key a path shows (a digest of the whole key follows).
MAX_KEY = 64
#: The most characters of a value's text a record keeps (its key is a digest beyond that).
MAX_TEXT = 200
#: The rule each kind of leaf is compared by, named in the findings.
TENSOR_RULE = (
    "bitwise: dtype, shape, device, layout and values (conjugate and negative views resolved); "
    "NaN equals NaN in the same place"
)
VALUE_RULE = "by value; NaN equals NaN"
#: The key of a value that is not compared (its record's text says why).
NOT_COMPARED = "not compared"


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


class Budget:
    """What is left of one walk's :data:`MAX_LEAVES`."""

    def __init__(self, leaves: int = MAX_LEAVES) -> None:
        self.left = leaves


def leaves(
    obj: Any,
    prefix: str = "",
    depth: int = 0,
    skip: Skip | None = None,
    same: Same | None = None,
    budget: Budget | None = None,
) -> dict[str, Any]:
    """``{path: leaf}`` for ``obj`` (see the module's docstring). The target's own methods
    (``__getattribute__``, properties, ``__eq__``) may raise here: the caller says whose.

    With ``skip``, a list (exactly a ``list``) at a path leaves out its first ``skip(path,
    list)`` items: only the items after them are walked, and more than :data:`MAX_ITEMS` of
    them are one leaf ``path[start:]``; a list with nothing after them gives no leaf (nor does
    a holder whose every child gave none). With ``same``, a plain value for which
    ``same(path, value)`` is true gives no leaf either. Without them, every walk gives a
    leaf. ``budget``: the leaves this walk may still give (a fresh :class:`Budget` when None);
    once spent, every container met is one leaf."""
    if budget is None:
        budget = Budget()
    if isinstance(obj, _SCALARS) or depth >= MAX_DEPTH:
        if same is not None and type(obj) in _PLAIN and same(prefix, obj):
            return {}
        budget.left -= 1
        return {prefix: obj}
    import torch

    if isinstance(obj, torch.Tensor) or budget.left <= 0:
        budget.left -= 1
        return {prefix: obj}
    if isinstance(obj, dict):
        if len(obj) > MAX_ITEMS:
            budget.left -= 1
            return {prefix: obj}
        out: dict[str, Any] = {}
        walked = False
        for key, value in list(obj.items()):
            walked = True
            path = f"{prefix}[{_key_text(key)}]"
            if type(value) in _PLAIN:  # a leaf at any depth: walked here, without a call
                if same is None or not same(path, value):
                    budget.left -= 1
                    out[path] = value
            else:
                out.update(leaves(value, path, depth + 1, skip, same, budget))
        return out if out or walked else {prefix: obj}
    if isinstance(obj, (list, tuple)):
        if skip is not None and type(obj) is list:
            start = skip(prefix, obj)
            if start > 0:
                return _rest(obj, start, prefix, depth, skip, same, budget)
        if len(obj) > MAX_ITEMS:
            budget.left -= 1
            return {prefix: obj}
        out = {}
        walked = False
        for index, value in enumerate(list(obj)):
            walked = True
            path = f"{prefix}[{index}]"
            if type(value) in _PLAIN:
                if same is None or not same(path, value):
                    budget.left -= 1
                    out[path] = value
            else:
                out.update(leaves(value, path, depth + 1, skip, same, budget))
        return out if out or walked else {prefix: obj}
    if type(obj).__module__ == "numpy":
        budget.left -= 1
        return {prefix: obj}
    fields = _fields(obj)
    if fields is None or (callable(obj) and not fields):
        budget.left -= 1
        return {prefix: obj}
    out = {}
    walked = False
    for name, value in fields.items():
        if name.startswith("__"):
            continue
        walked = True
        # A long attribute name is shortened as a long key is: no path is long.
        if type(name) is str and len(name) <= MAX_KEY:
            path = f"{prefix}.{name}"
        else:
            shown = shown_name(name) if isinstance(name, str) else _key_text(name)
            path = f"{prefix}.{shown}"
        if type(value) in _PLAIN:
            if same is None or not same(path, value):
                budget.left -= 1
                out[path] = value
        else:
            out.update(leaves(value, path, depth + 1, skip, same, budget))
    # A child that gave nothing was skipped (see above), not empty: it left no leaf, and
    # neither does its holder.
    return out if out or walked else {prefix: obj}


def _rest(
    items: list[Any],
    start: int,
    prefix: str,
    depth: int,
    skip: Skip | None,
    same: Same | None,
    budget: Budget,
) -> dict[str, Any]:
    """The leaves of ``items[start:]`` (see :func:`leaves`): the cost is theirs alone."""
    rest = items[start:]
    if len(rest) > MAX_ITEMS or budget.left <= 0:
        budget.left -= 1
        return {f"{prefix}[{start}:]": rest}
    out: dict[str, Any] = {}
    for index, value in enumerate(rest, start):
        path = f"{prefix}[{index}]"
        if type(value) in _PLAIN:  # a leaf at any depth (see leaves)
            if same is None or not same(path, value):
                budget.left -= 1
                out[path] = value
        else:
            out.update(leaves(value, path, depth + 1, skip, same, budget))
    return out


def _key_text(key: Any) -> str:
    """A key as a path shows it: its repr, or, past :data:`MAX_KEY` characters, the start of it
    and a digest of the whole, so that two keys give two paths and no path is long."""
    if isinstance(key, str) and len(key) > MAX_KEY:
        return shown_name(key, quoted=True)
    text = repr(key)
    if not isinstance(text, str):
        raise TypeError(f"__repr__ returned {type(text).__name__}, not str")
    return shown_name(text)


#: A name :func:`shown_name` has shortened already: shown as it is, so that shortening twice
#: (the check's child before a name crosses, the parent where it shows it) changes nothing.
_SHOWN_LONG = re.compile(
    rf".{{{MAX_KEY}}}\.\.\.\([0-9,]{{1,32}} characters, sha256 [0-9a-f]{{16}}\)", re.DOTALL
)


def shown_name(name: str, quoted: bool = False) -> str:
    """``name`` (``repr``'d with ``quoted``) if at most :data:`MAX_KEY` characters long; else
    its start, its length and a digest of the whole: two names stay two, none is long. A name
    already in that form is returned as it is (the parent shows what the child shortened)."""
    if len(name) <= MAX_KEY or (not quoted and _SHOWN_LONG.fullmatch(name)):
        return repr(name) if quoted else name
    whole = _sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    start = repr(name[:MAX_KEY]) if quoted else name[:MAX_KEY]
    return f"{start}...({len(name):,} characters, sha256 {whole})"


def _qualname(value: Any) -> str:
    klass = type(value)
    module = getattr(klass, "__module__", "") or ""
    name = getattr(klass, "__qualname__", klass.__name__)
    return name if module == "builtins" else f"{module}.{name}"


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 3] + "..."


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
        "sha256": tensor_digest(tensor),
        "values": tensor_values(tensor),
    }


def _array_record(value: Any) -> dict[str, Any]:
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


def _tensor_text(tensor: Any) -> str:
    made = _tensor_record(tensor)
    del made["values"], made["strides"]
    return repr(sorted(made.items()))


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


def record(value: Any, digests: Digests | None = None) -> dict[str, Any]:
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


def _whole(value: Any) -> bool:
    """Whether ``value`` is digested whole: a container, an array of objects, or an object
    with fields (met where a walk stopped)."""
    if isinstance(value, (list, tuple, dict, set, frozenset)) or is_array(value, objects=True):
        return True
    if isinstance(value, _SCALARS) or type(value).__module__ == "numpy":
        return False
    return bool(_fields(value))  # an object with no fields is its text (its own __repr__)


def _not_compared(value: Any, why: str) -> dict[str, Any]:
    return {"kind": "value", "type": _qualname(value), "text": why, "key": NOT_COMPARED}


def _made(value: Any, digests: Digests | None) -> dict[str, Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return _tensor_record(value)
    if is_array(value):
        return _array_record(value)
    if isinstance(value, (memoryview, bytearray)):
        return {
            "kind": "value",
            "type": _qualname(value),
            "text": _cut(buffer_text(value)),
            "key": buffer_key(value),
        }
    if _whole(value):
        if digests is None:
            digests = Digests(_fields, _tensor_text)
        try:
            key = "sha256:" + digests.digest(value)
        except NotCompared as why:
            found = _not_compared(value, f"not compared: {why.bare()}")
            limits = [s.name for s in why.suggestions if isinstance(s, RaiseLimit)]
            if limits:
                found["limit"] = limits[0]  # the limit that stopped it, as data
            return found
        return {
            "kind": "value",
            "type": _qualname(value),
            "text": _cut(preview(value)),  # compared by ``key``: a digest of all of it
            "key": key,
        }
    text = value if isinstance(value, str) else repr(value)
    if not isinstance(text, str):
        raise TypeError(f"__repr__ returned {type(text).__name__}, not str")
    if not isinstance(value, str) and only_address(value, text):
        return _not_compared(value, f"not compared: {ADDRESS.sub('0x?', text)} (only its address)")
    return {
        "kind": "value",
        "type": _qualname(value),
        "text": _cut(repr(value) if isinstance(value, str) else text),
        "key": value_key(value, text),
    }


def records(
    obj: Any, skip: Skip | None = None, same: Same | None = None
) -> dict[str, dict[str, Any]]:
    """``{path: record}`` of ``obj``'s leaves (``skip`` and ``same``: see :func:`leaves`); the
    values digested whole share one :class:`~ppaux.observer.digests.Digests`."""
    digests = Digests(_fields, _tensor_text)
    return {
        path: record(value, digests) for path, value in leaves(obj, skip=skip, same=same).items()
    }


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
            found.append(Difference(path, "missing", describe(a), "absent"))
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
