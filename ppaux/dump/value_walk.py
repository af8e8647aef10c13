"""Every value reachable from a dump's value, each object once, depth- and count-bounded: the
walk the checks, the tallies and the commands that rebuild a dump go over it with."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ppaux.dump.distinct import unseen
from ppaux.dump.model import Opaque, TensorRef
from ppaux.errors import LimitExceeded
from ppaux.limits import Limits

__all__ = ["LEAF_TYPES", "walk"]


def walk(
    value: object,
    limits: Limits,
    path: str = "",
    seen: set[int] | None = None,
    charge: Callable[[int], None] | None = None,
) -> Iterator[Any]:
    """Every value reachable from ``value`` (itself included), each object once, depth-bounded.

    A ``seen`` set shared between calls skips what an earlier call already yielded.
    ``charge(n)`` is told of the ``n`` children of each container taken apart, seen before or
    not: the work of a walk, which a value repeated a million times in one list makes far
    larger than what it yields.
    """
    if seen is None:
        seen = set()
    stack: list[tuple[Any, int]] = [(value, 0)]
    visited = 0
    while stack:
        current, depth = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        visited += 1
        if visited > limits.max_items:
            raise _too_many(path, limits)
        yield current
        if current.__class__ in LEAF_TYPES:
            continue
        if depth >= limits.max_depth:
            if isinstance(current, (dict, list, tuple, set, frozenset, Opaque)) and current:
                raise LimitExceeded(path, "max_depth", limits.max_depth, _DEEP)
            continue
        children: Any
        if isinstance(current, dict):
            children = [*current.keys(), *current.values()]
        elif isinstance(current, (list, tuple, set, frozenset)):
            children = current
        elif isinstance(current, Opaque):
            pairs = (x for pair in current.items for x in pair)
            children = [*current.args, current.state, *current.appended, *pairs]
        elif isinstance(current, TensorRef):
            children = [current.state] if current.state is not None else []
        else:
            continue
        if charge is not None:
            charge(len(children))
        # Children that hold no other value (a wide dict's keys and values are mostly these)
        # are yielded here, before the next container, last first as the stack gives them;
        # in C where a long list holds only such values: no depth to carry, no type tests.
        kept = unseen(children, seen)
        if not kept:
            continue
        if len(kept) >= 8:  # unseen() gave each object once
            kinds = set(map(type, kept))
            if kinds <= LEAF_TYPES or (kinds <= _EMPTY_TAKES and not any(map(len, kept))):
                visited += len(kept)
                if visited > limits.max_items:
                    raise _too_many(path, limits)
                seen.update(map(id, kept))
                yield from reversed(kept)
                continue
        leaves = []
        for child in kept:
            cls = child.__class__
            if cls in LEAF_TYPES or (cls in _EMPTY_TAKES and not child):
                leaves.append(child)
            else:
                stack.append((child, depth + 1))
        for leaf in reversed(leaves):
            if id(leaf) in seen:  # a short list may hold one twice
                continue
            seen.add(id(leaf))
            visited += 1
            if visited > limits.max_items:
                raise _too_many(path, limits)
            yield leaf


_DEEP = "the dump nests too deeply"


def _too_many(path: str, limits: Limits) -> LimitExceeded:
    return LimitExceeded(path, "max_items", limits.max_items, "the dump holds too many values")


#: Exact types of values that hold no other value (a subclass may, so it takes the stack).
LEAF_TYPES = frozenset({str, int, float, bool, type(None), bytes, complex})
#: Exact container types whose empty values are leaves too: ``(]]]...e`` makes a list of a
#: million empty lists at a byte each, and none of them has anything to take apart.
_EMPTY_TAKES = frozenset({list, dict, tuple, set, frozenset})
