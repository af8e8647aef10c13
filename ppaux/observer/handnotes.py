"""The notes every in-hand check's report ends with, about where rank 0's side ran.

Where the checking process could not fork, rank 0's side ran beside the last stage's
(:func:`~ppaux.observer.inhand.not_apart`). Where it forked (:mod:`.handapart`), rank 0's copy
shares this process's string hash seed: an order that depends on string hashing (a ``set``'s)
is alike on both sides there, while each of sglang's schedulers is a fresh interpreter that
draws a seed of its own (unless ``PYTHONHASHSEED`` is exported to all of them, which the note
then leaves out, as both would share it). Giving the target by name checks with rank 0 in a
fresh interpreter, which finds such an order.

Imports nothing beyond the standard library.
"""

from __future__ import annotations

import os

__all__ = ["SHARED_SEED", "hand_notes"]

#: The note of a check whose rank 0 ran in a forked copy of the checking process.
SHARED_SEED = (
    "rank 0's side ran in a copy of this process forked from it, which shares its string "
    "hash seed: an order that depends on string hashing (a set's) is alike on both sides "
    "here, while each of sglang's schedulers draws a seed of its own; give the target by "
    "name (ppaux check-observer module:attr, assert_pp_safe('module:attr')) to check with "
    "rank 0 in a fresh interpreter, which finds such an order"
)


def hand_notes(forked: bool, same_rank0: str | None) -> list[str]:
    """The notes of an in-hand check whose rank 0 ran in a forked copy (``forked``) or, else,
    in this process (``same_rank0``: why it popped with the very instance, if it did)."""
    from ppaux.observer.inhand import not_apart
    from ppaux.observer.interpreter import seed_of

    if not forked:
        return [not_apart(same_rank0)]
    try:
        fixed = seed_of(os.environ.get("PYTHONHASHSEED", "")) is not None
    except ValueError:  # Python would refuse it: sglang's processes would not start
        fixed = False
    return [] if fixed else [SHARED_SEED]
