"""What a record holds in place of a value: digests of the values themselves, never of a text.

A tensor is digested as the values torch gives for it: a conjugate or negative view
(``x.conj()``, ``torch._neg_view(x)``) by its resolved values, every NaN as one canonical NaN (a
NaN equals a NaN in the same place; -0.0 and 0.0 still differ), in row-major order, a piece of
at most :data:`~.array_digests._CHUNK` elements at a time: a piece is copied only where it is
not a contiguous host piece, carries a conjugate or negative bit, or holds a NaN, so the memory
a digest takes is bounded whatever the tensor's size; the time is bounded by
``Limits.max_digested_elements`` (:func:`read_bound`: a tensor of more elements, an expanded
view of 4 bytes among them, is not compared). A numpy array (not of objects) is digested the
same way from its bytes in C order; a ``memoryview`` or a ``bytearray`` by its bytes.

A container (or an object's fields) that a walk does not take apart is digested whole
(:class:`Digests`): every tensor and array inside hashed, every plain value by its key, a
mapping's items in any order (as Python's ``==`` has it for dicts, and as a walk compares a
mapping it takes apart: path by path), a list's and a tuple's in theirs, each distinct
container once however often it is shared, at most ``Limits.max_digested_items`` items per
description; past that, or for an object whose only text is its address, the value is *not
compared*, and a record says so (the report lists it).

Runs in the check's child; imports torch and numpy inside the functions that need them.
"""

from __future__ import annotations

import math
import re
import sys
from array import array
from builtins import format, isinstance, len, repr, str, type  # noqa: UP029  (bound before the target loads)
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from hashlib import sha256 as _sha256  # bound before any target's code can patch hashlib
from typing import TYPE_CHECKING, Any, TypeGuard

if TYPE_CHECKING:
    import numpy

from ppaux.errors import PpauxError
from ppaux.limits import Limits
from ppaux.observer.array_digests import (
    array_digest,
    array_values,
    buffer_key,
    buffer_text,
    tensor_digest,
    tensor_values,
)
from ppaux.suggestions import RaiseLimit, limit_note

__all__ = [
    "DECIMAL_BITS",
    "Digests",
    "NotCompared",
    "array_digest",
    "array_values",
    "buffer_key",
    "buffer_text",
    "digest_bounds",
    "digest_budget",
    "int_text",
    "is_array",
    "only_address",
    "plain_text",
    "read_bound",
    "tensor_digest",
    "tensor_values",
    "value_key",
]

#: The most items one description digests whole (see :class:`Digests`; past it, not
#: compared): ``Limits.max_digested_items`` of the run (:func:`digest_budget`).
_BUDGET: ContextVar[int] = ContextVar("digest_budget", default=Limits().max_digested_items)
#: How deep a digest goes into nested containers (deeper, the value is not compared):
#: ``Limits.max_value_nesting`` of the run (:func:`digest_budget`).
_NESTING: ContextVar[int] = ContextVar("digest_nesting", default=Limits().max_value_nesting)
#: The most elements of one tensor or array a digest reads (more: not compared):
#: ``Limits.max_digested_elements`` of the run (:func:`digest_budget`).
_ELEMENTS: ContextVar[int] = ContextVar("digest_elements", default=Limits().max_digested_elements)
#: A memory address in a repr ('<_thread.lock object at 0x7f3a...>'), not part of a value.
ADDRESS = re.compile(r"\bat 0x[0-9a-fA-F]+|\b0x[0-9a-fA-F]{8,}\b")


class NotCompared(PpauxError):
    """A value that cannot be compared within the bounds: why, in a few words (and, where a
    limit was the bound, the limit to raise as its suggestion)."""


@contextmanager
def digest_budget(
    items: int, nesting: int | None = None, elements: int | None = None
) -> Iterator[None]:
    """While the block runs, a description digests at most ``items`` items whole,
    containers at most ``nesting`` deep and tensors or arrays of at most ``elements`` elements
    (the default's where None)."""
    token = _BUDGET.set(items)
    deep = _NESTING.set(Limits().max_value_nesting if nesting is None else nesting)
    most = _ELEMENTS.set(Limits().max_digested_elements if elements is None else elements)
    try:
        yield
    finally:
        _ELEMENTS.reset(most)
        _NESTING.reset(deep)
        _BUDGET.reset(token)


#: The most bits an int is shown in decimal with: 602 digits, under the fewest Python lets
#: ``sys.set_int_max_str_digits`` allow (640), so that its text never fails; larger, an int is
#: shown by its size and hex digits (linear in its size, where decimal text is quadratic).
DECIMAL_BITS = 2000
#: Characters of a long str or bytes hashed at a time: a digest never copies more.
_PIECE = 1 << 20


def digest_bounds() -> tuple[int, int]:
    """The items and the nesting a digest may take now (see :func:`digest_budget`): what an
    empty container's record depends on besides its type."""
    return _BUDGET.get(), _NESTING.get()


def read_bound(count: int) -> None:
    """Raise :class:`NotCompared` where a tensor or an array of ``count`` elements is more
    than a digest reads now (``Limits.max_digested_elements``): reading every element costs
    time that its memory does not bound (``torch.zeros(1).expand(2**33)`` holds 4 bytes). Such
    a value is not compared, never described by less than its values: two tensors that agree
    in a part of their elements may differ in the rest."""
    limit = _ELEMENTS.get()
    if count > limit:
        raise NotCompared(
            f"{count:,} elements, more than a digest reads "
            f"{limit_note('max_digested_elements', limit)}"
        ).suggest(RaiseLimit("max_digested_elements", limit))


def int_text(value: int) -> str:
    """An int's text: its decimal repr, or past :data:`DECIMAL_BITS` bits its size in bits and
    its first and last hex digits (its key, :func:`value_key`, digests all of them)."""
    if value.bit_length() <= DECIMAL_BITS:
        return int.__repr__(int(value))
    digits = format(abs(int(value)), "x")
    sign = "-" if value < 0 else ""
    return f"<int of {value.bit_length():,} bits: {sign}0x{digits[:24]}...{digits[-8:]}>"


def plain_text(value: object, limit: int) -> str:
    """The text of a str, bytes or int, at most about ``limit`` characters, made from the
    value's start only (never the whole value's repr); that of any other value is its repr."""
    if isinstance(value, (str, bytes)):
        head = repr(value[:limit])
        return head if len(value) <= limit else f"{head}... ({len(value):,} in all)"
    if isinstance(value, int) and value.bit_length() > DECIMAL_BITS:
        return int_text(value)
    text = repr(value)
    if not isinstance(text, str):
        raise TypeError(f"__repr__ returned {type(text).__name__}, not str")
    return text


def _text_digest(value: str | bytes) -> str:
    """sha256 of a str's UTF-8 (surrogates kept) or of a bytes, :data:`_PIECE` at a time."""
    digest = _sha256()
    for start in range(0, len(value), _PIECE):
        piece = value[start : start + _PIECE]
        digest.update(piece.encode("utf-8", "surrogatepass") if isinstance(piece, str) else piece)
    return "sha256:" + digest.hexdigest()


def value_key(value: object, text: str) -> str:
    """The key a plain value (or one described by its text) is compared by: floats and each
    part of a complex by value (-0.0 equals 0.0, NaN equals NaN), the rest by their text,
    addresses left out."""
    if isinstance(value, float):
        return "nan" if math.isnan(value) else repr(0.0 if value == 0 else value)
    if isinstance(value, complex):  # each part as a float is: -0.0 equals 0.0, NaN equals NaN
        parts = (
            math.nan if math.isnan(p) else 0.0 if p == 0 else p for p in (value.real, value.imag)
        )
        return repr(complex(*parts))
    if isinstance(value, int) and value.bit_length() > DECIMAL_BITS:
        return "int " + _text_digest(format(int(value), "x"))
    if isinstance(value, (bool, int, type(None))):
        return repr(value)
    if isinstance(value, (str, bytes)):
        return _text_digest(value)  # its own characters or bytes: ``text`` is not read
    # The default repr of an object (a lock, a generator, an observer) names its address,
    # which two paths never share: the same object state must compare equal.
    return (
        "sha256:" + _sha256(ADDRESS.sub("0x?", text).encode("utf-8", "surrogatepass")).hexdigest()
    )


# ----------------------------------------------------------------------------------------------
# Containers and objects digested whole

Fields = Callable[[Any], "dict[str, Any] | None"]


class Digests:
    """One description's digests of values digested whole: each distinct container (by
    identity, alive while the description runs) once, at most ``budget`` items in all (the
    run's ``Limits.max_digested_items`` when None, see :func:`digest_budget`). ``fields``
    gives an object's fields (None: not an object with fields), ``tensor_text`` a tensor's
    description (its record, digest included)."""

    def __init__(
        self, fields: Fields, tensor_text: Callable[[Any], str], budget: int | None = None
    ) -> None:
        self.fields = fields
        self.tensor_text = tensor_text
        self.budget = _BUDGET.get() if budget is None else budget
        self.left = self.budget
        self.nesting = _NESTING.get()
        # By identity, the value kept with its digest: an id is an object's only while the
        # object lives, and a value made afresh on each read (a property's new list) would
        # otherwise be freed and its id given to the next such value, whose digest this is not.
        self.memo: dict[int, tuple[Any, str]] = {}
        self.open: set[int] = set()

    def digest(self, value: object) -> str:
        """sha256 of ``value`` digested whole; raises :class:`NotCompared`."""
        try:
            return self._of(value, 0)
        except RecursionError:  # a nesting bound raised past what Python's stack holds
            raise NotCompared(
                "nested too deeply to digest (Python's recursion limit was reached)"
            ) from None

    def _spend(self, count: int) -> None:
        self.left -= count
        if self.left < 0:
            limit = self.budget
            raise NotCompared(
                f"more than {limit:,} items to digest {limit_note('max_digested_items', limit)}"
            ).suggest(RaiseLimit("max_digested_items", limit))

    def _room(self, value: object) -> None:
        """Raise :class:`NotCompared` before a container is read whose items alone would spend
        more than the budget left (each item costs one at least): a list of millions costs
        the check its length, read without running the target's code, not a pass over it."""
        for kind, length in _LENGTHS:
            if isinstance(value, kind):
                size = length(value)
                if size > self.left:
                    self._spend(size)
                return

    def _of(self, value: object, depth: int) -> str:
        import torch

        self._spend(1)
        if isinstance(value, (int, float, complex, str, bytes, bool, type(None))):
            text = "" if isinstance(value, (str, bytes)) else plain_text(value, 0)
            return f"{_type_name(value)}={value_key(value, text)}"
        if isinstance(value, torch.Tensor):
            return self.tensor_text(value)
        if is_array(value):
            read_bound(int(value.size))
            return f"ndarray {value.dtype} {list(value.shape)} {array_digest(value)}"
        if isinstance(value, (memoryview, bytearray)):
            return f"{_type_name(value)}={buffer_key(value)}"
        known = self.memo.get(id(value))
        if known is not None and known[0] is value:
            return known[1]
        if id(value) in self.open:
            return "cycle"
        if depth >= self.nesting:
            limit = self.nesting
            raise NotCompared(
                f"nested more than {limit} deep {limit_note('max_value_nesting', limit)}"
            ).suggest(RaiseLimit("max_value_nesting", limit))
        self.open.add(id(value))
        try:
            made = self._whole(value, depth)
        finally:
            self.open.discard(id(value))
        self.memo[id(value)] = (value, made)
        return made

    def _whole(self, value: object, depth: int) -> str:
        digest = _sha256(_type_name(value).encode())
        parts: list[Any]
        self._room(value)
        if isinstance(value, dict):
            items = list(value.items())
            self._spend(len(items))
            parts = [(self._of(k, depth + 1), self._of(v, depth + 1)) for k, v in items]
            parts.sort()  # equal in any order (see the module's docstring)
        elif isinstance(value, (list, tuple)):
            items = list(value)
            quick = _quick(items)
            if quick is not None:
                self._spend(len(items))
                digest.update(quick)
                return digest.hexdigest()
            parts = [self._of(v, depth + 1) for v in items]
        elif isinstance(value, (set, frozenset)):
            parts = sorted(self._of(v, depth + 1) for v in list(value))
        elif is_array(value, objects=True):
            parts = [list(value.shape), *(self._of(v, depth + 1) for v in list(value.flat))]
        else:
            found = self.fields(value)
            if not found:
                text = repr(value)
                if not isinstance(text, str):
                    raise TypeError(f"__repr__ returned {type(text).__name__}, not str")
                if only_address(value, text):
                    raise NotCompared(f"holds a {_type_name(value)} whose text is its address")
                return f"{_type_name(value)}={value_key(value, text)}"
            parts = [
                (name, self._of(v, depth + 1))
                for name, v in found.items()
                if not name.startswith("__")
            ]
        digest.update(repr(parts).encode("utf-8", "surrogatepass"))
        return digest.hexdigest()


#: The containers :meth:`Digests._room` measures, with their own ``__len__`` (a subclass's is
#: the target's code, and may lie or raise).
_LENGTHS: tuple[tuple[type, Callable[[Any], int]], ...] = (
    (dict, dict.__len__),
    (list, list.__len__),
    (tuple, tuple.__len__),
    (set, set.__len__),
    (frozenset, frozenset.__len__),
)


def _quick(items: list[Any]) -> bytes | None:
    """The bytes of a list of exactly floats (-0.0 as 0.0, every NaN one NaN) or exactly ints,
    made without a step per item in Python; None for any other list."""
    if items and all(type(v) is float for v in items):
        nans = [i for i, v in enumerate(items) if v != v]
        values = array("d", (v + 0.0 for v in items))  # -0.0 + 0.0 is 0.0
        for index in nans:
            values[index] = math.nan
        return b"f" + values.tobytes() + repr(nans).encode()
    if items and all(type(v) is int for v in items):
        if max(map(int.bit_length, items)) > DECIMAL_BITS:
            return b"x" + ",".join(map(hex, items)).encode()
        return b"i" + ",".join(map(str, items)).encode()
    return None


def _type_name(value: object) -> str:
    klass = type(value)
    module = getattr(klass, "__module__", "") or ""
    name = getattr(klass, "__qualname__", klass.__name__)
    return name if module == "builtins" else f"{module}.{name}"


def is_array(value: object, objects: bool = False) -> TypeGuard[numpy.ndarray[Any, Any]]:
    """Whether ``value`` is a numpy array (of objects, with ``objects``; else of anything else).
    Imports no numpy: an array exists only where numpy was imported."""
    numpy = sys.modules.get("numpy")
    ndarray = getattr(numpy, "ndarray", None)
    if not isinstance(ndarray, type) or not isinstance(value, ndarray):
        return False
    held: Any = value
    return bool(held.dtype.hasobject) == objects


def only_address(value: object, text: str) -> bool:
    """Whether ``text`` (``value``'s repr) says nothing but its type and its address."""
    klass = type(value)
    bare = ADDRESS.sub("0x?", text)
    names = {klass.__name__, klass.__qualname__, f"{klass.__module__}.{klass.__qualname__}"}
    return bare in {f"<{name} object 0x?>" for name in names}
