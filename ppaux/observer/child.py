"""The check's child process, seen from the parent: start it, read its records, see how it ended.

The child is ``python -I -B -m ppaux.observer.worker`` (isolated mode: no ``PYTHON*`` variables,
no user site, not the current directory first on the path; no bytecode written beside the
user's files) in a process group of its own, started in
the user's current directory with an explicit environment and its request on stdin (read whole,
then /dev/null: argv names nothing of it). Its stdout and stderr (the target's prints,
``os.write(1, ...)``, its subprocesses) are one pipe, handed to ``on_output`` as they arrive; its
records come on a pipe of their own (the child moves it to a high descriptor number picked at
random), as frames of JSON (:mod:`.framing`), each marked with the pid that sent it. A record from
any other pid (a fork of the child) is not taken, and the child's own are taken in the check's
order and within its bounds (:mod:`.protocol`). Which hook it runs is in the hook slot
(:mod:`.framing`), a page of memory both share, read once it has ended. Each part of the run (a
step) has the check's timeout on this process's clock from the record that began it: when a
part takes longer, whatever the child sends meanwhile, its whole process group is killed;
once it ends, whatever it left behind is killed too: in that group, and (on Linux,
:mod:`.reaper`) in a session of its own. SIGTERM or SIGINT to this process ends the child and
its processes before this process ends (:mod:`.signals`); a fatal signal's frames are read back
(:mod:`.crash`). Imports nothing beyond the standard library, :mod:`.framing`,
:mod:`.protocol`, :mod:`.reaper`, :mod:`.signals`, :mod:`.crash`, :mod:`.interpreter`,
:mod:`.forked` and
:mod:`ppaux.replay.import_path`.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ppaux.observer.crash import MAX_CRASH_TEXT, crash_file, crash_frame, printed_frame
from ppaux.observer.forked import forked_child
from ppaux.observer.framing import (
    SLOT_SIZE,
    FrameError,
    FrameReader,
    read_slot,
    read_slot_step,
)
from ppaux.observer.interpreter import started
from ppaux.observer.protocol import Bounds, Protocol
from ppaux.observer.signals import ending_on_sigterm, taking_signals
from ppaux.replay import warning_options

__all__ = ["ChildEnd", "run_child"]

#: The module the child runs.
WORKER = "ppaux.observer.worker"
#: How long the child may take to start (the interpreter, ppaux and torch) before its target.
START_ALLOWANCE_S = 60.0
#: How long a two-process transport's receiver may take to start and join, beyond the check's
#: timeout: the wire's own bound (``ppaux.replay.distributed.START_UP_S``, which this module
#: does not import: it imports torch). Importing torch, and sglang's runtime, in the receiver
#: is not the target's time, and on a loaded machine it takes far more than a transfer.
RECEIVER_START_UP_S = 600.0
#: Beyond the transport's own timeout, how long one part of a run (a step) may take.
GRACE_S = 5.0
#: How long the child may take to exit once its pipes closed before its last record.
EXIT_ALLOWANCE_S = 5.0


@dataclass
class ChildEnd:
    """How the child ended: its ``returncode`` (negative: the signal), whether it was killed for
    sending nothing in time (``timed_out``), whether it sent its last record (``finished``),
    the pids of forks that tried to send (``forks``), frames that were not JSON (``garbled``),
    and the processes the target started that were still running when it ended
    (``outlived``, each its command's name and pid)."""

    returncode: int | None = None
    timed_out: bool = False
    finished: bool = False
    forks: set[int] = field(default_factory=set)
    garbled: str | None = None
    waited_s: float = 0.0
    outlived: list[str] = field(default_factory=list)
    #: The child's own rank 0 process (:mod:`.apart`), as its 'ready' record named it: ended
    #: with the child, never one the target left behind.
    rank0: int | None = None
    #: Why that process was forked from the child rather than a fresh interpreter, if it was.
    rank0_forked: str | None = None
    #: Signals this process received while the child ran that would have ended it, sent by
    #: the target's processes (``os.kill(os.getppid(), ...)``) or by a sender that could not
    #: be read, by name.
    signalled: list[str] = field(default_factory=list)
    #: Such signals sent by any other process: (name, its pid; 0 for the kernel). The first
    #: stops the run.
    foreign: list[tuple[str, int]] = field(default_factory=list)
    #: The hook the child last said it began and did not end (its record in the hook slot),
    #: or None.
    hook: dict[str, Any] | None = None
    #: The batch size and the step the child last said it began (None before the first).
    step: tuple[int, int] | None = None
    #: Where a fatal signal ended it: the innermost frame of the target's own files that the
    #: child's faulthandler wrote (:mod:`.crash`), or None.
    crashed_at: dict[str, Any] | None = None
    #: Whether the child, after its last record, was still running when its timeout passed
    #: (and was killed): the target's code hung on the way out (a stream's flush, an exit
    #: handler).
    lingered: bool = False
    #: Whether this process killed the child (its timeout, garbled records, or this process
    #: stopped): its exit status is then this process's doing, not the target's.
    killed: bool = False
    #: The bound on its records it went past (the field of ``Limits``, its value in the run,
    #: where the run was), or None: it was ended there.
    flooded: tuple[str, int, str] | None = None
    #: Where ``flooded`` is a record that would cost more than this to read (bytes), this;
    #: else None.
    costly: int | None = None


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _drain(fd: int, on_output: Callable[[bytes], None]) -> None:
    """What is left in the output pipe, without waiting for a writer that outlived the child."""
    while True:
        try:
            data = os.read(fd, 1 << 16)
        except (BlockingIOError, OSError):
            return
        if not data:
            return
        on_output(data)


def _named_pid(name: str) -> int | None:
    """The pid at the end of a process's name (``"command (pid 12)"``), or None."""
    number = name.rpartition("(pid ")[2].removesuffix(")")
    return int(number) if number.isdigit() else None


def _pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when ``pid`` ends (Linux 5.3 and later), or None."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        fd: int = opener(pid)
    except OSError:  # an older kernel, or it has ended already (poll() sees that)
        return None
    return fd


def _slot() -> int:
    """A descriptor of a fresh hook slot (:mod:`.framing`): memory where the system can make
    a file of it (Linux), else a temporary file."""
    try:
        fd: int = os.memfd_create("ppaux-hook")  # type: ignore[attr-defined,unused-ignore]
    except (AttributeError, OSError):
        import tempfile

        with tempfile.TemporaryFile() as file:
            fd = os.dup(file.fileno())
    try:
        os.ftruncate(fd, SLOT_SIZE)
    except OSError:
        os.close(fd)
        raise
    return fd


def _environment() -> dict[str, str]:
    """The child's environment: the user's, without what would change how Python starts, and
    with ``OMP_WAIT_POLICY=PASSIVE`` unless the user set a policy. torch's OpenMP threads
    otherwise spin for a while after each parallel operation of the target's, and with the
    check's own work between the target's calls they spin through it: at 300 steps that was
    three quarters of the check's CPU (see docs/benchmarks.md). The policy changes how idle
    threads wait, never what an operation computes."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONSTARTUP", "PYTHONINSPECT", "PYTHONBREAKPOINT")
    }
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return env


def run_child(
    request: dict[str, Any],
    *,
    timeout_s: float,
    take: Callable[[dict[str, Any]], None],
    on_output: Callable[[bytes], None],
    bounds: Bounds,
) -> ChildEnd:
    """Run the worker on ``request``; ``take`` each record the child itself sent (in the
    check's order and within ``bounds``: :mod:`.protocol`), hand its output to ``on_output``;
    return how it ended. While it runs this process keeps the target's processes in hand
    (:mod:`.reaper`); at the end, every process the target left behind is ended and named
    (``outlived``)."""
    from ppaux.observer.reaper import children as our_children
    from ppaux.observer.reaper import end_all, guarded, of_target, working

    with ending_on_sigterm(), guarded(), taking_signals() as signals:
        before = our_children()
        run = _Run(
            {**request, "unblock": sorted(signals.blocked)}, timeout_s, take, on_output, bounds
        )
        signals.targets = lambda pid: of_target(pid, run.process.pid, before)
        try:
            with working(run.process.pid):
                run.read(lambda: signals.sort(run.end))
        finally:
            run.close()
            signals.sort(run.end)
            run.end.outlived = [
                name
                for name in end_all(before, run.process.pid)
                if _named_pid(name) not in run.end.forks and _named_pid(name) != run.end.rank0
            ]
            # Elsewhere than Linux: whatever the child started in its group ends with it.
            _kill_group(run.process.pid)
    return run.end


class _Run:
    """One run of the child: started on creation, read by :meth:`read`, ended by
    :meth:`close`."""

    def __init__(
        self,
        request: dict[str, Any],
        timeout_s: float,
        take: Callable[[dict[str, Any]], None],
        on_output: Callable[[bytes], None],
        bounds: Bounds,
    ) -> None:
        import json

        self.timeout_s = timeout_s
        self.bounds = bounds
        self.protocol = Protocol(bounds.batch_sizes, bounds.steps, bounds.most_given)
        #: Records taken in the run's part (since the last that moved it on), and bytes read.
        self.part_records = 0
        self.received = 0
        self.take = take
        #: The end of what the child printed (where a target's own faulthandler wrote).
        self.printed = bytearray()

        def output(data: bytes) -> None:
            self.printed += data
            del self.printed[:-MAX_CRASH_TEXT]
            on_output(data)

        self.on_output = output
        self.slot = _slot()
        self.crash = crash_file()
        self.read_end, write_end = os.pipe()
        # ``-I``, or ``-s -P`` where the user set ``PYTHONHASHSEED`` (:mod:`.interpreter`).
        isolation, env, later = started(_environment())
        argv = [sys.executable, *isolation, "-B", *warning_options(), "-m", WORKER]
        passed = (write_end, self.slot, self.crash)
        try:
            # The test suite's fork server where its hook applies (:mod:`.forked`).
            self.process: Any = forked_child(argv, request["cwd"], env, passed) or subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                pass_fds=passed,
                start_new_session=True,
                cwd=request["cwd"],
                env=env,
            )
        except BaseException:
            os.close(self.read_end)
            os.close(self.slot)
            os.close(self.crash)
            raise
        finally:
            os.close(write_end)
        # The request on stdin, not in argv: the records' descriptor is named nowhere the
        # target can read it from (the child moves it, too).
        assert self.process.stdin is not None
        with contextlib.suppress(OSError):
            message = {
                **request,
                **{"fd": write_end, "slot": self.slot, "crash": self.crash, "environ": later},
            }
            self.process.stdin.write(json.dumps(message).encode("utf-8"))
        with contextlib.suppress(OSError):
            self.process.stdin.close()
        self.end = ChildEnd()
        self.reader = FrameReader(bounds.record_bytes[1], bounds.record_cost)
        self.started = time.monotonic()
        self.deadline = self.started + START_ALLOWANCE_S + timeout_s
        self.interrupted = True  # until read() returns

    def read(self, signals: Callable[[], None] = lambda: None) -> None:
        """Read records and output until the child is done, garbled its records, timed out
        or another process than the target's signalled this one (``signals`` sorts what
        came)."""
        assert self.process.stdout is not None
        output = self.process.stdout.fileno()
        selector = selectors.DefaultSelector()
        for fd, name in ((self.read_end, "records"), (output, "output")):
            os.set_blocking(fd, False)
            selector.register(fd, selectors.EVENT_READ, name)
        open_streams = {self.read_end, output}
        # The child's exit is seen as it happens (a pidfd, where the system has one; else at
        # the next turn), not when its pipes close: a process it started may hold them open.
        exited = _pidfd(self.process.pid)
        if exited is not None:
            selector.register(exited, selectors.EVENT_READ, "exit")
        try:
            while open_streams:
                signals()
                remaining = self.deadline - time.monotonic()
                if remaining <= 0:
                    self.end.timed_out = not self.end.finished
                    break
                for key, _ in selector.select(timeout=min(remaining, 1.0)):
                    if key.data != "exit" and not self._read_one(key, selector, open_streams):
                        break
                stopped = self.end.garbled is not None or self.end.flooded is not None
                if not stopped and self.process.poll() is not None:
                    # It ended: what it wrote before is in the pipes, whoever holds them now.
                    self._last_records(selector, open_streams)
                if stopped or self.process.poll() is not None:
                    _drain(output, self.on_output)
                    break
        finally:
            selector.close()
            if exited is not None:
                os.close(exited)
        self.interrupted = False

    def _last_records(self, selector: selectors.BaseSelector, open_streams: set[int]) -> None:
        """The records still in the pipe once the child ended (at most a record's bound and a
        read more: a process it left behind may keep writing)."""
        budget = self.bounds.record_bytes[1] + (1 << 16)
        while budget > 0 and self.read_end in open_streams:
            try:
                data = os.read(self.read_end, 1 << 16)
            except OSError:  # nothing more now (BlockingIOError among them)
                return
            if not data:
                selector.unregister(self.read_end)
                open_streams.discard(self.read_end)
                return
            budget -= len(data)
            if not self._records(data):
                return

    def _read_one(
        self, key: selectors.SelectorKey, selector: selectors.BaseSelector, open_streams: set[int]
    ) -> bool:
        """Read what one stream has; False once the records are garbled."""
        fd = key.fd
        try:
            data = os.read(fd, 1 << 16)
        except BlockingIOError:
            return True
        if not data:
            selector.unregister(fd)
            open_streams.discard(fd)
            return True
        if key.data == "output":
            self.on_output(data)
            return True
        return self._records(data)

    def _records(self, data: bytes) -> bool:
        """Take the records ``data`` completes; False once they are garbled or past a bound."""
        self.received += len(data)
        if self.received > self.bounds.run_bytes[1]:
            return self._flooded(self.bounds.run_bytes)
        try:
            messages = self.reader.feed(data)
            for message in messages:
                self._message(message)
                if self.end.garbled is not None or self.end.flooded is not None:
                    return False
            self.reader.check()
        except FrameError as exc:
            if self.reader.too_large is not None:
                return self._flooded(self.bounds.record_bytes)
            if self.reader.too_costly is not None:
                self.end.costly = self.bounds.record_cost
                return self._flooded(self.bounds.record_bytes)
            # Nothing it sends after this can be read as records: it ends here, and that is
            # the one way it ended (not an exit or a hang as well).
            self.end.garbled = str(exc)
            _kill_group(self.process.pid)
            return False
        return True

    def _flooded(self, bound: tuple[str, int]) -> bool:
        """The child went past ``bound`` (a limit's name and value): it ends here."""
        self.end.flooded = (*bound, self.protocol.where())
        _kill_group(self.process.pid)
        return False

    def _message(self, message: dict[str, Any]) -> None:
        pid = message.get("pid")
        if not isinstance(pid, int) or isinstance(pid, bool):
            # Every record of the check's names the process that sent it: JSON that does not
            # is no record, and the stream is garbled from here.
            self.end.garbled = "a record that is not one of the check's (no integer 'pid')"
            _kill_group(self.process.pid)
            return
        if pid != self.process.pid:
            # A fork's record is not taken, but it is one of the records sent in this part
            # (a fork that keeps sending floods the run as its parent would).
            self.end.forks.add(pid)
            self.part_records += 1
            if self.part_records > self.bounds.step_records[1]:
                self._flooded(self.bounds.step_records)
            return
        try:
            moved = self.protocol.take(message)
            if message["event"] not in ("ready", "receiver"):
                self.take(message)
            elif self.end.rank0 is None and isinstance(message.get("rank0"), int):
                self.end.rank0 = message["rank0"]
                forked = message.get("rank0_forked")
                self.end.rank0_forked = forked[:300] if isinstance(forked, str) else None
        except (
            KeyError,
            TypeError,
            ValueError,
            IndexError,
            AttributeError,
            OverflowError,
            RecursionError,
        ) as exc:
            # A frame that is JSON but not a record of the child's (a missing or mistyped
            # field): the stream is garbled from here, as for a frame that does not read.
            text = f"{type(exc).__name__}: {exc}"
            self.end.garbled = f"a record that is not one of the check's ({text[:200]})"
            _kill_group(self.process.pid)
            return
        self.part_records += 1
        if not moved:
            if self.part_records > self.bounds.step_records[1]:
                self._flooded(self.bounds.step_records)
            return
        # A record that moves the run on begins a new part: its time runs from now, on this
        # process's clock, whatever the child sends within it.
        self.part_records = 1
        self.deadline = time.monotonic() + self.timeout_s + GRACE_S
        if message.get("event") == "receiver":
            # The receiver's start-up has its own bound, as the wire gives it.
            self.deadline += RECEIVER_START_UP_S
        if message.get("event") == "end":
            # Its exit is the target's too (its streams flushed, its finalisers): waited
            # for, as long as the check's timeout.
            self.end.finished = True
            self.deadline = time.monotonic() + self.timeout_s

    def close(self) -> None:
        """Wait a moment for a child that is done, kill one that is not, and close the pipes."""
        process = self.process
        if not self.end.timed_out and not self.interrupted:
            # Its pipes are closed or it sent its last record: it has a moment to exit (once
            # it sent its last record, until its deadline).
            left = self.deadline - time.monotonic()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(
                    timeout=max(left if self.end.finished else min(left, EXIT_ALLOWANCE_S), 0.1)
                )
        if process.poll() is None:
            _kill_group(process.pid)
            self.end.killed = True
            if not self.interrupted:
                if self.end.finished:
                    self.end.lingered = True
                else:
                    self.end.timed_out = True
        self.end.returncode = process.wait()
        slot = os.pread(self.slot, SLOT_SIZE, 0)
        _, hook = read_slot(slot)
        self.end.hook = hook if hook is not None and isinstance(hook.get("method"), str) else None
        self.end.step = read_slot_step(slot)
        if self.end.returncode < 0 and not self.end.killed:
            self.end.crashed_at = crash_frame(self.crash) or printed_frame(self.printed)
        os.close(self.crash)
        os.close(self.slot)
        os.close(self.read_end)
        assert process.stdout is not None
        process.stdout.close()
        self.end.waited_s = time.monotonic() - self.started
