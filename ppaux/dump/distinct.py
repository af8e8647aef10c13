"""The distinct objects of a container, found in C: a pickle repeats a value in a byte or two
(``N``, ``BINGET``), so a file under a megabyte may hold a list of a million items of which a
few are distinct. The walk and the digests take such a list apart here, at C speed, and give
only its distinct objects a Python step."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

__all__ = ["each_once", "unseen"]


def unseen(children: Collection[Any], seen: set[int]) -> list[Any]:
    """``children`` not in ``seen``, each object once, in the order the walk pushes them (of
    repeated items, the last kept: the one the stack gives back first). A list holding one
    value a million times (a byte each in the pickle) is taken apart in C, and only its
    distinct values cost a Python step."""
    items = children if isinstance(children, (list, tuple)) else list(children)
    if len(items) < 8:
        return [child for child in items if id(child) not in seen]
    backwards = items[::-1]
    distinct = dict(zip(map(id, backwards), backwards, strict=True))
    if not seen.isdisjoint(distinct):
        distinct = {key: child for key, child in distinct.items() if key not in seen}
    kept = list(distinct.values())
    kept.reverse()
    return kept


def each_once(digest: Callable[[object], str], items: Collection[object]) -> list[str]:
    """``[digest(item) for item in items]``, each object digested once: a list may hold one
    value a million times (a byte each in the pickle), and only the loops here that run in C
    see every item."""
    if len(items) < 8:
        return [digest(item) for item in items]
    distinct = dict(zip(map(id, items), items, strict=True))
    if len(distinct) == len(items):
        return [digest(item) for item in items]
    digests = {key: digest(item) for key, item in distinct.items()}
    return list(map(digests.__getitem__, map(id, items)))
