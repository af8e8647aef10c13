"""Find the tensor dicts in a dump and describe each of their entries as plain data."""

from __future__ import annotations

import itertools
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any

from ppaux.dump.model import (
    DtypeRef,
    GlobalRef,
    NdArrayRef,
    NumpyDtype,
    NumpyScalar,
    Opaque,
    StorageRef,
    StorageType,
    TensorRef,
    TorchValue,
    TypeRef,
)
from ppaux.dump.structure import Dump
from ppaux.dump.value_walk import walk
from ppaux.errors import LimitExceeded
from ppaux.limits import Limits
from ppaux.sglang import MSG_TYPE_KEY, OUTPUT_PREFIX, aux_name
from ppaux.text import MAX_SHOWN, cut, with_article

__all__ = [
    "Payload",
    "Tally",
    "describe_entry",
    "find_payloads",
    "key_text",
    "quoted",
    "safe_repr",
    "tensor_attributes",
    "type_name",
    "value_phrase",
]


@dataclass
class Payload:
    """One tensor dict inside a dump; ``locator`` says where ('' for the file's top level)."""

    locator: str
    mapping: dict[str, Any]
    role: str = "message"  # 'message', 'capture' (the dict at the failing call), 'output'


def _looks_like_tensor_dict(value: object) -> bool:
    if not isinstance(value, dict) or not value:
        return False
    return any(isinstance(v, TensorRef) for v in value.values()) or any(
        isinstance(k, str) and (k.startswith(OUTPUT_PREFIX) or k == MSG_TYPE_KEY) for k in value
    )


def find_payloads(dump: Dump, limits: Limits = Limits()) -> list[Payload]:
    """The tensor dicts to check: a capture's dict, the top-level dict, or dicts found inside.

    Containers and objects (such as a ``PPProxyTensors``-shaped object whose state holds
    ``tensors``) are searched breadth-first, three levels deep. A file with more than
    ``limits.max_payloads`` of them is refused (:class:`LimitExceeded`): each costs a check and
    a description, and a few kilobytes of pickle can spell hundreds of thousands.
    """
    capture = dump.capture
    if capture is not None:
        captured: list[Payload] = []
        if isinstance(capture.get("tensors"), dict):
            captured.append(Payload("['tensors']", capture["tensors"], "capture"))
        if isinstance(capture.get("output"), dict):
            captured.append(Payload("['output']", capture["output"], "output"))
        return _bounded(captured, dump, limits)
    root = dump.root
    if isinstance(root, dict) and (_looks_like_tensor_dict(root) or not _has_nested_dicts(root)):
        return _bounded([Payload("", root)], dump, limits)
    found: list[Payload] = []
    frontier: list[tuple[str, Any]] = [("", root)]
    # Each object is looked at once: a file may refer to one big dict from many places.
    seen: set[int] = {id(root)}
    for _ in range(3):
        following: list[tuple[str, Any]] = []
        for locator, value in frontier:
            for how, key, child in _children(value):
                if id(child) in seen:
                    continue
                seen.add(id(child))
                child_locator = _locate(locator, how, key)
                if _looks_like_tensor_dict(child):
                    found.append(Payload(child_locator, child))
                    if len(found) > limits.max_payloads:
                        raise LimitExceeded(
                            dump.path,
                            "max_payloads",
                            limits.max_payloads,
                            "the file holds too many tensor dicts",
                        )
                else:
                    following.append((child_locator, child))
        frontier = following[:1000]
    return _bounded(found, dump, limits)


def _bounded(payloads: list[Payload], dump: Dump, limits: Limits) -> list[Payload]:
    """``payloads``, unless their entries hold more tensors than ``limits.max_tensor_entries``:
    each such entry costs several checks (a few kilobytes of pickle can repeat one tensor a
    hundred thousand times through the memo)."""
    count = 0
    for payload in payloads:
        count += sum(1 for v in payload.mapping.values() if v.__class__ is TensorRef)
        if count > limits.max_tensor_entries:
            raise LimitExceeded(
                dump.path,
                "max_tensor_entries",
                limits.max_tensor_entries,
                "its tensor dicts hold too many tensors",
            )
    return payloads


def _has_nested_dicts(root: dict[str, Any]) -> bool:
    return any(isinstance(v, (dict, Opaque)) for v in root.values())


def _children(value: object) -> Iterator[tuple[str, Any, Any]]:
    """(how, key, child) for the children of ``value``; :func:`_locate` names one. Names are
    built only for children not seen before: a key's repr can cost microseconds, and a few
    kilobytes of pickle can make a million children share a few objects."""
    # Only the first 1000 children of anything are looked at, without copying the rest.
    if isinstance(value, dict):
        for k, v in itertools.islice(value.items(), 1000):
            yield "item", k, v
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(itertools.islice(value, 1000)):
            yield "index", i, v
    elif isinstance(value, Opaque):
        state = value.state
        items: Iterator[tuple[Any, Any]] = iter(())
        if isinstance(state, tuple) and len(state) == 2 and isinstance(state[1], dict):
            # (dict state, slot state): both are set on the object, slots last
            first, slots = state[0] if isinstance(state[0], dict) else {}, state[1]
            items = itertools.chain(
                ((k, slots.get(k, v)) for k, v in first.items()),
                ((k, v) for k, v in slots.items() if k not in first),
            )
        elif isinstance(state, dict):
            items = iter(state.items())
        for k, v in itertools.islice(items, 1000):
            yield ("attribute" if isinstance(k, str) else "item"), k, v
        for i, v in enumerate(value.args[:100]):
            yield "arg", i, v


def _locate(locator: str, how: str, key: object) -> str:
    """The locator of a child: ``[0]``, ``['key']``, ``.name`` or ``<arg 0>`` after its parent's."""
    if how == "attribute":
        return f"{locator}.{cut(key, 40)}"
    if how == "arg":
        return f"{locator}<arg {key}>"
    if how == "index":
        return f"{locator}[{key}]"
    return f"{locator}[{safe_repr(key, 40)}]"


def type_name(value: object) -> str:
    """The dotted type name a user would recognise (custom classes by their saved name)."""
    if isinstance(value, TensorRef):
        return value.subclass or "torch.Tensor"
    if isinstance(value, NdArrayRef):
        return value.subtype
    if isinstance(value, NumpyScalar):
        return (
            f"numpy.{cut(str(value.dtype), 60).lstrip('<>=|')}"
            if value.dtype != "?"
            else "numpy scalar"
        )
    if isinstance(value, NumpyDtype):
        return "numpy.dtype"
    if isinstance(value, Opaque):
        return value.name
    if isinstance(value, GlobalRef):
        return value.name
    if isinstance(value, StorageRef):
        return "torch.storage.TypedStorage"
    if isinstance(value, StorageType):
        return "type"
    if isinstance(value, DtypeRef):
        return "torch.dtype"
    if isinstance(value, TorchValue):
        return value.type_name
    if isinstance(value, TypeRef):
        return "type"
    return type(value).__name__


class Tally:
    """Tensor counts and item kinds of the values in one dump, each worked out once.

    Entries may share one big value (a memo reference costs the file two bytes); describing
    each entry must not walk it again each time. The values visited in all are bounded by twice
    max_items: enough for one walk and one look at every container's items.
    """

    def __init__(self, limits: Limits, path: str = "") -> None:
        self.limits = limits
        self.path = path
        self.budget = 2 * limits.max_items
        self._tensors: dict[int, tuple[Any, int]] = {}
        self._kinds: dict[int, tuple[Any, list[str]]] = {}

    def _spend(self, n: int) -> None:
        self.budget -= n
        if self.budget < 0:
            raise LimitExceeded(
                self.path,
                "max_items",
                self.limits.max_items,
                "describing the dump visits too many values (a value shared by many entries is "
                "visited once per entry)",
            )

    def tensors(self, value: object) -> int:
        """Tensors reachable from ``value``, not counting ``value`` itself."""
        hit = self._tensors.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
        count = 0
        self._spend(1)
        # Charged per child taken apart, not per value found: a list holding one value a
        # million times (a byte each in the pickle) yields two values and costs a million.
        for node in walk(value, self.limits, self.path, charge=self._spend):
            if isinstance(node, TensorRef) and node is not value:
                count += 1
        self._tensors[id(value)] = (value, count)
        return count

    def kinds(self, value: Collection[object]) -> list[str]:
        """The sorted type names of a container's items."""
        hit = self._kinds.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
        self._spend(len(value))
        kinds = sorted(_kinds(value))
        self._kinds[id(value)] = (value, kinds)
        return kinds


#: Classes whose values each have their own type name (a saved class's name, a subclass).
_NAMED_BY_VALUE = (TensorRef, NumpyScalar, Opaque, GlobalRef, TorchValue)


def _kinds(items: Collection[object]) -> set[str]:
    """``{type_name(v) for v in items}``, each distinct object named once: a list may hold one
    object a million times, and only the loops here that run in C see every item."""
    one_of_each = dict(zip(map(type, items), items, strict=True))  # one item per class
    per_value = {c for c in one_of_each if issubclass(c, _NAMED_BY_VALUE)}
    names = {type_name(v) for c, v in one_of_each.items() if c not in per_value}
    if per_value:
        chosen = list(itertools.compress(items, map(per_value.__contains__, map(type, items))))
        names.update(type_name(v) for v in dict(zip(map(id, chosen), chosen, strict=True)).values())
    return names


def value_phrase(value: object, limits: Limits, tally: Tally | None = None) -> str:
    """A short noun phrase for a non-tensor value: 'a list of 3 floats', 'None', ...

    Pass one ``tally`` for all the values of a dump (see :class:`Tally`).
    """
    if tally is None:
        tally = Tally(limits)
    if value is None:
        return "None"
    if isinstance(value, NdArrayRef):
        return f"a {value.subtype} ({cut(str(value.dtype), 60)}, shape {list(value.shape)})"
    if isinstance(value, Opaque):
        return f"{with_article(value.name)} object (its class was not imported)"
    if isinstance(value, GlobalRef):
        return f"the global {value.name}"
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        kind = type(value).__name__
        tensors = tally.tensors(value)
        if tensors:
            return f"a {kind} with {tensors} tensor{'s' if tensors != 1 else ''} inside"
        if not value:
            return f"an empty {kind}"
        if isinstance(value, dict):
            return f"a dict of {len(value)} item{'s' if len(value) != 1 else ''}"
        kinds = tally.kinds(value)
        of = kinds[0] if len(kinds) == 1 else "mixed values"
        return f"a {kind} of {len(value)} {of}{'s' if len(kinds) == 1 and len(value) != 1 else ''}"
    return with_article(type_name(value))


def safe_repr(value: object, limit: int = 80) -> str:
    """A bounded repr that never formats huge ints or deep structures in full."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"<int of {value.bit_length()} bits>"
    if isinstance(value, (str, bytes, bytearray)):
        text = repr(value[: limit + 1])
    elif isinstance(value, (list, tuple, dict, set, frozenset)):
        text = _container_repr(value, limit)
    else:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _container_repr(value: Collection[object], limit: int) -> str:
    kinds: dict[type, str] = {list: "[]", tuple: "()", dict: "{}", set: "{}", frozenset: "{}"}
    brackets = "()" if isinstance(value, tuple) else kinds.get(type(value), "[]")
    parts: list[str] = []
    size = 2
    # Nested containers show as '...': a dict may hold itself, and depth costs recursion.
    pieces = (
        (f"{_item_repr(key)}: {_item_repr(held)}" for key, held in value.items())
        if isinstance(value, dict)
        else (_item_repr(item) for item in value)
    )
    for piece in pieces:
        parts.append(piece)
        size += len(piece) + 2
        if size > limit:
            parts.append("...")
            break
    return brackets[0] + ", ".join(parts) + brackets[1]


def _item_repr(item: object) -> str:
    if isinstance(item, (list, tuple, dict, set, frozenset)):
        return "..."
    # A tensor's layout or kind (sparse_csc, quantized) is part of what it is: room for it.
    return safe_repr(item, 60 if isinstance(item, TensorRef) else 30)


#: The attributes of a tensor described, at most (the state of a tensor with thousands of
#: attributes is read, but not listed whole).
_MAX_ATTRIBUTES = 20


def tensor_attributes(tensor: TensorRef) -> list[dict[str, str]]:
    """The attributes a tensor's saved state sets on it (torch.save writes a tensor's, a
    Parameter's or a subclass's ``__dict__``, with its slots as a second dict): each by name,
    type and value, cut; the first :data:`_MAX_ATTRIBUTES`."""
    state = tensor.state
    parts = state if isinstance(state, tuple) else (state,)
    found: dict[str, dict[str, str]] = {}
    for part in parts:
        if isinstance(part, dict):
            for name, value in itertools.islice(part.items(), _MAX_ATTRIBUTES):
                key = cut(name, 60) if isinstance(name, str) else safe_repr(name, 60)
                found[key] = {"name": key, "type": type_name(value), "value": safe_repr(value, 60)}
    return list(found.values())[:_MAX_ATTRIBUTES]


def attribute_count(tensor: TensorRef) -> int:
    """How many attributes the tensor's saved state sets, listed or not (its ``__dict__`` and
    slots, a name set in both counted once)."""
    state = tensor.state
    parts = state if isinstance(state, tuple) else (state,)
    names: set[object] = set()
    for part in parts:
        if isinstance(part, dict):
            names.update(part)
    return len(names)


def key_text(key: object) -> str:
    """A key as findings and tables hold it: a string as the file spells it, cut to a bound
    (each format escapes it when it writes it), any other key as a bounded repr."""
    return cut(key) if isinstance(key, str) else safe_repr(key, 60)


def quoted(text: str) -> str:
    """A string from a file quoted for a message, as repr does, cut past MAX_SHOWN characters."""
    if len(text) <= MAX_SHOWN:
        return repr(text)
    return f"{text[:MAX_SHOWN]!r}... ({len(text)} characters)"


def describe_entry(
    key: object, value: object, limits: Limits, tally: Tally | None = None
) -> dict[str, Any]:
    """One dict entry as the report's JSON object (see docs/report-schema.md)."""
    name = aux_name(key)
    entry: dict[str, Any] = {
        "key": key_text(key),
        "key_type": type_name(key) if not isinstance(key, str) else "str",
        "aux": name is not None,
        "aux_name": cut(name) if name is not None else None,
        "type": type_name(value),
    }
    if isinstance(value, TensorRef):
        entry.update(
            kind="tensor",
            tensor_kind=value.kind,
            subclass=cut(value.subclass) if value.subclass is not None else None,
            dtype=cut(str(value.dtype)),
            shape=list(value.shape),
            stride=list(value.stride) if value.stride is not None else None,
            contiguous=value.contiguous,
            device=value.device,
            layout=value.layout,
            bytes=value.nbytes,
            requires_grad=value.requires_grad,
            storage_key=cut(value.storage.key) if value.storage is not None else None,
            storage_offset=value.offset if value.storage is not None else None,
        )
        if value.kind == "nested":
            parts, part_dims = value.nested_layout
            entry.update(shape=None, nested={"parts": parts, "part_dims": part_dims})
        if value.state and (attributes := tensor_attributes(value)):
            entry["attributes"] = attributes
            if (total := attribute_count(value)) > len(attributes):
                entry["attributes_omitted"] = total - len(attributes)
    elif isinstance(value, NdArrayRef):
        entry.update(
            kind="ndarray",
            dtype=cut(str(value.dtype)),
            shape=list(value.shape),
            summary=value_phrase(value, limits, tally),
        )
    else:
        entry.update(
            kind="object" if isinstance(value, (Opaque, GlobalRef)) else "value",
            summary=value_phrase(value, limits, tally),
            repr=safe_repr(value),
        )
    return entry
