"""The requests of both paths, described step after step at the cost of what changed.

``consume`` typically appends to a request's lists (``output_ids``, one value per token in
``customized_info``), so that by step ``n`` a request holds ``n`` steps of history. Describing
it whole at every step would cost the check ``O(n)`` per step, ``O(n**2)`` in all, for a target
whose own work per step is constant. The walk describes each pair of requests
(single-stage and PP, request ``i`` of each) so that a list that is the same list object as at
the previous step, and no shorter, or a new list that starts with the very items (the same
objects) the last one held (``consume`` rebuilding it as ``old + [x]``: told apart by identity,
the two lists' item addresses compared in C, no ``__eq__``: :mod:`.identity`), is described
from where the last description ended, and a plain value (an ``int``, ``str``, ``float``...
exactly) that is the very object the same path held at the previous step is left out: on both
sides alike, or on neither (where the sides disagree, the pair is described again from what
both left out). Of an object that holds the very attribute names it held at the previous step,
in the same order, the values that are the very objects of then are found in one pass in C
(no call per value), and only the others, and every value that is not plain, are walked.
Everything else (holders, tensors, other values) is described at every step. A step's records
are then what the step added or changed, and the parent compares them side by side as it
compares whole descriptions: a plain value left out is unchanged on both sides since the last
step's records, which were compared then.

What this leaves out, an item of such a list changed in place, is caught by the whole
description both paths' requests get once their batch size ends (the ``requests`` record),
unless it was changed back before then.

Each path's requests are described by a :class:`SideWalk` in the process that holds them (the
single stage's in the check's child, rank 0's in rank 0's own process: :mod:`.apart`); the two
offer what they left out and :func:`disagreeing` says which pairs to describe again, so that
what crosses between the processes is plain data. :class:`RequestWalk` does both sides in one
process.

Runs in the check's child and rank 0's process (or in-process for an object in hand). Imports
torch when used.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import compress
from itertools import count as _positions
from operator import is_, is_not, not_
from typing import Any

from ppaux.observer.identity import same_start
from ppaux.observer.walk import SCALARS, Same, Sameness, Skip, plain_children

__all__ = ["Offer", "Redo", "RequestWalk", "SideWalk", "disagreeing"]

#: (side, request number, path) -> (the list seen there, how many of its items are described).
_Memo = dict[tuple[int, int, str], tuple[list[Any], int]]

#: (side, request number) -> {path: the plain value seen there at the last step}.
_Values = dict[tuple[int, int], dict[str, Any]]

#: {path: (the names, the values, the positions of the values that are not plain, or None
#: where not found)} of the objects walked at one step (see
#: :meth:`ppaux.observer.walk.Sameness.holder`).
_Holders = dict[str, tuple[tuple[Any, ...], tuple[Any, ...], tuple[int, ...] | None]]

#: The plain types (exactly), and whether a type is one of them.
_PLAIN = frozenset(SCALARS)
_plain_type = _PLAIN.__contains__

#: How one request is described: its view, then ``skip`` and ``same`` (see
#: :func:`ppaux.observer.compare.leaves`).
Describe = Callable[[Any, Skip, Same], dict[str, dict[str, Any]]]


#: One side's first description of a request at a step: its records, where each list's
#: description started, and the paths it left out (see :class:`SideWalk`).
Offer = tuple[dict[str, dict[str, Any]], dict[str, int], list[str]]

#: Request number -> (where each list starts, the paths that may be left out): the requests
#: whose sides disagreed, described again from what both left out.
Redo = dict[int, tuple[dict[str, int], list[str]]]


class SideWalk:
    """The descriptions of one path's requests (one batch size), made in the process that
    holds them: :meth:`first` describes each request as the module's docstring says and
    offers what it left out; :meth:`settle` describes again those whose two sides disagreed
    (the other side may be in another process: rank 0's) and keeps what the next step
    compares with. ``describe`` is how one request is described."""

    def __init__(self, describe: Describe) -> None:
        self.describe = describe
        self.memo: _Memo = {}
        self.values: _Values = {}
        self.holders: dict[tuple[int, int], _Holders] = {}
        self.pending: list[tuple[Any, _Same]] = []

    def first(self, views: Sequence[Any]) -> list[Offer]:
        """Each request (its view) described but for what the last step described; the
        target's objects may raise while described: the caller says whose."""
        self.pending = []
        offers: list[Offer] = []
        for number, view in enumerate(views):
            same = _Same(self, 0, number)
            found = self.describe(view, same.skip, same)
            self.pending.append((view, same))
            kept = sorted(p for p in _spelled(same.kept, same.now[1]) if isinstance(p, str))
            offers.append((found, dict(same.starts), kept))
        return offers

    def settle(self, redo: Redo) -> dict[int, dict[str, dict[str, Any]]]:
        """The requests named in ``redo`` described again (lists from where it says, leaving
        out only the paths it allows), and what every request held kept for the next step."""
        again: dict[int, dict[str, dict[str, Any]]] = {}
        for number, (view, same) in enumerate(self.pending):
            if number in redo:
                common, allowed = redo[number]
                same = _Same(self, 0, number, dict(common), set(allowed))
                again[number] = self.describe(view, same.skip, same)
            same.keep()
        self.pending = []
        return again


def disagreeing(mine: Sequence[Offer], theirs: Sequence[Offer]) -> Redo:
    """The request pairs whose sides' first descriptions do not line up (a list one side
    replaced or cut, or that only one side has, or a value only one side left as it was):
    both sides are described again from where the earlier of the two starts, leaving out only
    what both left out, so that the records line up item for item."""
    redo: Redo = {}
    for number, (one, two) in enumerate(zip(mine, theirs, strict=False)):
        if one[1] != two[1] or one[2] != two[2]:
            common = {
                path: min(one[1].get(path, 0), two[1].get(path, 0)) for path in {*one[1], *two[1]}
            }
            redo[number] = (common, sorted(set(one[2]) & set(two[2])))
    return redo


class RequestWalk:
    """Both paths' requests in one process (see the module's docstring): a
    :class:`SideWalk` each, lined up by :func:`disagreeing`."""

    def __init__(self, describe: Describe) -> None:
        self.sides = (SideWalk(describe), SideWalk(describe))

    def step(
        self, single: Sequence[Any], pp: Sequence[Any]
    ) -> tuple[list[dict[str, dict[str, Any]]], list[dict[str, dict[str, Any]]]]:
        """The records of what each request pair holds now, but for the items of its lists
        described at earlier steps. ``single`` and ``pp`` are the requests as described (their
        views). The target's objects may raise while described: the caller says whose."""
        one, two = self.sides[0].first(single), self.sides[1].first(pp)
        redo = disagreeing(one, two)
        again = self.sides[0].settle(redo), self.sides[1].settle(redo)
        count = min(len(one), len(two))
        left = [again[0].get(n, one[n][0]) for n in range(count)]
        right = [again[1].get(n, two[n][0]) for n in range(count)]
        return left, right


class _Same(Sameness):
    """What one side's request leaves out at one step (its ``skip`` and its ``same``): of a
    list, the items described at the last step (see :meth:`skip`); a plain value that is the
    very object the same path held at the last step; and, of an object that holds the very
    names it held there (in order), each plain value that is the very object it held there
    (:class:`~ppaux.observer.walk.Sameness`). ``then``: the plain values and the objects seen
    at the last step; ``now``: this step's; ``starts``: where each list's description
    started; ``seen``: each list met; ``kept``: what was left out (a path, or ``("object",
    path, names, the positions walked)``). With ``common`` and ``allowed`` (the second
    description of a pair whose sides disagreed), a list starts no later than ``common``
    says and only the paths in ``allowed`` may be left out, value by value."""

    __slots__ = ("allowed", "common", "kept", "key", "now", "seen", "starts", "then", "walk")

    def __init__(
        self,
        walk: SideWalk,
        side: int,
        number: int,
        common: dict[str, int] | None = None,
        allowed: set[Any] | None = None,
    ) -> None:
        self.walk, self.key, self.common, self.allowed = walk, (side, number), common, allowed
        self.then = (walk.values.get(self.key, {}), walk.holders.get(self.key, {}))
        self.now: tuple[dict[str, Any], _Holders] = ({}, {})
        self.starts: dict[str, int] = {}
        self.seen: dict[str, list[Any]] = {}
        self.kept: set[Any] = set()

    def keep(self) -> None:
        """What the next step compares with: the lists met, the plain values, the objects."""
        memo = self.walk.memo
        side, number = self.key
        for path, items in self.seen.items():
            memo[(side, number, path)] = (items, len(items))
        self.walk.values[self.key] = self.now[0]
        self.walk.holders[self.key] = self.now[1]

    def skip(self, path: str, items: list[Any]) -> int:
        """How many leading items of the list at ``path`` were described at the last step:
        those of the same list, no shorter, or of a new one that starts with the very items
        (the same objects) the last one held."""
        then = self.walk.memo.get((*self.key, path))
        start = 0
        if then is not None and len(items) >= then[1]:
            if then[0] is items or _continues(then[0], then[1], items):
                start = then[1]
        if self.common is not None:
            start = min(start, self.common.get(path, 0))
        self.starts[path] = start
        self.seen[path] = items
        return start

    def __call__(self, path: str, value: object) -> bool:
        self.now[0][path] = value
        then = self.then[0]
        if path in then and then[path] is value and (self.allowed is None or path in self.allowed):
            self.kept.add(path)
            return True
        return False

    def holder(
        self, path: str, names: tuple[Any, ...], values: tuple[Any, ...]
    ) -> tuple[int, ...] | None:
        was = self.then[1].get(path)
        if (
            was is None
            or self.allowed is not None
            or len(was[0]) != len(names)
            or not all(map(is_, names, was[0]))
        ):
            self.now[1][path] = (names, values, None)
            if was is not None:
                # Asked about value by value: each plain value as the last step saw it.
                self.then[0].update(plain_children(path, was[0], was[1]))
            return None
        # The positions whose value is not the very object of the last step (told in C, a
        # step per position, no call of Python code), and those that held no plain value
        # then: a value that is the same object is of the same type.
        changed = tuple(compress(_positions(), map(is_not, values, was[1])))
        held = was[2] if was[2] is not None else _not_plain(was[1])
        walked = held
        if changed:
            walked = tuple(sorted({*held, *changed}))
            plain = {index for index in changed if type(values[index]) in _PLAIN}
            held = tuple(index for index in walked if index not in plain)
        self.now[1][path] = (names, values, held)
        self.kept.add(("object", path, names, walked))
        return walked


def _not_plain(values: tuple[Any, ...]) -> tuple[int, ...]:
    """The positions of the values that are not plain."""
    return tuple(compress(_positions(), map(not_, map(_plain_type, map(type, values)))))


def _continues(was: list[Any], count: int, items: list[Any]) -> bool:
    """Whether ``items`` starts with the first ``count`` items of ``was``, object for object
    (``consume`` that rebuilds a request's list with one more value each step: ``old +
    [x]``). Identity only: no item's ``__eq__`` runs. The cost is a comparison of the two
    lists' item addresses (:func:`~ppaux.observer.identity.same_start`), not a description
    of each item."""
    if len(was) < count or count == 0:
        return False
    if was[count - 1] is not items[count - 1] or was[0] is not items[0]:
        return False
    return same_start(was, items, count)


def _spelled(kept: set[Any], holders: _Holders) -> set[Any]:
    """``kept`` with each object's plain values left out also spelled as their paths: what
    the other side left out value by value compares with it."""
    spelled = set(kept)
    for mark in kept:
        if isinstance(mark, tuple):
            _, path, names, walked = mark
            values = holders[path][1]
            walked = set(walked)
            left = [i for i in range(len(names)) if i not in walked]
            spelled.update(
                plain_children(path, tuple(names[i] for i in left), tuple(values[i] for i in left))
            )
    return spelled
