"""A named tuple's field names, as the walk (:mod:`.walk`) names its items by them.

Imports nothing beyond the standard library.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["field_names", "item_paths"]

_class_dict: Any = type.__dict__["__dict__"].__get__


def field_names(obj: object, count: int) -> tuple[str, ...] | None:
    """The field names of ``obj`` where it is a named tuple of ``count`` items (its class's
    ``_fields``, read from the classes' own dicts: no descriptor of the target's runs), else
    None."""
    if not isinstance(obj, tuple):
        return None
    for klass in type(obj).__mro__:
        names = _class_dict(klass).get("_fields")
        if names is not None:
            break
    else:
        return None
    if not isinstance(names, tuple) or len(names) != count:
        return None
    if not all(type(n) is str and n.isidentifier() for n in names):
        return None
    return names


def item_paths(
    prefix: str, obj: object, count: int, attribute: Callable[[str, str], str]
) -> Iterator[str]:
    """The paths of the ``count`` items of a tuple, a list or a deque ``obj`` below
    ``prefix``: ``[i]``, or a named tuple's by field name (``attribute(prefix, name)``)."""
    names = field_names(obj, count)
    if names is None:
        return (f"{prefix}[{i}]" for i in range(count))
    return (attribute(prefix, name) for name in names)
