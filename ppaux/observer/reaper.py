"""What the parent does to keep the target's processes in hand while the check's child runs.

On Linux, for the time the child runs (:func:`guarded`), the parent process

- is a child subreaper (``PR_SET_CHILD_SUBREAPER``): a process the target starts in a session
  of its own (``setsid``, ``start_new_session``) escapes the child's process group, and once
  its parent is gone it becomes this process's child instead of init's, so that
  :func:`leftovers` finds it and :func:`end_all` ends it with the check;
- is not dumpable (``PR_SET_DUMPABLE`` 0): a process of the same user that is not privileged
  (the target, its children) can neither open ``/proc/<parent>/fd/*`` (and write into the
  report's stream) nor trace it. A privileged one (root with ``CAP_SYS_PTRACE``) still can.

Both settings are put back as they were when the run ends, so that a test process that runs
a check is the same process afterwards. Elsewhere (or where ``prctl`` cannot be called) the
process group is all there is: a process that leaves it is not found.

A process of ppaux's own that the child started (the torch-distributed transport's receiver,
which runs :data:`ppaux.replay.import_path.BOOT`) is ended with the rest but never named as the
target's: when the child dies first, it too becomes this process's child.

Imports nothing beyond the standard library and :mod:`ppaux.replay.import_path`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator

__all__ = ["end_all", "guarded", "leftovers", "of_target", "working"]

_PR_SET_DUMPABLE = 4
_PR_GET_DUMPABLE = 3
_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37
#: How many rounds :func:`end_all` goes through: each ends one generation of descendants
#: (their children become this process's once they are gone).
_ROUNDS = 16

#: Checks can run at once in one process (threads of a test suite): the settings are made by
#: the first and put back by the last, and each check's worker is known to all, so that no
#: check takes another's worker for a process its target left behind.
_lock = threading.Lock()
_holders = 0
_restore: Callable[[], None] | None = None
_made = False
_workers: set[int] = set()


@contextlib.contextmanager
def working(pid: int) -> Iterator[None]:
    """While the block runs, ``pid`` is a check's worker: :func:`leftovers` never counts it."""
    with _lock:
        _workers.add(pid)
    try:
        yield
    finally:
        with _lock:
            _workers.discard(pid)


def _prctl() -> Callable[..., int] | None:
    """libc's ``prctl`` (Linux), or None."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl: Callable[..., int] = libc.prctl
        return prctl
    except (OSError, AttributeError):  # no libc to ask, or no prctl in it
        return None


@contextlib.contextmanager
def guarded() -> Iterator[bool]:
    """A subreaper that is not dumpable while the block runs (see the module's docstring);
    yields whether the settings could be made. Nested or concurrent blocks share the settings:
    the first makes them, the last puts them back."""
    global _holders, _restore, _made
    with _lock:
        if _holders == 0:
            _restore, _made = _make()
        _holders += 1
        made = _made
    try:
        yield made
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _restore is not None:
                _restore()
                _restore = None


def _make() -> tuple[Callable[[], None] | None, bool]:
    """Make this process a subreaper that is not dumpable: how to put it back, and whether the
    subreaper could be made."""
    prctl = _prctl()
    if prctl is None:
        return None, False
    import ctypes

    reaper = ctypes.c_int(0)
    dumpable = prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0)
    if prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(reaper), 0, 0, 0) != 0:
        return None, False
    made = prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    if dumpable == 1:
        prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)

    def restore() -> None:
        if dumpable == 1:
            prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)
        if made and reaper.value == 0:
            prctl(_PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)

    return restore, made


def children() -> set[int]:
    """The pids of this process's children (every thread's), from ``/proc``; empty where
    ``/proc`` does not say."""
    found: set[int] = set()
    try:
        threads = os.listdir("/proc/self/task")
    except OSError:
        return found
    for thread in threads:
        try:
            with open(f"/proc/self/task/{thread}/children", encoding="ascii") as file:
                found.update(int(pid) for pid in file.read().split())
        except (OSError, ValueError):  # the thread ended, or no such file on this kernel
            continue
    return found


def leftovers(before: set[int], child: int) -> set[int]:
    """This process's children that were not its children before the check (``before``)
    and are not the check's ``child``: the target's processes that outlived it."""
    with _lock:
        workers = set(_workers)
    return {
        pid
        for pid in children() - before
        if pid != child and pid not in workers and _in_our_session(pid)
    }


def _in_our_session(pid: int) -> bool:
    """Whether ``pid`` is not of this process's own session, or was made after the check
    began: a process the target started (not one this process's other threads start in
    its own session and group, which :func:`leftovers` must leave alone)."""
    try:
        return os.getsid(pid) != os.getsid(0) or os.getpgid(pid) != os.getpgid(0)
    except OSError:  # it ended meanwhile
        return False


def end_all(before: set[int], child: int) -> list[str]:
    """Kill every process the target left behind (see :func:`leftovers`), generation by
    generation, and reap them; returns what each that was still running was (its command's
    name and pid), at most 20."""
    ended: list[str] = []
    for _ in range(_ROUNDS):
        found = leftovers(before, child)
        if not found:
            break
        for pid in sorted(found):
            name = None if _state(pid) == "Z" else _name(pid)  # a zombie had ended: reaped
            if name is not None and _ppaux_own(pid):
                name = None  # ended with the rest, but not the target's to answer for
            with contextlib.suppress(ProcessLookupError, PermissionError):
                # Its group too: it may have started processes of its own there.
                os.killpg(pid, signal.SIGKILL) if _leads_group(pid) else None
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
            if name is not None and len(ended) < 20:
                ended.append(name)
    return ended


def of_target(pid: int, child: int, before: set[int]) -> bool:
    """Whether ``pid`` is the check's ``child`` or a process it started: in its session or
    its process group (the child leads both), a descendant of it (``/proc``'s parent links),
    or a process that became this process's child during the check (:func:`leftovers`). A
    process that has ended and been reaped cannot be placed: False."""
    if pid == child:
        return True
    with contextlib.suppress(OSError):
        if child in (os.getsid(pid), os.getpgid(pid)):
            return True
    me = os.getpid()
    current = pid
    for _ in range(64):
        parent = _parent(current)
        if parent is None or parent <= 1:
            return False
        if parent == child:
            return True
        if parent == me:
            return current in leftovers(before, child)
        current = parent
    return False


def _parent(pid: int) -> int | None:
    """The parent of ``pid`` in ``/proc/<pid>/stat``, None if unknown."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as file:
            return int(file.read().rpartition(")")[2].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _state(pid: int) -> str:
    """The state letter of ``pid`` in ``/proc/<pid>/stat`` ('Z': a zombie), '' if unknown."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as file:
            return file.read().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return ""


def _command_line(pid: int) -> list[str]:
    """The arguments of ``pid`` (``/proc/<pid>/cmdline``), empty if unknown."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            data = file.read()
    except OSError:
        return []
    return data.decode("utf-8", "replace").split("\0")[:-1]


def _ppaux_own(pid: int) -> bool:
    """Whether ``pid`` is ppaux's own receiver (its command line runs
    :data:`ppaux.replay.import_path.BOOT`), not a process of the target's."""
    from ppaux.replay import runs_boot

    return runs_boot(_command_line(pid))


def _leads_group(pid: int) -> bool:
    try:
        return os.getpgid(pid) == pid
    except OSError:
        return False


def _name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as file:
            return f"{file.read().strip()[:40]} (pid {pid})"
    except OSError:
        return f"pid {pid}"
