"""Walking a value the target produced into its leaves, in the check's child.

:func:`leaves` walks an auxiliary output, a host output or a request into ``{path: leaf}``:
``.field`` for attributes (``__dict__``, dataclass fields, ``__slots__``), ``[key]`` for dicts and
mapping proxies, ``[i]`` for lists, tuples and deques (``.field`` for a named tuple's items, and for
what an instance of a subclass of one of them, or of a number or a string, holds in its own
``__dict__`` beside its items or value: :func:`own_attributes`); a tensor, a number, a string or any
other object is a leaf, and so is a container or object past :data:`MAX_ITEMS` items (or attributes:
such a ``__dict__`` beside items is one leaf ``.__dict__``) or :data:`MAX_DEPTH` deep, or met once
the walk gave :data:`MAX_LEAVES` leaves. A walk may leave out what it described at an earlier step
(``skip``, ``same``; see :mod:`.growth`). Each leaf then becomes a record (:mod:`.compare`). The
target's own methods (``__getattribute__``, properties, a key's ``__repr__``) run here and may
raise: the caller says whose failure that is. Imports torch when used.
"""

from __future__ import annotations

import dataclasses
import re
from builtins import format, isinstance, len, repr, str, type  # noqa: UP029  (bound before the target loads)
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from hashlib import sha256 as _sha256  # bound before any target's code can patch hashlib
from operator import is_
from types import GetSetDescriptorType, MappingProxyType
from typing import Any

from ppaux.observer.digests import DECIMAL_BITS as _DECIMAL_BITS
from ppaux.observer.identity import class_version
from ppaux.observer.named_tuples import item_paths

__all__ = [
    "MAX_DEPTH",
    "MAX_ITEMS",
    "MAX_KEY",
    "MAX_LEAVES",
    "SCALARS",
    "Budget",
    "Holder",
    "Same",
    "Sameness",
    "Skip",
    "fields_of",
    "leaves",
    "own_attributes",
    "plain_children",
    "shown_name",
]

SCALARS = (int, float, complex, str, bytes, bool, type(None))
#: Walks stop this deep; anything deeper is one leaf.
MAX_DEPTH = 5
#: Containers longer than this, and objects of more attributes, are one leaf.
MAX_ITEMS = 256
#: The leaves one walk gives before every container it meets after is one leaf.
MAX_LEAVES = 2048
#: The most characters of a mapping's key a path shows (a digest of the whole key follows).
MAX_KEY = 64

#: Per class, by its id (the class is kept, so the id stays its own): the class, its version
#: when read (:func:`~ppaux.observer.identity.class_version`), the names of its dataclass
#: fields (None for a class that is not a dataclass), the same names as a set, the names of
#: its ``__slots__``, and whether any of its dataclass fields is also a data descriptor of
#: the class (a property, say). Read once per version of the class, not once per object: a
#: request's class is met at every step, and read again once the class (or a base) changed
#: (a property added, a default replaced, ``__bases__`` assigned). Cleared when it holds
#: :data:`_KEPT_LAYOUTS` classes.
_LAYOUTS: dict[
    int, tuple[type, int, tuple[str, ...] | None, frozenset[str], tuple[str, ...], bool]
] = {}
_KEPT_LAYOUTS = 1024
_GETATTRIBUTE: Any = object.__getattribute__
#: A class's own namespace, read without its metaclass's ``__getattribute__``.
_class_dict: Any = type.__dict__["__dict__"].__get__


def _layout(obj: object) -> tuple[tuple[str, ...] | None, frozenset[str], tuple[str, ...], bool]:
    """``obj``'s class's layout (see :data:`_LAYOUTS`): its dataclass fields' names (None where
    it is no dataclass instance), them as a set, its ``__slots__`` and whether a field is also
    a data descriptor of the class."""
    klass = type(obj)
    version = class_version(klass)
    known = _LAYOUTS.get(id(klass))
    if known is not None and known[0] is klass and version and known[1] == version:
        return known[2], known[3], known[4], known[5]
    names = None
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        names = tuple(f.name for f in dataclasses.fields(obj))
    slots = tuple(
        name
        for ancestor in klass.__mro__
        for name in getattr(ancestor, "__slots__", ())
        if isinstance(name, str) and name not in ("__dict__", "__weakref__")
    )
    described = any(
        hasattr(type(ancestor.__dict__[name]), "__set__")
        or hasattr(type(ancestor.__dict__[name]), "__delete__")
        for ancestor in klass.__mro__
        for name in names or ()
        if name in ancestor.__dict__
    )
    if len(_LAYOUTS) >= _KEPT_LAYOUTS:
        _LAYOUTS.clear()
    # The version read before the layout: a change while it was read is a new version.
    _LAYOUTS[id(klass)] = (klass, version, names, frozenset(names or ()), slots, described)
    return names, frozenset(names or ()), slots, described


def fields_of(obj: object) -> dict[str, Any] | None:
    """``obj``'s attributes by name: its dataclass fields, then its ``__slots__``, then
    whatever else its ``__dict__`` holds (an attribute set after construction, in
    ``__post_init__``, by ``after_sample``, by ``consume`` on a request, is part of what a path
    produced, and is compared too); None for an object with neither slots nor a ``__dict__``.

    A dataclass field the object's own ``__dict__`` holds is that value either way; it is read
    with ``getattr`` (which runs a ``__getattribute__`` or a property of the class, and may
    raise) only where the class has one of them: a plain dataclass instance, such as a
    request, is read from its ``__dict__`` at once."""
    names, named, slots, described = _layout(obj)
    klass = type(obj)
    if names is not None and not slots and not described:
        own = obj.__dict__ if klass.__getattribute__ is _GETATTRIBUTE else None
        if type(own) is dict:
            keys = tuple(own)
            if len(keys) >= len(names) and all(map(is_, names, keys)):
                return dict(own)  # set in the fields' order (by the dataclass's __init__)
            if own.keys() >= named:
                found = {name: own[name] for name in names}
                found.update(own)
                return found
    found = {}
    if names is not None:
        found = {name: getattr(obj, name, None) for name in names}
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
#: :data:`SCALARS`' types) at ``path``: the very object described there before, taken as
#: unchanged.
Same = Callable[[str, Any], bool]

_PLAIN = frozenset(SCALARS)


class Sameness:
    """A :data:`Same` that can also say which values of an object are unchanged
    (:meth:`holder`): the request walk of :mod:`.growth` is one. :func:`leaves` then walks
    only the object's values at the positions it names (the plain values among the rest give
    no leaf, as :meth:`__call__` would have said of each one by one). A request holds some
    45 values, most of them plain and the same step after step: this says so for all of them
    at once instead of once per value."""

    __slots__ = ()

    def __call__(self, path: str, value: object) -> bool:
        raise NotImplementedError

    def holder(
        self, path: str, names: tuple[Any, ...], values: tuple[Any, ...]
    ) -> tuple[int, ...] | None:
        """For the object at ``path``, holding attributes ``names`` (in order) with
        ``values``: None to walk it as ever (each plain value asked about by
        :meth:`__call__`), or the positions to walk, in order, which must include every value
        that is not plain; the plain values at the other positions are left out."""
        raise NotImplementedError


#: A list or dict met by a walk (see :func:`leaves`): its path, itself, its depth, and the
#: positions of its leaves among the walk's (from, to).
Holder = tuple[str, Any, int, int, int]


class Budget:
    """What is left of one walk's :data:`MAX_LEAVES`."""

    def __init__(self, leaves: int = MAX_LEAVES) -> None:
        self.left = leaves


def leaves(
    obj: object,
    prefix: str = "",
    depth: int = 0,
    skip: Skip | None = None,
    same: Same | None = None,
    budget: Budget | None = None,
    holders: list[Holder] | None = None,
) -> dict[str, Any]:
    """``{path: leaf}`` for ``obj`` (see the module's docstring). The target's own methods
    (``__getattribute__``, properties, ``__eq__``) may raise here: the caller says whose.

    With ``skip``, a list (exactly a ``list``) at a path leaves out its first ``skip(path,
    list)`` items: only the items after them are walked, and more than :data:`MAX_ITEMS` of
    them are one leaf ``path[start:]``; a list with nothing after them gives no leaf (nor does
    a holder whose every child gave none). With ``same``, a plain value for which
    ``same(path, value)`` is true gives no leaf either. Without them, every walk gives a
    leaf. ``budget``: the leaves this walk may still give (a fresh :class:`Budget` when None);
    once spent, every container met is one leaf. ``holders``, where given, gets each plain
    ``list`` and ``dict`` whose items were walked (see :data:`Holder`)."""
    import torch

    out: dict[str, Any] = {}
    walk = _Walk(skip, same, Budget() if budget is None else budget, out, torch.Tensor)
    walk.holders = holders
    walk.value(obj, prefix, depth)
    return out


class _Walk:
    """One walk of :func:`leaves`: its ``skip``, ``same`` and budget, and the leaves it gave so
    far (``out``, in the order met)."""

    __slots__ = ("budget", "holders", "out", "same", "skip", "tensor")

    def __init__(
        self,
        skip: Skip | None,
        same: Same | None,
        budget: Budget,
        out: dict[str, Any],
        tensor: type,
    ) -> None:
        self.skip = skip
        self.same = same
        self.budget = budget
        self.out = out
        self.tensor = tensor  # torch.Tensor, imported once a walk
        self.holders: list[Holder] | None = None

    def leaf(self, path: str, value: object) -> None:
        self.budget.left -= 1
        self.out[path] = value

    def value(self, obj: object, prefix: str, depth: int) -> None:
        """The leaves of ``obj`` at ``prefix``: itself, or its children's."""
        kind = type(obj)
        if (kind is list or kind is dict) and depth < MAX_DEPTH and self.budget.left > 0:
            # Exactly a list or a dict (the commonest holders): what the tests below would
            # find, without them.
            if isinstance(obj, list):
                self.sequence(obj, prefix, depth)
            elif isinstance(obj, dict):
                self.mapping(obj, prefix, depth)
            return
        if isinstance(obj, SCALARS) or depth >= MAX_DEPTH:
            if self.same is None or kind not in _PLAIN or not self.same(prefix, obj):
                self.leaf(prefix, obj)
            if kind not in _PLAIN and depth < MAX_DEPTH:
                self.extra(obj, prefix, depth)
            return
        if isinstance(obj, self.tensor) or self.budget.left <= 0:
            self.leaf(prefix, obj)
        elif isinstance(obj, (dict, MappingProxyType)):
            self.mapping(obj, prefix, depth)
            self.extra(obj, prefix, depth)
        elif isinstance(obj, (list, tuple, deque)):
            self.sequence(obj, prefix, depth)
            self.extra(obj, prefix, depth)
        elif kind.__module__ == "numpy":
            self.leaf(prefix, obj)
        else:
            fields = fields_of(obj)
            if fields is None or (callable(obj) and not fields) or len(fields) > MAX_ITEMS:
                self.leaf(prefix, obj)
            elif isinstance(self.same, Sameness):
                names = tuple(fields)
                values = tuple(fields.values())
                walked = self.same.holder(prefix, names, values)
                if walked is None:
                    self.attributes(obj, prefix, depth, fields)
                else:
                    self.partly(obj, prefix, depth, names, values, walked)
            else:
                self.attributes(obj, prefix, depth, fields)

    def extra(self, obj: object, prefix: str, depth: int) -> None:
        """The leaves of the attributes an instance of a subclass of a number, a string, a
        list, a tuple, a deque or a dict holds beside its value or items (``.name``): its
        value (its text) or its items alone would leave them uncompared."""
        if type(obj) in _BUILTIN or self.budget.left <= 0:
            return
        found = own_attributes(obj)
        if len(found) > MAX_ITEMS:
            self.leaf(_attribute_path(prefix, "__dict__"), found)  # one leaf, as a dict is
        for name, value in found.items() if len(found) <= MAX_ITEMS else ():
            if not (type(name) is str and name.startswith("__")):
                self.value(value, _attribute_path(prefix, name), depth + 1)

    def mapping(self, obj: Mapping[Any, Any], prefix: str, depth: int) -> None:
        """The leaves of a mapping: its items by key, or itself past :data:`MAX_ITEMS`."""
        if len(obj) > MAX_ITEMS:
            self.leaf(prefix, obj)
        else:
            keyed = ((f"{prefix}[{_key_text(k)}]", v) for k, v in list(obj.items()))
            start = len(self.out)
            self.holder(obj, prefix, depth, keyed)
            self.held(obj, prefix, depth, start)

    def sequence(self, obj: Sequence[Any], prefix: str, depth: int) -> None:
        """The leaves of a list, a tuple or a deque: its items (a list's from where ``skip``
        says), or itself past :data:`MAX_ITEMS`."""
        start = 0
        if self.skip is not None and isinstance(obj, list) and type(obj) is list:
            start = self.skip(prefix, obj)
        if start > 0 and isinstance(obj, list):
            self.rest(obj, start, prefix, depth)
        elif len(obj) > MAX_ITEMS:
            self.leaf(prefix, obj)
        else:
            items = list(obj)
            start = len(self.out)
            paths = item_paths(prefix, obj, len(items), _attribute_path)
            self.holder(obj, prefix, depth, zip(paths, items, strict=True))
            self.held(obj, prefix, depth, start)

    def held(self, obj: object, prefix: str, depth: int, start: int) -> None:
        """``obj`` (its leaves those given from ``start`` on) to the holders, where it is a
        plain ``list`` or ``dict`` and they are asked for."""
        if self.holders is not None and type(obj) in (list, dict):
            self.holders.append((prefix, obj, depth, start, len(self.out)))

    def holder(
        self, obj: object, prefix: str, depth: int, items: Iterable[tuple[str, Any]]
    ) -> None:
        """The leaves of a holder's ``items`` ((path, value) pairs); a holder without any is
        one leaf itself. One whose every child gave none was skipped (see :func:`leaves`), not
        empty: it gives no leaf."""
        if not self.children(items, depth):
            self.leaf(prefix, obj)

    def attributes(self, obj: object, prefix: str, depth: int, fields: dict[Any, Any]) -> None:
        """The leaves of an object's attributes (``fields``, by name): :meth:`holder` over
        their paths, written out (the walk's commonest loop: a request's some 45 values)."""
        same = self.same
        walked = False
        for name, value in fields.items():
            if name.startswith("__"):
                continue
            walked = True
            if type(name) is str and len(name) <= MAX_KEY:
                path = f"{prefix}.{name}"
            else:
                path = _attribute_path(prefix, name)
            if type(value) in _PLAIN:
                if same is None or not same(path, value):
                    self.leaf(path, value)
            else:
                self.value(value, path, depth + 1)
        if not walked:
            self.leaf(prefix, obj)

    def partly(
        self,
        obj: object,
        prefix: str,
        depth: int,
        names: tuple[Any, ...],
        values: tuple[Any, ...],
        walked: tuple[int, ...],
    ) -> None:
        """The leaves of an object's attributes at the positions ``walked`` of ``names``
        (see :meth:`Sameness.holder`); an object without a name that :meth:`attributes`
        would walk is one leaf itself, as there."""
        if not names or (
            names[0].startswith("__") and all(name.startswith("__") for name in names)
        ):
            self.leaf(prefix, obj)  # nothing of it is walked: it is a leaf itself
            return
        for index in walked:
            name = names[index]
            if name.startswith("__"):
                continue
            if type(name) is str and len(name) <= MAX_KEY:
                path = f"{prefix}.{name}"
            else:
                path = _attribute_path(prefix, name)
            value = values[index]
            if type(value) in _PLAIN:
                self.leaf(path, value)
            else:
                self.value(value, path, depth + 1)

    def rest(self, items: list[Any], start: int, prefix: str, depth: int) -> None:
        """The leaves of ``items[start:]`` (see :func:`leaves`): the cost is theirs alone."""
        rest = items[start:]
        if not rest:
            return
        if len(rest) > MAX_ITEMS or self.budget.left <= 0:
            self.leaf(f"{prefix}[{start}:]", rest)
            return
        same = self.same
        for index, value in enumerate(rest, start):  # :meth:`children`, written out
            path = f"{prefix}[{index}]"
            if type(value) in _PLAIN:
                if same is None or not same(path, value):
                    self.leaf(path, value)
            else:
                self.value(value, path, depth + 1)

    def children(self, items: Iterable[tuple[str, Any]], depth: int) -> bool:
        """The leaves of ``items``, one level below ``depth``; whether there were any items.
        A plain value is a leaf at any depth: taken here, without a call."""
        same = self.same
        walked = False
        for path, value in items:
            walked = True
            if type(value) in _PLAIN:
                if same is None or not same(path, value):
                    self.leaf(path, value)
            else:
                self.value(value, path, depth + 1)
        return walked


#: The built-in types whose instances hold no attributes of their own.
_BUILTIN = frozenset((*SCALARS, list, tuple, dict, deque, MappingProxyType))


def own_attributes(obj: object) -> dict[Any, Any]:
    """What ``obj``'s own ``__dict__`` holds (a copy; empty where it has none), read through
    the standard ``__dict__`` descriptor of its class: no ``__getattribute__``, property or
    ``__getattr__`` of the target's runs. A class whose ``__dict__`` is anything else (a
    property of its own) gives nothing."""
    slot = None
    for ancestor in type(obj).__mro__:
        slot = _class_dict(ancestor).get("__dict__")
        if slot is not None:
            break
    if type(slot) is not GetSetDescriptorType:
        return {}
    try:
        found = slot.__get__(obj, type(obj))
    except (AttributeError, TypeError):
        return {}
    return dict(found) if type(found) is dict else {}


def plain_children(prefix: str, names: tuple[Any, ...], values: tuple[Any, ...]) -> dict[str, Any]:
    """``{path: value}`` of the plain values among an object's attributes ``names`` (with
    ``values``) below ``prefix``, as a walk gives their paths."""
    return {
        _attribute_path(prefix, name): value
        for name, value in zip(names, values, strict=True)
        if type(value) in _PLAIN and not name.startswith("__")
    }


def _attribute_path(prefix: str, name: object) -> str:
    """The path of attribute ``name`` below ``prefix``: a long name is shortened as a long key
    is, so that no path is long."""
    if type(name) is str and len(name) <= MAX_KEY:
        return f"{prefix}.{name}"
    shown = shown_name(name) if isinstance(name, str) else _key_text(name)
    return f"{prefix}.{shown}"


def _key_text(key: object) -> str:
    """A key as a path shows it: its repr, or, past :data:`MAX_KEY` characters, the start of it
    and a digest of the whole, so that two keys give two paths and no path is long."""
    if isinstance(key, str) and len(key) > MAX_KEY:
        return shown_name(key, quoted=True)
    if isinstance(key, bytes) and len(key) > MAX_KEY:  # cut first: never the whole key's repr
        whole = _sha256(key).hexdigest()[:16]
        return f"{repr(key[:MAX_KEY])[:MAX_KEY]}...({len(key):,} bytes, sha256 {whole})"
    if isinstance(key, int) and key.bit_length() > _DECIMAL_BITS:  # too long for decimal text
        whole = _sha256(format(int(key), "x").encode()).hexdigest()[:16]
        return f"<int of {key.bit_length():,} bits, sha256 {whole}>"
    from ppaux.observer.keyorder import key_repr

    text = key_repr(key)
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
