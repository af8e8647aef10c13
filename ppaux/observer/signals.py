"""The signals this process takes while the check's child runs: SIGTERM and SIGHUP stop the
run as SIGINT does (the child's processes are ended first), and the signals that would end this
process, read with their sender, are findings about the target where the target's processes
sent them (:class:`Signals`); a stopping signal from anybody else does what it did before.
Imports nothing beyond the standard library.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Iterator
from typing import Any, Protocol

__all__ = ["SignalLog", "Signals", "ending_on_sigterm", "signal_name", "taking_signals"]


class SignalLog(Protocol):
    """Where :meth:`Signals.sort` puts the signals it read: the check's record of how the child
    ended (:class:`~.child.ChildEnd`), which this module does not import (it imports nothing
    beyond the standard library)."""

    #: The target's signals (or a sender unknown), by name.
    signalled: list[str]
    #: Any other process's: (name, its pid; 0 for the kernel).
    foreign: list[tuple[str, int]]


#: The signals that end a run as SIGINT does: a CI step's timeout or ``kill`` (SIGTERM), a
#: terminal closed or an ssh session dropped (SIGHUP).
_ENDING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


@contextlib.contextmanager
def ending_on_sigterm() -> Iterator[None]:
    """While the child runs, SIGTERM or SIGHUP to this process stops the run as SIGINT does
    (:exc:`KeyboardInterrupt`), so that the child's processes are ended first; then the signal
    is raised again, to end this process as it would have (or to run the handler it had).
    A signal this process ignores is left ignored. Only in the main thread, where Python
    handles signals."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def stop(signum: int, frame: object) -> None:
        received.append(signum)
        raise KeyboardInterrupt

    # One ignored when ppaux started (``nohup``) stays ignored: it ends nothing.
    before = {
        number: signal.signal(number, stop)
        for number in _ENDING
        if signal.getsignal(number) is not signal.SIG_IGN
    }
    try:
        yield
    except KeyboardInterrupt:
        if not received:
            raise
        for number, handler in before.items():
            signal.signal(number, handler)
        signal.raise_signal(received[0])
        raise  # a handler of the caller's that did not end the process
    finally:
        for number, handler in before.items():
            signal.signal(number, handler)


#: Signals whose default action ends this process and that nothing here or in a terminal sends
#: while a check runs: received then from the target's processes, they are the target's doing
#: (sglang's scheduler sends its parent SIGQUIT on a fatal error). SIGINT, SIGTERM and SIGHUP
#: stop the run as they should (:data:`_STOPPING`); SIGSTOP and SIGKILL cannot be caught.
#: Also the ones no program of ours sends: SIGIO, SIGPWR, SIGSTKFLT, SIGXCPU and the real-time
#: signals. The faults (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP) are left as they are: a
#: handler for a real fault in a thread that does not block it would run it again forever.
_TAKEN = tuple(
    sorted(
        {
            getattr(signal, name)
            for name in (
                "SIGQUIT",
                "SIGUSR1",
                "SIGUSR2",
                "SIGALRM",
                "SIGVTALRM",
                "SIGPROF",
                "SIGIO",
                "SIGPWR",
                "SIGSTKFLT",
                "SIGXCPU",
            )
            if hasattr(signal, name)
        }
        | set(range(getattr(signal, "SIGRTMIN", 0), getattr(signal, "SIGRTMAX", -1) + 1))
    )
)


#: Signals that stop this process on purpose: a user's Ctrl-C (SIGINT), a supervisor's SIGTERM,
#: a closed terminal (SIGHUP), job control (SIGTSTP, SIGTTIN, SIGTTOU). While a check runs they
#: are read with their sender: one the target's processes sent is a finding about the target
#: (and, job control, never stops this process); one anybody else sent does what it did before
#: (:meth:`Signals.relay`).
_STOPPING = tuple(
    getattr(signal, name)
    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGTSTP", "SIGTTIN", "SIGTTOU")
    if hasattr(signal, name)
)
#: Of those, the ones whose default action stops this process (a terminal's job control):
#: Ctrl-Z, and a read or write of the terminal from the background. SIGSTOP stops it too, and
#: cannot be caught or read: a target that sends it stops the check until a SIGCONT.
_PAUSING = tuple(
    getattr(signal, name) for name in ("SIGTSTP", "SIGTTIN", "SIGTTOU") if hasattr(signal, name)
)


#: Signals whose default action ends this process with a core dump, which a process may also
#: send another one (``os.kill(os.getppid(), signal.SIGABRT)``): SIGABRT, SIGSYS and the faults.
#: While the child runs they are blocked (no handler changes): one sent by the target's
#: processes is read with its sender and is a finding about the target; one sent by anybody
#: else is raised again once the run is over (the handler in place, faulthandler's or
#: pytest's, or the default action then runs). A real fault of this process's own code is
#: not stopped by the block: the kernel unblocks it and the process ends as it would have
#: (without faulthandler's traceback while the child runs).
_FAULTS = tuple(
    getattr(signal, name)
    for name in ("SIGABRT", "SIGSYS", "SIGTRAP", "SIGBUS", "SIGSEGV", "SIGFPE", "SIGILL")
    if hasattr(signal, name)
)


def signal_name(number: int) -> str:
    """A signal's name ('SIGUSR1', 'SIGRTMIN+3'), or its number as text."""
    try:
        return signal.Signals(number).name
    except ValueError:
        low = getattr(signal, "SIGRTMIN", None)
        if low is not None and low < number <= signal.SIGRTMAX:
            return f"SIGRTMIN+{number - low}"
        return str(number)


class Signals:
    """The signals of :data:`_TAKEN` received while the child runs, each with whether the
    target's processes sent it. They are blocked in the thread that runs the check (and in
    the threads it starts) and read by a thread of their own with ``sigtimedwait``, which says
    who sent each; the sender is placed at once (:func:`~.reaper.of_target`), before it can
    end. One that another thread of this process took (a process-wide signal goes to a thread
    that does not block it; its handler ran) has no sender known, and is counted the
    target's."""

    def __init__(self) -> None:
        self.blocked: set[int] = set()
        #: Whether a pid is the target's process or one it started (set once it runs).
        self.targets: Callable[[int], bool] = lambda pid: False
        self.received: list[tuple[str, int | None]] = []
        self.theirs: list[str] = []
        #: Signals of :data:`_FAULTS` another process sent: raised again once the run is over.
        self.deferred: list[int] = []
        self._stop = False

    def taken(self, signum: int, frame: object) -> None:
        self.received.append((signal_name(signum), None))

    def wait(self) -> None:
        """Read the blocked signals as they come, until :meth:`stop`."""
        while not self._stop:
            try:
                info = signal.sigtimedwait(self.blocked, 0.05)
            except OSError:
                return
            if info is None:
                continue
            name, pid = signal_name(info.si_signo), info.si_pid
            mine = pid > 0 and self.targets(pid)
            if info.si_signo in _STOPPING and not mine:
                self.relay(info.si_signo)
                continue
            if info.si_signo in _FAULTS and not mine:
                self.deferred.append(info.si_signo)
                continue
            self.received.append((name, None if mine else pid))

    @staticmethod
    def relay(number: int) -> None:
        """What a stopping signal from anybody but the target does had it not been blocked:
        SIGTSTP, SIGTTIN and SIGTTOU stop this process (as SIGSTOP: it cannot be blocked); the
        others run their handler in the main thread, as their arrival would."""
        import _thread

        if number in _PAUSING:
            os.kill(os.getpid(), signal.SIGSTOP)
        else:
            _thread.interrupt_main(signal.Signals(number))

    def stop(self) -> None:
        self._stop = True

    def sort(self, end: SignalLog) -> None:
        """The signals received so far, into ``end`` (a :class:`~.child.ChildEnd`): the
        target's (or a sender unknown) in its ``signalled``, the others' in its ``foreign``."""
        while self.received:
            name, sender = self.received.pop(0)
            if sender is None:
                if name not in end.signalled:
                    end.signalled.append(name)
            elif (name, sender) not in end.foreign:
                end.foreign.append((name, sender))


@contextlib.contextmanager
def taking_signals() -> Iterator[Signals]:
    """While the block runs, the signals of :data:`_TAKEN` that would end this process (their
    handler is the default one) are kept in :class:`Signals` instead. A handler the caller
    installed is left as it is. Only in the main thread, where Python handles signals."""
    import threading

    taken = Signals()
    if threading.current_thread() is not threading.main_thread():
        yield taken
        return
    before: dict[int, Any] = {}
    for number in _TAKEN:
        if signal.getsignal(number) is signal.SIG_DFL:
            before[number] = signal.signal(number, taken.taken)
    mask: set[int] | None = None
    reader = None
    if hasattr(signal, "sigtimedwait"):
        chosen = set(before) | set(_stopping()) | set(_faults())
        mask = set(signal.pthread_sigmask(signal.SIG_BLOCK, chosen))
        taken.blocked = chosen - mask
        reader = threading.Thread(target=taken.wait, name="ppaux-signals", daemon=True)
        reader.start()
    try:
        yield taken
    finally:
        taken.stop()
        if reader is not None:
            reader.join()
        late: list[int] = []
        with contextlib.suppress(OSError):
            while taken.blocked:
                info = signal.sigtimedwait(taken.blocked, 0)
                if info is None:
                    break
                # After the run's last look: the target's are dropped; a stopping signal from
                # anybody else still does what it does.
                if info.si_pid > 0 and taken.targets(info.si_pid):
                    continue
                if info.si_signo in _STOPPING:
                    late.append(info.si_signo)
                elif info.si_signo in _FAULTS:
                    taken.deferred.append(info.si_signo)
        if mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        for number, handler in before.items():
            signal.signal(number, handler)
        for number in dict.fromkeys(taken.deferred):
            signal.raise_signal(number)
        for number in late:
            taken.relay(number)


def _faults() -> list[int]:
    """The signals of :data:`_FAULTS` that would do something here: those not ignored."""
    return [number for number in _FAULTS if signal.getsignal(number) is not signal.SIG_IGN]


def _stopping() -> list[int]:
    """The signals of :data:`_STOPPING` that can be read with their sender and handed on:
    SIGINT, SIGTERM and SIGHUP where Python runs a handler for them (one ignored or left to the
    system's default is left alone), SIGTSTP, SIGTTIN and SIGTTOU where the system's default
    (stop) is its action."""
    chosen = []
    for number in _STOPPING:
        handler = signal.getsignal(number)
        if number in _PAUSING:
            if handler is signal.SIG_DFL:
                chosen.append(number)
        elif callable(handler):
            chosen.append(number)
    return chosen
