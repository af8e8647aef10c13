"""What an in-process check (an observer object in hand, ``assert_pp_safe``) watches besides
the records: forks, threads and interval timers of the target's.

A fork the target makes while the check runs would return into the caller's process twice (a
test suite that runs on in two processes): the copy is ended as it starts
(``os.register_at_fork``), and the fork is the target's failure, as in the child. Only forks
made by the thread that runs the check, or by a thread the target started from it, are the
target's: the rest of the process (a test suite's own threads and their forks) is left alone.
A non-daemon thread the target started (from the check's thread, while a hook of the target's
ran: :mod:`.lines` sees ``Thread.start`` called there) and left running is named; threads that
other threads start are not the check's to name. An interval timer (``signal.alarm``,
``setitimer``) that was not running when the check began and still runs at its end is
cancelled, so that it does not end the test session later, and named. Processes the target
starts and a hang are not watched here: give the target by name
(``assert_pp_safe("module:attr")``) for those, as the child's run watches them.

Imports nothing beyond the standard library.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = ["Watched", "cancel_timers", "started_by_target", "timers", "watched"]

_lock = threading.Lock()
#: The idents of the threads running an in-process check, and for each the threads its
#: target started from it: their forks are the target's.
_checking: set[int] = set()
_started: dict[int, list[threading.Thread]] = {}
_forks: list[int] = []
_hooked = False

#: The interval timers a process has, and the signal each sends when it runs out.
_TIMERS = tuple(
    (getattr(signal, which), name)
    for which, name in (
        ("ITIMER_REAL", "SIGALRM"),
        ("ITIMER_VIRTUAL", "SIGVTALRM"),
        ("ITIMER_PROF", "SIGPROF"),
    )
    if hasattr(signal, which)
)


def _targets_thread() -> bool:
    ident = threading.get_ident()
    return ident in _checking or any(
        t.ident == ident for threads in list(_started.values()) for t in threads
    )


def _before() -> None:
    if _targets_thread():
        _forks.append(threading.get_ident())


def _in_child() -> None:
    if _targets_thread():
        os._exit(0)  # a copy of the checking process: only the original answers


def started_by_target(thread: threading.Thread) -> None:
    """``thread`` was started by the target's code in a thread that runs a check."""
    ident = threading.get_ident()
    if ident in _checking:
        _started.setdefault(ident, []).append(thread)


def timers() -> dict[str, float]:
    """The interval timers running now: each one's signal name and the seconds it has left."""
    running: dict[str, float] = {}
    for which, name in _TIMERS:
        left, _ = signal.getitimer(which)
        if left > 0:
            running[name] = left
    return running


def cancel_timers(keep: frozenset[str] = frozenset()) -> list[tuple[str, float]]:
    """Cancel the running interval timers (those whose signal is not in ``keep``); each one's
    signal name and the seconds it had left (one decimal), as they were cancelled."""
    cancelled: list[tuple[str, float]] = []
    for which, name in _TIMERS:
        if name in keep:
            continue
        left, _ = signal.setitimer(which, 0)
        if left > 0:
            cancelled.append((name, round(left, 1)))
    return cancelled


@dataclass
class Watched:
    """What was seen while the block ran: ``forks`` (how many), ``threads`` (the names of
    non-daemon threads the target started then and still running at its end) and ``timers``
    (the interval timers it left running, cancelled: signal name and seconds left)."""

    forks: int = 0
    threads: list[str] = field(default_factory=list)
    timers: list[tuple[str, float]] = field(default_factory=list)


@contextlib.contextmanager
def watched() -> Iterator[Watched]:
    """Watch forks, threads and timers while the block runs (see the module's docstring)."""
    global _hooked
    ident = threading.get_ident()
    with _lock:
        if not _hooked and hasattr(os, "register_at_fork"):
            os.register_at_fork(before=_before, after_in_child=_in_child)
            _hooked = True
        nested = ident in _checking
        _checking.add(ident)
        forks_before = _forks.count(ident)
        started_before = len(_started.get(ident, []))
    running_before = frozenset(timers())
    seen = Watched()
    try:
        yield seen
    finally:
        with _lock:
            mine = list(_started.get(ident, [])[started_before:])
            seen.forks = _forks.count(ident) - forks_before
            seen.forks += sum(_forks.count(t.ident) for t in mine if t.ident is not None)
            if not nested:
                _checking.discard(ident)
                # Once the check is over, their forks are no longer the check's to end.
                _started.pop(ident, None)
        seen.threads = [t.name for t in mine if t.is_alive() and not t.daemon]
        seen.timers = cancel_timers(keep=running_before)
