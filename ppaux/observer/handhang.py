"""An in-hand check's copy of rank 0 that stops answering (:mod:`.handapart`): it is killed
after the check's ``timeout_s`` and the target's finding says what happened.

The copy is forked from the checking process, where other threads may run (the target's own,
a test suite's, a logger's): a lock one of them held at the fork stays held in the copy, where
no thread will ever release it, and a method of the target's that takes it waits forever.
sglang's rank 0 is a fresh process, with threads and locks of its own, and would not hang so:
its answers are waited for ``timeout_s`` seconds in all at each step, as the CLI's check waits
for each step of its child, and the copy is killed then (PP708 at the step it was at, saying
why), never a hang.

Imports nothing beyond the standard library.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from typing import Protocol

__all__ = ["bounded", "killed"]


class _Bounded(Protocol):
    """What :func:`bounded` sets and calls of rank 0's copy."""

    hung: str

    def whole(self, timeout_s: float, run_s: float | None = None) -> None: ...


class _Killed(Protocol):
    """What :func:`killed` reads and sets of rank 0's process."""

    pid: int
    hung: str
    wait_s: float | None


def bounded(rank0: _Bounded, timeout_s: float, run_s: float | None = None) -> None:
    """Have ``rank0`` (a :class:`~ppaux.observer.handapart.HandRankZero`, a copy forked now)
    wait for its answers ``timeout_s`` seconds in all, and know what a copy that gives none
    did then: the other threads of this process at the fork (``run_s``: the seconds of the
    whole run's, see :meth:`~ppaux.observer.handapart.HandRankZero.whole`)."""
    others = [t.name for t in threading.enumerate() if t is not threading.current_thread()]
    named = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
    forked = (
        f"while {len(others)} other thread(s) of it ran ({named}): a lock one of them held "
        "then stays held in the copy forever"
        if others
        else "(no other thread ran: the target's own code waits there)"
    )
    rank0.hung = (
        f"killed: rank 0's copy of the checking process, forked {forked}, did not answer "
        f"within {timeout_s:g} s (a step's answers together); sglang's rank 0 is a fresh process "
        "and would not hang so; "
        "give the target by name (assert_pp_safe('module:attr'), ppaux check-observer) to "
        "check with rank 0 in a fresh interpreter"
    )
    rank0.whole(timeout_s, run_s)


def killed(rank0: _Killed) -> str:
    """Kill ``rank0``'s process (a :class:`~ppaux.observer.apart.RankZero`'s), which gave no
    answer in time; what it did (for the finding)."""
    if rank0.pid:
        with contextlib.suppress(OSError):
            os.kill(rank0.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(rank0.pid, 0)
        rank0.pid = 0
    return rank0.hung or f"killed: it did not answer within {rank0.wait_s:g} s"
