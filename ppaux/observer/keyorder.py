"""A dict key's text in a path, the same in every process: a ``frozenset`` key (a
``frozenset`` of strings: ``{frozenset(tags): 1}``) is ``repr``'d in its elements' hash order,
which each process's string hash seed sets (sglang's schedulers each draw one), while two
equal keys are the same key to Python in any process. Its elements are shown sorted by their
own text here, in a ``tuple`` key too; any other key is its ``repr``.

Imports nothing beyond the standard library.
"""

from __future__ import annotations

__all__ = ["key_repr"]

#: How deep a key's frozensets and tuples are followed; deeper, ``repr`` as it is.
_DEPTH = 20


def key_repr(key: object, depth: int = 0) -> str:
    """``repr(key)``, with each ``frozenset`` in it (at any depth of plain tuples and
    frozensets) shown with its elements sorted by their text."""
    if depth < _DEPTH and type(key) is frozenset:
        if not key:
            return "frozenset()"
        return "frozenset({" + ", ".join(sorted(key_repr(k, depth + 1) for k in key)) + "})"
    if depth < _DEPTH and type(key) is tuple:
        parts = [key_repr(k, depth + 1) for k in key]
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
    return repr(key)
