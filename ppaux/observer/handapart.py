"""Rank 0's side of a check in hand (``assert_pp_safe`` given the object) in a process of its own.

sglang's rank 0 has its own copy of the observer's module and objects. Where the system can
fork, the checking process forks (:func:`ppaux.observer.apart.start`) before any of the target's
methods run: rank 0's side (:class:`~ppaux.observer.rankzero.RankZeroSide`) is made and runs in
the copy, with the copy's objects, so state the last stage's side keeps at module or class
level, or on the very instance, is not there, as the check of a target given by name finds.
The copy runs torch on one thread (OpenMP's threads do not survive a fork, and torch's pool
would wait for them), and ends when the check closes its end (or the checking process
ends: the socket closes with it). Where it cannot fork, rank 0's side runs in the checking
process and the report says so (:func:`~ppaux.observer.inhand.not_apart`).

Imports nothing beyond the standard library at import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ppaux.limits import Limits
    from ppaux.observer.apart import RankZero
    from ppaux.observer.options import ObserverOptions
    from ppaux.observer.target import LoadedObserver

__all__ = ["forked"]


def forked(loaded: LoadedObserver, options: ObserverOptions, limits: Limits) -> RankZero | None:
    """Rank 0's process for ``loaded``, forked now; None where the system cannot fork."""
    from ppaux.observer.apart import start

    how = {
        "budget": limits.max_digested_items,
        "nesting": limits.max_value_nesting,
        "elements": limits.max_digested_elements,
    }

    def load() -> tuple[Any, str | None]:
        from ppaux.observer.drive import message_line
        from ppaux.observer.parts import rank0_machinery
        from ppaux.observer.rankzero import RankZeroSide

        try:
            return RankZeroSide(loaded.make_rank0, rank0_machinery(options)), None
        except Exception as exc:  # ppaux's parts could not be made there
            return None, f"rank 0's process could not start: {type(exc).__name__}: " + (
                message_line(exc)
            )

    def first() -> None:
        import torch

        torch.set_num_threads(1)

    rank0 = start(load, how, first, lambda fd: fd, lambda method, where: None)
    if rank0 is None:
        return None
    from ppaux.observer.handhang import bounded

    bounded(rank0, options.timeout_s)
    return rank0
