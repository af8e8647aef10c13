"""The checking process of a check in hand (``assert_pp_safe`` given the object), kept apart
from rank 0's process as the check's parent is kept apart from its child.

Rank 0's process (fresh or forked: :mod:`.handfresh`, :mod:`.handapart`) runs the target's
code in a session and process group of its own. While the check runs, this process holds the
target's processes as the CLI's check holds its child (:func:`ppaux.observer.child.run_child`):

- a signal rank 0's process or one it started sends this one (``os.kill(os.getppid(), ...)``:
  SIGTERM, SIGINT, SIGUSR1, SIGABRT and the others whose default action would end the test
  process) is read with its sender and is a finding about the target, never the end of the
  test session (:mod:`.signals`); one any other process sends does what it did before;
- a process rank 0's process started and left running (in its group, or escaped from it:
  this process is a subreaper meanwhile, :mod:`.reaper`) is killed with rank 0's process
  group at the end and named (PP718 ``outlived``, as by name).

SIGKILL and SIGSTOP cannot be caught by any process: a target that sends them still ends or
stops the test process. Only in the main thread, where Python handles signals; elsewhere the
processes are still ended and named.

Imports nothing beyond the standard library at import.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ppaux.observer.findings import Ending

__all__ = ["HandGuard", "hand_guard", "shielded"]


@dataclass
class HandGuard:
    """What the checking process saw of rank 0's processes while :func:`hand_guard` ran."""

    #: The signals the checking process blocks meanwhile: rank 0's process unblocks them.
    blocked: list[int] = field(default_factory=list)
    #: Rank 0's process, once started (its session and group lead).
    pid: int | None = None
    #: Signals the target's processes sent this one, by name.
    signalled: list[str] = field(default_factory=list)
    #: Signals another process sent this one: (name, its pid; 0 for the kernel).
    foreign: list[tuple[str, int]] = field(default_factory=list)
    #: Processes rank 0's process started that were still running at the end (killed).
    outlived: list[str] = field(default_factory=list)
    #: The CLI's record of a child's end has forks; rank 0's are told on their own pipe.
    forks: set[int] = field(default_factory=set)
    #: The pipe the process between rank 0's and this one tells on (:func:`shielded`): this
    #: process's read end, and the end rank 0's process is given.
    told: int | None = None
    report: int | None = None
    #: Rank 0's own processes (below the process between), as it told them.
    rank0: set[int] = field(default_factory=set)

    def read_told(self) -> None:
        """What the processes between told, read without waiting (they have ended)."""
        from ppaux.observer.signals import signal_name

        if self.told is None:
            return
        data = b""
        with contextlib.suppress(OSError):  # nothing more to read now
            os.set_blocking(self.told, False)
            while len(data) < 1 << 16 and (chunk := os.read(self.told, 4096)):
                data += chunk
        for line in data.decode("ascii", "replace").splitlines():
            kind, number = line[:1], line[1:]
            if not number.isdigit():
                continue
            if kind == "p":
                self.rank0.add(int(number))
            elif kind == "s" and signal_name(int(number)) not in self.signalled:
                self.signalled.append(signal_name(int(number)))

    def endings(self) -> list[Ending]:
        """What rank 0's processes did to the checking process: the signals they sent it and
        the processes they left running, as the CLI's check reports them."""
        from ppaux.observer.endings import left_behind

        return left_behind(self)


@contextlib.contextmanager
def hand_guard() -> Iterator[HandGuard]:
    """Hold rank 0's processes while the block runs (see the module's docstring); set the
    guard's ``pid`` once rank 0's process started."""
    from ppaux.observer.reaper import children, end_all, guarded, of_target
    from ppaux.observer.signals import ending_on_sigterm, taking_signals

    with ending_on_sigterm(), guarded(), taking_signals() as signals:
        before = children()
        guard = HandGuard(blocked=sorted(signals.blocked))
        with contextlib.suppress(OSError):
            guard.told, guard.report = os.pipe()
        signals.targets = lambda pid: guard.pid is not None and of_target(pid, guard.pid, before)
        try:
            yield guard
        finally:
            if guard.report is not None:
                os.close(guard.report)
            signals.sort(guard)
            if guard.pid is not None:
                ended = end_all(before, guard.pid)
                _kill_group(guard.pid)
                guard.read_told()
                guard.outlived = [
                    name
                    for name in ended
                    if not any(name.endswith(f"(pid {p})") for p in guard.rank0)
                ]
            if guard.told is not None:
                os.close(guard.told)


def _kill_group(pid: int) -> None:
    """Kill what is left of rank 0's process group (where ``/proc`` did not show it)."""
    import signal

    if hasattr(os, "killpg"):
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)


def shielded(report: int | None, blocked: list[int]) -> None:
    """In rank 0's process as it starts, before any of the target's code: a session and
    process group of its own, and a parent of its own between it and the checking process
    (:func:`_stand_between`), so that ``os.kill(os.getppid(), ...)`` reaches that one, which
    tells the checking process on ``report``; the signals the checking process blocks
    (``blocked``, inherited) unblocked. Returns in rank 0's process; where it cannot fork, in
    the same process with only the session and signals made."""
    import signal

    with contextlib.suppress(OSError):
        if os.getsid(0) != os.getpid():
            os.setsid()
    every = {int(n) for n in signal.valid_signals()} - {signal.SIGKILL, signal.SIGSTOP}
    before = signal.pthread_sigmask(signal.SIG_BLOCK, every)
    pid = -1
    if report is not None and hasattr(os, "fork") and hasattr(signal, "sigtimedwait"):
        with contextlib.suppress(OSError):
            pid = os.fork()
    if pid > 0 and report is not None:
        _stand_between(pid, report, every)  # never returns
    if pid == 0 and report is not None:
        os.close(report)
        _die_with(os.getppid())
    signal.pthread_sigmask(signal.SIG_SETMASK, set(before) - set(blocked))


def _die_with(parent: int) -> None:
    """Be killed when ``parent`` (the process between) dies (Linux's PR_SET_PDEATHSIG); end
    at once where it died before the call."""
    import signal
    import sys

    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):  # no libc, or no prctl in it
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _stand_between(pid: int, report: int, every: set[int]) -> None:
    """The process between rank 0's (``pid``) and the checking process: it holds none of
    their descriptors but ``report``, on which it writes rank 0's pid (``p<pid>``) and each
    distinct signal the target's processes (its session) send it (``s<number>``); another
    process's signal is handed on to rank 0's; once rank 0's process ends it ends the same way
    (its exit status, or its signal, without a core file). Never returns."""
    import resource
    import signal

    with contextlib.suppress(OSError, ValueError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    os.closerange(3, report)
    os.closerange(report + 1, 1 << 16)
    told: set[int] = set()
    with contextlib.suppress(OSError):
        os.write(report, f"p{pid}\n".encode("ascii"))
    session = os.getsid(0)
    while True:
        try:
            info = signal.sigtimedwait(every, 0.5)
        except OSError:
            info = None
        if info is not None and info.si_signo != signal.SIGCHLD:
            number = info.si_signo
            if _in_session(info.si_pid, session):
                if number not in told and len(told) < 128:
                    told.add(number)
                    with contextlib.suppress(OSError):
                        os.write(report, f"s{number}\n".encode("ascii"))
            else:
                with contextlib.suppress(OSError):
                    os.kill(pid, number)
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            os._exit(1)
        if done:
            _end_as(status)


def _in_session(pid: int, session: int) -> bool:
    try:
        return pid > 0 and os.getsid(pid) == session
    except OSError:  # it ended meanwhile: one of rank 0's processes, which end with it
        return True


def _end_as(status: int) -> None:
    """End this process as the wait ``status`` says its child ended."""
    import signal

    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        with contextlib.suppress(OSError, ValueError):
            signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {number})
        os._exit(128 + number)
    os._exit(os.waitstatus_to_exitcode(status))
