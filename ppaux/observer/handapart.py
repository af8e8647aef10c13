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

What the target does in the copy is its failure, as in the check's child
(:func:`in_hand_endings`): a fork of the copy ends before it can answer the step it forked in
for rank 0 (the methods of that step it is in the middle of run on in it), told to the
checking process on a pipe of its own, and a thread the target left running there is named
"(in rank 0's process)".

Imports nothing beyond the standard library and :mod:`.apart` at import.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ppaux.observer.apart import RankZero

if TYPE_CHECKING:
    from ppaux.limits import Limits
    from ppaux.observer.findings import Ending
    from ppaux.observer.handguard import HandGuard
    from ppaux.observer.inhand import Watched
    from ppaux.observer.options import ObserverOptions
    from ppaux.observer.target import LoadedObserver

__all__ = ["HandRankZero", "forked", "in_hand_endings", "run_bound"]

#: Seconds the checking process waits, once rank 0's process ended, for its forks to say so.
_FORKS_WAIT_S = 1.0


class HandRankZero(RankZero):
    """Rank 0's forked process in hand, with the read end of the pipe its forks write on.
    :meth:`close` also takes what the target left there: ``forks`` (how many ended) and
    ``threads`` (the names of those it left running)."""

    def __init__(self, rank0: RankZero, told: int) -> None:
        super().__init__(rank0.sock, rank0.pid)
        self.process = rank0.process
        self.told = told
        self.forks = 0
        self.threads_there: list[str] = []
        #: The seconds each step's answers are given together (:meth:`whole`).
        self.step_s: float | None = None
        #: The seconds left of the whole run's (:meth:`whole`), and that whole.
        self.run_left_s: float | None = None
        self.run_s = 0.0

    def whole(self, timeout_s: float, run_s: float | None = None) -> None:
        """Wait for rank 0's answers ``timeout_s`` seconds in all at each step, whatever they
        are: a step's answers are killed once they add up to it, as the CLI's check kills its
        child once a step took longer than ``--timeout``; and ``run_s`` seconds in all over
        the run (:func:`run_bound`), as the CLI's check gives its run no more parts than that
        many timeouts."""
        self.step_s = timeout_s
        self.wait_s = timeout_s if run_s is None else min(timeout_s, run_s)
        self.run_left_s = run_s
        self.run_s = run_s or 0.0
        if not self.hung:
            self.hung = (
                f"killed: rank 0's process did not answer within {timeout_s:g} s (a step's "
                "answers together)"
            )

    def send(self, received: dict[Any, Any]) -> None:
        if self.step_s is not None:  # a step begins: its answers have the timeout anew
            self.wait_s = self.step_s
            if self.run_left_s is not None and self.run_left_s < self.step_s:
                self.wait_s = self.run_left_s  # within what is left of the run's
                self.hung = (
                    f"killed: rank 0's process did not answer within the run's {self.run_s:g} s "
                    "(its answers together, as many timeouts as the CLI's check gives its run)"
                )
        super().send(received)

    def _reply(self) -> dict[str, Any] | None:
        import time

        began = time.monotonic()
        try:
            return super()._reply()
        finally:
            spent = time.monotonic() - began
            if self.wait_s is not None:  # what is left of the step's time
                self.wait_s = max(self.wait_s - spent, 1e-3)
            if self.run_left_s is not None:
                self.run_left_s = max(self.run_left_s - spent, 1e-3)

    def close(self) -> None:
        if self.told < 0:
            return
        self.threads_there = [f"{name} (in rank 0's process)" for name in self.threads()]
        super().close()
        if self.process is not None:
            self.process.poll()  # its pid was waited for here: the Popen learns it ended
        self.forks = _told(self.told)
        self.told = -1


def run_bound(options: ObserverOptions, rank0_only: bool, limits: Limits | None = None) -> float:
    """The seconds rank 0's answers are given over a whole in-hand run of ``options``: the
    CLI's check gives its run at most two parts a step of each batch size and four more, each
    ``timeout_s`` (:mod:`.protocol`; with outputs given, the most it takes, of one batch size)."""
    from ppaux.limits import Limits

    most = (limits or Limits()).max_outputs
    steps, sizes = (most, 1) if rank0_only else (options.steps, len(options.batch_sizes))
    return (2 * steps * sizes + 4) * options.timeout_s


def _told(fd: int) -> int:
    """The bytes written on ``fd`` until every writer closed it, or :data:`_FORKS_WAIT_S`
    passed (a fork that hangs in the target's method); ``fd`` is closed."""
    import select
    import time

    count = 0
    deadline = time.monotonic() + _FORKS_WAIT_S
    try:
        while (left := deadline - time.monotonic()) > 0:
            if not select.select([fd], [], [], left)[0]:
                break
            chunk = os.read(fd, 4096)
            if not chunk:
                break  # every fork's end is closed
            count += len(chunk)
    except OSError:
        pass
    finally:
        os.close(fd)
    return count


def forked(
    loaded: LoadedObserver,
    options: ObserverOptions,
    limits: Limits,
    rank0_only: bool = False,
    guard: HandGuard | None = None,
) -> HandRankZero | None:
    """Rank 0's process for ``loaded``, forked now, in a session of its own; None where the
    system cannot fork. ``guard`` is told its pid and gives the signals it unblocks
    (:mod:`.handguard`)."""
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

    told, tell = os.pipe()
    owner: list[int] = []

    def first() -> None:
        import torch

        from ppaux.observer.handguard import shielded

        os.close(told)
        shielded(*((guard.report, guard.blocked) if guard is not None else (None, [])))
        owner.append(os.getpid())
        torch.set_num_threads(1)

    def announce(method: str | None, where: object) -> None:
        if owner and os.getpid() != owner[0]:  # a fork of rank 0's copy: it ends here
            try:
                os.write(tell, b"f")
            finally:
                os._exit(0)

    rank0 = start(load, how, first, lambda fd: fd, announce)
    os.close(tell)
    if rank0 is None:
        os.close(told)
        return None
    if guard is not None:
        guard.pid = rank0.pid
    from ppaux.observer.handhang import bounded

    hand = HandRankZero(rank0, told)
    bounded(hand, options.timeout_s, run_bound(options, rank0_only, limits))
    return hand


def in_hand_endings(seen: Watched, rank0: HandRankZero | None) -> list[Ending]:
    """What the target did in the checking process (``seen``) and in rank 0's copy
    (``rank0``, closed), as the check's child reports it: its forks, the threads it left
    running, the interval timers it left (cancelled)."""
    from ppaux.observer.endings import timers_left
    from ppaux.observer.findings import Ending

    forks = [
        f"{count} {'copy' if count == 1 else 'copies'} of {which} "
        f"{'was' if count == 1 else 'were'} ended {when}"
        for count, which, when in (
            (seen.forks, "the checking process", "as it started"),
            (rank0.forks if rank0 is not None else 0, "rank 0's process", "before it answered"),
        )
        if count
    ]
    threads = [*seen.threads, *(rank0.threads_there if rank0 is not None else [])]
    found = []
    if forks:
        text = "; ".join(forks)
        found.append(
            Ending("fork", f"the target forked: {text}; only the original process's records count")
        )
    if threads:
        more = f" and {len(threads) - 5} more" if len(threads) > 5 else ""
        found.append(
            Ending(
                "threads",
                f"a thread the target started outlived the run: {', '.join(threads[:5])}"
                f"{more}; in sglang it would run on beside the scheduler",
            )
        )
    if seen.timers:
        found.append(timers_left(seen.timers))
    return found
