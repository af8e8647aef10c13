"""Where an in-hand check's rank 0 runs, and the notes its report ends with about it.

Rank 0's side runs in a fresh interpreter where the object can be carried there
(:mod:`.handfresh`): nothing to say of a class or factory given, as of a target given by name;
an instance given crosses as a pickled copy, carrying the state its ``__init__`` built in the
checking process, and the note says so (:data:`COPIED`). Else in a copy of the
checking process forked from it (:mod:`.handapart`), and the report says why the fresh one
could not be had; the copy shares this process's string hash seed: an order that depends on
string hashing (a ``set``'s) is alike on both sides there, while each of sglang's schedulers is
a fresh interpreter that draws a seed of its own (unless ``PYTHONHASHSEED`` is exported to all
of them, which the note then leaves out, as both would share it). Where it cannot fork either,
rank 0's side ran beside the last stage's (:func:`~ppaux.observer.inhand.not_apart`).

Imports nothing beyond the standard library at import.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ppaux.limits import Limits
    from ppaux.observer.handapart import HandRankZero
    from ppaux.observer.handguard import HandGuard
    from ppaux.observer.options import ObserverOptions
    from ppaux.observer.target import LoadedObserver

__all__ = [
    "BY_NAME",
    "COPIED",
    "SHARED_SEED",
    "forked_note",
    "hand_notes",
    "hand_rank0",
    "unseen_notes",
]

#: What the note of a check whose rank 0 ran in a forked copy adds where the seed is random.
SHARED_SEED = (
    "it shares this process's string hash seed: an order that depends on string hashing "
    "(a set's) is alike on both sides here, while each of sglang's schedulers draws a seed "
    "of its own"
)


def hand_rank0(
    loaded: LoadedObserver,
    options: ObserverOptions,
    limits: Limits,
    rank0_only: bool,
    notes: list[str] | None = None,
    guard: HandGuard | None = None,
) -> tuple[HandRankZero | None, tuple[str, str]]:
    """Rank 0's process for an in-hand check of ``loaded``, and where it runs ('fresh',
    'forked' or 'here') with why it is not fresh (``notes``: what pickling the object did to
    it); or None and ('stuck', what to say) where copying or pickling the instance did not
    end within the check's timeout (:mod:`.handcopy`): the check runs no step. ``guard`` (the
    checking process's, :mod:`.handguard`) is told rank 0's process as it starts."""
    from ppaux.observer.handapart import forked
    from ppaux.observer.handcopy import Stuck, stuck
    from ppaux.observer.handfresh import fresh

    if loaded.stuck is not None:
        return None, ("stuck", loaded.stuck)
    try:
        rank0, why = fresh(loaded, options, limits, rank0_only, notes, guard)
    except Stuck as exc:
        return None, ("stuck", stuck(exc))
    if rank0 is not None:
        return rank0, ("fresh", "")
    rank0 = forked(loaded, options, limits, rank0_only, guard)
    return rank0, ("forked" if rank0 is not None else "here", why)


#: What the note of an in-hand check forked ends with.
BY_NAME = (
    "give the target by name (ppaux check-observer module:attr, "
    "assert_pp_safe('module:attr')) to check with rank 0 in a fresh interpreter"
)


def forked_note(why: str, whose: str = "this process", hint: str = BY_NAME) -> str | None:
    """The note of a check whose rank 0 ran in a copy forked from ``whose`` because of
    ``why`` (ended with ``hint``, what gives a fresh one); None where ``PYTHONHASHSEED`` fixes
    the seed of every process and there is no why to say."""
    from ppaux.observer.interpreter import seed_of

    try:
        fixed = seed_of(os.environ.get("PYTHONHASHSEED", "")) is not None
    except ValueError:  # Python would refuse it: sglang's processes would not start
        fixed = False
    if fixed and not why:
        return None
    seed = "" if fixed else f"; {SHARED_SEED.replace('this process', whose)}"
    because = f", not a fresh interpreter, as {why}" if why else ""
    finds = "" if fixed or not hint else ", which finds such an order"
    return f"rank 0's side ran in a copy of {whose} forked from it{because}{seed}" + (
        f"; {hint}{finds}" if hint else ""
    )


#: The note of an in-hand check whose rank 0 ran in a fresh interpreter from an instance given.
COPIED = (
    "rank 0's side ran in a fresh interpreter from a pickled copy of the instance given, "
    "carrying the state its __init__ built in this process (an order taken from a set, a "
    "seed), while each of sglang's schedulers builds its own observer; give the class or a "
    "factory (assert_pp_safe(MyObserver)) to have rank 0 build its own"
)


def hand_notes(how: tuple[str, str], same_rank0: str | None, kind: str = "class") -> list[str]:
    """The notes of an in-hand check whose rank 0 ran as ``how`` says (see :func:`hand_rank0`;
    ``same_rank0``: why it popped with the very instance, if it did; ``kind``: what was
    given, 'instance', 'class' or 'factory')."""
    from ppaux.observer.inhand import not_apart

    where, why = how
    if where == "stuck":  # no step ran, rank 0 nowhere: the finding says why
        return []
    if where == "fresh":
        return [COPIED] if kind == "instance" else []
    if where == "here":
        return [not_apart(same_rank0)]
    note = forked_note(why)
    return [] if note is None else [note]


def unseen_notes(notes: list[str]) -> list[str]:
    """The notes of ``notes`` that say rank 0's side did not run apart as sglang's does (a
    fork sharing the hash seed, rank 0 in this process); a fork the test suite's own hook
    asked for is the suite's choice, not one, and neither is an instance carried to a fresh
    interpreter (:data:`COPIED`: rank 0 ran apart, from a copy of the state given)."""
    from ppaux.observer.fresh import FORK_HOOK
    from ppaux.observer.inhand import not_apart

    here = not_apart(None).split(";", 1)[0]
    return [
        note
        for note in notes
        if note.startswith(here) or ("string hash seed" in note and f"{FORK_HOOK}=1" not in note)
    ]
