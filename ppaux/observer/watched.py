"""What the check keeps of an output to see, at the end of its batch size, whether a later step
changed it (the aliasing check), and how the target's objects are described: anything their own
methods raise while described is the target's failure.

Runs where the check runs (the child, or this process for an object in hand); imports torch when
used.
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Any

from ppaux.observer.compare import inside, record, records
from ppaux.observer.drive import INTERRUPTS, HookFailure
from ppaux.observer.walk import Budget, Holder, Same, Skip, leaves

__all__ = ["Watched", "described"]


def described(
    what: str, obj: object, skip: Skip | None = None, same: Same | None = None
) -> dict[str, dict[str, Any]]:
    """``obj``'s records (``skip``, ``same``: see :func:`~ppaux.observer.compare.leaves`);
    anything its own methods raise is the target's failure, raised as
    :class:`~ppaux.observer.drive.HookFailure` with ``what`` was being read."""
    try:
        return records(obj, skip, same)
    except KeyboardInterrupt as exc:
        if not INTERRUPTS.theirs:
            raise
        raise HookFailure(what, exc) from exc
    except BaseException as exc:  # the target's object raised (GeneratorExit, SystemExit...)
        raise HookFailure(what, exc) from exc


class Watched:
    """What the aliasing check keeps of an output once it is described: its records, and weak
    references to its tensors and to the tensors they view (with the view's shape, strides and
    offset). At the end of the batch size, a tensor (or the memory it views) that the target
    still holds is described again; one that nobody holds any more cannot have been written
    over, and keeps its first description. A writable numpy array is watched the same way, and
    a bytearray (which takes no weak reference) is held and described again. So the check holds
    no output that the target does not (a bytearray aside): its memory is the target's own. An
    output whose leaves cannot be walked again is held as it is (``strong``). A plain list or
    dict of the output that holds no tensor nor numpy value (a list of floats the observer
    keeps and writes into) is held too, and walked again at the end, within the walk's bounds
    (not where the first walk ran out of leaves).

    A value that its own step changed (its copy_to_host writing in place) and that nothing
    changed since is as produced: only what a later step changed is a change. So is a held
    list or dict that its own step filled (its consume appending to a list its host copy
    shares) and that is now as that step left it: its records as produced are given.
    """

    def __init__(
        self,
        output: object,
        described: dict[str, dict[str, Any]],
        left: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        import torch

        self.described = described
        self.left = described if left is None else left
        self.strong: Any = None
        self.tensors: list[tuple[str, Any, Any, Any]] = []
        #: Other leaves whose memory a later step can write over (a numpy array, a bytearray):
        #: a weak reference where the type takes one, else the leaf itself.
        self.buffers: list[tuple[str, Any]] = []
        #: Plain lists and dicts of the output holding no tensor nor array: held, and
        #: walked again (a later step can change them in place), each with its depth and the
        #: paths of its leaves.
        self.holders: list[tuple[str, Any, int, frozenset[str]]] = []
        #: The output itself, held until the next step ran (:meth:`settle`, as sglang holds it
        #: in flight), then weakly where its type takes a weak reference: walked again, so
        #: that an attribute a later step gave a new value is seen (its leaves are then not
        #: the ones watched).
        self.held: Any = output
        self.root: Any = None
        self.settled: dict[str, dict[str, Any]] = {}
        self.failure: HookFailure | None = None
        # Not for a dict, a list, a tuple, a class with __slots__ and no __weakref__.
        with contextlib.suppress(TypeError):
            self.root = weakref.ref(output)
        try:
            met: list[Holder] = []
            budget = Budget()
            found = leaves(output, budget=budget, holders=met)
            if budget.left > 0:  # else a holder cut short would be walked further again
                self.holders = _plain_holders(met, list(found.items()))
            for path, leaf in found.items():
                if not isinstance(leaf, torch.Tensor):
                    self._buffer(path, leaf)
                    continue
                base = leaf._base
                view = None
                if base is not None and leaf.layout == torch.strided:
                    view = (tuple(leaf.shape), leaf.stride(), leaf.storage_offset())
                self.tensors.append(
                    (path, weakref.ref(leaf), None if base is None else weakref.ref(base), view)
                )
        except Exception:  # the target's object (described once already): keep it
            self.strong = output
            self.tensors = []
            self.buffers = []
            self.holders = []

    def _buffer(self, path: str, leaf: object) -> None:
        """Keep ``leaf`` to describe again where a later step can write into it in place."""
        if not _writable(leaf):
            return
        try:
            self.buffers.append((path, weakref.ref(leaf)))
        except TypeError:  # a bytearray takes no weak reference: held, as small as it is
            self.buffers.append((path, lambda held=leaf: held))

    def now(self) -> dict[str, dict[str, Any]]:
        """The records as they are now; raises :class:`HookFailure` where the target's objects
        raise while described."""
        if self.strong is not None:
            return self._since(described("the output", self.strong))
        out = dict(self.left)
        for path, ref, base_ref, view in self.tensors:
            tensor = ref()
            if tensor is None and base_ref is not None and view is not None:
                base = base_ref()
                if base is not None:
                    try:
                        tensor = base.as_strided(*view)
                    except RuntimeError:  # the memory it viewed is no longer there to read
                        tensor = None
            if tensor is not None:
                try:
                    out[path] = record(tensor)
                except (Exception, RecursionError) as exc:  # a tensor subclass of the target's
                    raise HookFailure("the output", exc) from exc
        for path, holder, depth, paths in self.holders:
            for gone in paths:
                out.pop(gone, None)
            try:
                again = {key: record(leaf) for key, leaf in leaves(holder, path, depth).items()}
            except (Exception, RecursionError) as exc:  # an object of the target's in it
                raise HookFailure("the output", exc) from exc
            if again == {key: self.left.get(key) for key in paths}:
                again = self._produced_under(path)  # as its own step left it: as produced
            out.update(again)
        for path, ref in self.buffers:
            leaf = ref()
            if leaf is not None:
                try:
                    out[path] = record(leaf)
                except (Exception, RecursionError) as exc:
                    raise HookFailure("the output", exc) from exc
        if self.failure is not None:
            raise self.failure
        for path, value in self.settled.items():  # unless seen changed since, by reference
            if out.get(path) == self.left.get(path):
                out[path] = value
        out.update(self._reassigned())
        return self._since(out)

    def settle(self) -> None:
        """The next step ran: what it reassigned in the output is kept, and the output is no
        longer held (weakly from now on)."""
        if self.held is None:
            return
        try:
            self.settled = self._reassigned()
        except HookFailure as failure:
            self.failure = failure
        self.held = None

    def _reassigned(self) -> dict[str, dict[str, Any]]:
        """The leaves of the output (held, or still held by the target) that are not as its
        own step left them, walked again from the output itself: an attribute given a new
        value (``earlier.values = other``), which the references to its old leaves cannot
        see. Only paths it had then are looked at (one its own step filled is as it left
        it)."""
        output = self.held
        if output is None and self.root is not None:
            output = self.root()
        if output is None:
            return {}
        again = described("the output", output)
        return {
            path: value
            for path, value in again.items()
            if path in self.left and value != self.left[path]
        }

    def _produced_under(self, path: str) -> dict[str, dict[str, Any]]:
        """The records of the value at ``path`` as it was produced (a list that its own
        step's consume or copy_to_host filled was empty then: its records differ in paths)."""
        return {key: value for key, value in self.described.items() if inside(key, path)}

    def _since(self, now: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """``now``, each value that is as its own step left it given as it was produced: a
        value its own step's methods replaced (a host copy its copy_to_host keeps where None
        was) and no later step changed since is not a later step's change."""
        out = {
            path: self.described[path]
            if path in self.described and value == self.left.get(path)
            else value
            for path, value in now.items()
        }
        for path, value in self.described.items():
            if path in self.left or path in now:
                continue
            theirs = {key: item for key, item in self.left.items() if inside(key, path)}
            if theirs and theirs == {key: item for key, item in now.items() if inside(key, path)}:
                for key in theirs:
                    out.pop(key, None)
                out[path] = value  # as produced: what its own step did to it is as it left it
        return out


def _plain_holders(
    met: list[Holder], found: list[tuple[str, Any]]
) -> list[tuple[str, Any, int, frozenset[str]]]:
    """The outermost of the lists and dicts ``met`` by the walk that gave the leaves
    ``found`` (in order) whose leaves are neither tensors nor numpy values (those are watched
    by reference): each its path, itself, its depth and its leaves' paths."""
    import torch

    out: list[tuple[str, Any, int, frozenset[str]]] = []
    end = -1
    for path, holder, depth, start, stop in sorted(met, key=lambda m: (m[3], -m[4], m[2])):
        if start < end or stop <= start:
            continue  # inside one already held, or no leaf of its own (an empty list)
        inside = found[start:stop]
        if any(isinstance(v, torch.Tensor) or type(v).__module__ == "numpy" for _, v in inside):
            continue
        out.append((path, holder, depth, frozenset(p for p, _ in inside)))
        end = stop
    return out


def _writable(leaf: object) -> bool:
    """Whether a later step can change ``leaf`` in place: a writable numpy array, a bytearray."""
    if isinstance(leaf, bytearray):
        return True
    if type(leaf).__module__ == "numpy" and type(leaf).__name__ == "ndarray":
        flags = getattr(leaf, "flags", None)
        return bool(getattr(flags, "writeable", False))
    return False
