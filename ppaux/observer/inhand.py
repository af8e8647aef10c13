"""What an in-process check (an observer object in hand, ``assert_pp_safe``) watches besides
the records: forks and threads of the target's.

A fork while the check runs would return into the caller's process twice (a test suite that
runs on in two processes): the copy is ended as it starts (``os.register_at_fork``), and the
fork is the target's failure, as in the child. A non-daemon thread the target started and left
running is named. Processes the target starts and a hang are not watched here: give the target
by name (``assert_pp_safe("module:attr")``) for those, as the child's run watches them.

Imports nothing beyond the standard library.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = ["Watched", "watched"]

_lock = threading.Lock()
#: The pid of the process whose in-process checks are running (None when none is), and how
#: many are.
_running: dict[str, int | None] = {"pid": None, "depth": 0}
_forks: list[int] = []
_hooked = False


def _before() -> None:
    if _running["pid"] == os.getpid():
        _forks.append(1)


def _in_child() -> None:
    if _running["pid"] is not None and _running["pid"] != os.getpid():
        os._exit(0)  # a copy of the checking process: only the original answers


@dataclass
class Watched:
    """What was seen while the block ran: ``forks`` (how many) and ``threads`` (the names of
    non-daemon threads started then and still running at its end)."""

    forks: int = 0
    threads: list[str] = field(default_factory=list)


@contextlib.contextmanager
def watched() -> Iterator[Watched]:
    """Watch forks and threads while the block runs (see the module's docstring)."""
    global _hooked
    with _lock:
        if not _hooked and hasattr(os, "register_at_fork"):
            os.register_at_fork(before=_before, after_in_child=_in_child)
            _hooked = True
        if _running["depth"] == 0:
            _running["pid"] = os.getpid()
        _running["depth"] = (_running["depth"] or 0) + 1
        forks_before = len(_forks)
    threads_before = set(threading.enumerate())
    seen = Watched()
    try:
        yield seen
    finally:
        with _lock:
            _running["depth"] = (_running["depth"] or 1) - 1
            if _running["depth"] == 0:
                _running["pid"] = None
            seen.forks = len(_forks) - forks_before
        seen.threads = [
            thread.name
            for thread in threading.enumerate()
            if thread not in threads_before and thread.is_alive() and not thread.daemon
        ]
