"""Identity told in C: whether two lists start with the very same objects, and whether a
class changed since it was last read.

A ``consume`` that rebuilds a request's list at every step (``old + [x]``) hands the check a
new list whose first items are the old one's, object for object. Proving that by ``is``, item
by item, costs some 40 ns an item in Python; on CPython a list's items are an array of
pointers, and two lists hold the same objects in the same places exactly when those arrays
hold the same bytes. :func:`same_start` compares them so (the two arrays read as ``bytes``
and compared: a few C calls whatever the length), on private copies of both lists made first
(a slice, one C call: no other thread can resize a list while it is copied, nor touch the
copy after), and never runs an item's ``__eq__``. Where the interpreter does not lay lists
out as CPython does (found once, by reading a list of known objects), it compares item by
item with ``is``, as before.

:func:`class_version` is CPython's own version tag of a class (the number its attribute cache
is keyed by), read where the type object holds it once that place is checked against what
Python says of a class made for the purpose; the walk keys what it read of a class by it.
"""

from __future__ import annotations

import ctypes
import sys
from operator import is_
from typing import Any

__all__ = ["class_version", "same_start"]

_WIDTH = ctypes.sizeof(ctypes.c_void_p)
#: Where a CPython list object holds the address of its item array: after its reference
#: count, its type and its size (a ``list``'s ``__basicsize__`` ends with that address and
#: the array's allocated length).
_ITEMS_AT = list.__basicsize__ - 2 * _WIDTH
_pointer = ctypes.c_void_p.from_address
_bytes_at = ctypes.string_at


def _item_array(items: list[Any]) -> int:
    """The address of ``items``' item array (CPython's layout)."""
    return int(_pointer(id(items) + _ITEMS_AT).value or 0)


def _lists_read_as_cpython() -> bool:
    """Whether a list's item array is where CPython puts it, holding its items' addresses
    (``id`` is an object's address in CPython): read once from a list of known objects."""
    if sys.implementation.name != "cpython":
        return False
    try:
        known = [object(), object(), object()]
        start = _item_array(known)
        if start == 0:
            return False
        read = (ctypes.c_void_p * len(known)).from_address(start)
        return [int(address or 0) for address in read] == [id(item) for item in known]
    except Exception:  # a ctypes without these: compared item by item
        return False


_BY_BYTES = _lists_read_as_cpython()


def same_start(was: list[Any], items: list[Any], count: int) -> bool:
    """Whether the first ``count`` items of ``items`` are the very objects (``is``) the first
    ``count`` items of ``was`` are, in the same places; both must hold that many. Both must
    be exactly ``list``s."""
    old = was[:count]  # private copies: whatever another thread does to the lists after
    new = items[:count]
    if len(old) != count or len(new) != count:
        return False
    if count == 0 or not _BY_BYTES:
        return all(map(is_, old, new))
    size = count * _WIDTH
    return bool(_bytes_at(_item_array(old), size) == _bytes_at(_item_array(new), size))


# ----------------------------------------------------------------------------------------------
# A class's version

#: Where CPython keeps a type's version tag: the 49th word of its type object (3.11 - 3.13:
#: after its name, sizes, slots, flags, base, dict, bases, ``__mro__``, cache, subclasses,
#: weak references and ``tp_del``). CPython sets it to 0 whenever the class or one of its
#: bases changes (an attribute set or deleted, ``__bases__`` assigned), and gives the class a
#: new, different one at the next lookup of an attribute on it.
_VERSION_AT = 48 * _WIDTH
#: The words of a type object checked against what Python says of the class (its basic size,
#: its flags, ``__base__``, ``__bases__`` and ``__mro__``) before the version is trusted.
_KNOWN_WORDS = {4: "__basicsize__", 21: "__flags__"}
_KNOWN_OBJECTS = {32: "__base__", 42: "__bases__", 43: "__mro__"}


def _looked_up(klass: type) -> None:
    """Look an absent attribute up on ``klass`` (its version is given on such a lookup)."""
    getattr(klass, "__ppaux_version_probe__", None)


def _version_read_as_cpython() -> bool:
    """Whether a class's version is where :data:`_VERSION_AT` says, and behaves as CPython's:
    read once from a class made for it (its known words first, then a version that changes
    when the class does)."""
    if not _BY_BYTES or _WIDTH != 8 or sys.version_info[:2] not in ((3, 11), (3, 12), (3, 13)):
        return False
    try:

        class Probe:
            pass

        words = (ctypes.c_size_t * 49).from_address(id(Probe))
        if any(words[i] != getattr(Probe, name) for i, name in _KNOWN_WORDS.items()):
            return False
        if any(words[i] != id(getattr(Probe, name)) for i, name in _KNOWN_OBJECTS.items()):
            return False
        _looked_up(Probe)
        first = _read_version(Probe)
        Probe.changed = True  # type: ignore[attr-defined]
        after = _read_version(Probe)
        _looked_up(Probe)
        again = _read_version(Probe)
        return first != 0 and after == 0 and again not in (0, first)
    except Exception:  # a ctypes without these: the layout is read again at every walk
        return False


def _read_version(klass: type) -> int:
    return int(ctypes.c_uint.from_address(id(klass) + _VERSION_AT).value)


_VERSIONS = _version_read_as_cpython()


def class_version(klass: type) -> int:
    """A number that changes whenever ``klass`` or one of its bases changes (an attribute set
    or deleted on it, ``__bases__`` assigned); 0 where none is known (then nothing read of
    the class may be kept). Where it has none now, looks an attribute up on the class first,
    which gives it one."""
    if not _VERSIONS:
        return 0
    version = _read_version(klass)
    if version == 0:  # changed since its last lookup, or never looked up
        _looked_up(klass)
        version = _read_version(klass)
    return version
