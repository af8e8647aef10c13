"""What an in-process check (an observer object in hand, ``assert_pp_safe``) watches besides
the records: forks, threads and interval timers of the target's.

A fork the target makes while the check runs would return into the caller's process twice (a
test suite that runs on in two processes): the copy is ended as it starts
(``os.register_at_fork``), and the fork is the target's failure, as in the child. Only forks
made by the thread that runs the check, or by a thread the target started from it, are the
target's: the rest of the process (a test suite's own threads and their forks) is left alone.
A non-daemon thread the target started (from the check's thread, while a hook of the target's
ran: :mod:`.lines` sees ``Thread.start`` called there; or from a thread the target started, at
any depth) and left running is named, and a ``threading.Timer`` it started and left waiting is
cancelled and named; threads that other threads start, and those torch's own code starts
(:mod:`.torch_threads`), are not the check's to name. An
interval timer (``signal.alarm``, ``setitimer``) that was not running when the check began and
still runs at its end is cancelled, so that it does not end the test session later, and named.
Processes the target starts and a hang are not watched here: give the target by name
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
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Literal

    from _typeshed import TraceFunction

    #: What ``sys.settrace`` tells a tracer happened.
    _Event = Literal["call", "line", "return", "exception", "opcode"]

__all__ = [
    "THREAD_START",
    "Watched",
    "cancel_timers",
    "not_apart",
    "started_by_target",
    "timers",
    "watched",
]

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
    current = threading.current_thread()
    return threading.get_ident() in _checking or any(
        t is current for threads in list(_started.values()) for t in threads
    )


def _before() -> None:
    if _targets_thread():
        _forks.append(threading.get_ident())


def _in_child() -> None:
    if _targets_thread():
        os._exit(0)  # a copy of the checking process: only the original answers


#: The code of ``Thread.start``: a call of it is a thread started.
THREAD_START = threading.Thread.start.__code__


def started_by_target(thread: threading.Thread, frame: FrameType | None = None) -> None:
    """``thread`` is being started by the target's code, in a thread that runs a check or in
    a thread the target started from one (at any depth): it is that check's, and the threads
    it starts in turn are seen too. ``frame`` is ``Thread.start``'s: a thread torch's own code
    starts (inductor's compile pool) is torch's, not the check's
    (:mod:`.torch_threads`)."""
    from ppaux.observer.torch_threads import starter, torchs_module

    if frame is not None and torchs_module(starter(frame.f_back)):
        return
    ident = threading.get_ident()
    with _lock:
        owner = ident if ident in _checking else None
        if owner is None:
            # By the thread itself, not its ident: an ended thread's ident is given again.
            current = threading.current_thread()
            owner = next(
                (o for o, threads in _started.items() if any(t is current for t in threads)),
                None,
            )
        if owner is None or any(t is thread for t in _started.get(owner, [])):
            return
        _started.setdefault(owner, []).append(thread)
    _follow(thread)


def _follow(thread: threading.Thread) -> None:
    """Have the threads that ``thread`` starts seen as it runs (a tracer that looks at calls
    only, before the one the thread already had, which still gets every event)."""
    run = thread.run

    def followed() -> None:
        import sys

        previous = sys.gettrace()

        def starts(frame: FrameType, event: _Event, arg: object) -> TraceFunction | None:
            if event == "call" and frame.f_code is THREAD_START:
                started_by_target(frame.f_locals["self"], frame)
            return previous(frame, event, arg) if previous is not None else None

        sys.settrace(starts)
        try:
            run()
        finally:
            sys.settrace(previous)

    # A class of the target's that refuses it: the threads its thread starts are unseen.
    with contextlib.suppress(AttributeError):
        thread.run = followed  # type: ignore[method-assign]


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
        seen.threads = _left_running(mine)
        seen.timers = cancel_timers(keep=running_before)


def _left_running(threads: list[threading.Thread]) -> list[str]:
    """The names of ``threads`` still running: each ``threading.Timer`` (daemon or not) is
    cancelled, so that its function never runs in the caller's process later; each other
    thread that is not a daemon is named as it is."""
    names: list[str] = []
    for thread in threads:
        if not thread.is_alive():
            continue
        if isinstance(thread, threading.Timer):
            thread.cancel()
            names.append(f"{thread.name} (a threading.Timer, cancelled)")
        elif not thread.daemon:
            names.append(thread.name)
    return names


def not_apart(same_rank0: str | None) -> str:
    """The note a check in hand ends with: rank 0's side ran in the checking process (and, where
    ``same_rank0`` says why, popped with the very instance the last stage ran), so state shared
    between the two sides is not seen as sglang's separate processes would show it."""
    same = (
        f"; rank 0 popped with the very instance the last stage ran, as {same_rank0}"
        if same_rank0
        else ""
    )
    return (
        "rank 0's side ran in this process, beside the last stage's: state the target keeps "
        "at module or class level was shared by the two here, while sglang's rank 0 is "
        f"another process{same}; give the target by name (assert_pp_safe('module:attr'), "
        "ppaux check-observer) to check with rank 0 in a process of its own"
    )
