"""The check's child process, seen from the parent: start it, read its records, see how it ended.

The child is ``python -I -m ppaux.observer.worker`` (isolated mode: no ``PYTHON*`` variables, no
user site, not the current directory first on the path) in a process group of its own, started
in the user's current directory with an explicit environment and stdin closed. Its stdout and
stderr (the target's prints, ``os.write(1, ...)``, its subprocesses) are one pipe, handed to
``on_output`` as they arrive; its records come on a pipe of their own, as frames of JSON
(:mod:`.framing`), each marked with the pid that sent it. A record from any other pid (a fork of
the child) is not taken. When the child sends nothing for longer than its allowance, its whole
process group is killed; once it ends, whatever it left behind in that group is killed too.
Imports nothing beyond the standard library and :mod:`.framing`.
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

from ppaux.observer.framing import FrameError, FrameReader

__all__ = ["ChildEnd", "run_child"]

#: How long the child may take to start (the interpreter, ppaux and torch) before its target.
START_ALLOWANCE_S = 60.0
#: Beyond the transport's own timeout, how long a step may go without a record.
GRACE_S = 5.0
#: How long the child may take to exit once it sent its last record.
EXIT_ALLOWANCE_S = 5.0


@dataclass
class ChildEnd:
    """How the child ended: its ``returncode`` (negative: the signal), whether it was killed for
    sending nothing in time (``timed_out``), whether it sent its last record (``finished``),
    the pids of forks that tried to send (``forks``), and frames that were not JSON
    (``garbled``)."""

    returncode: int | None = None
    timed_out: bool = False
    finished: bool = False
    forks: list[int] = field(default_factory=list)
    garbled: str | None = None
    waited_s: float = 0.0


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


def _environment() -> dict[str, str]:
    """The child's environment: the user's, without what would change how Python starts."""
    return {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONSTARTUP", "PYTHONINSPECT", "PYTHONBREAKPOINT")
    }


def run_child(
    request: dict[str, Any],
    *,
    timeout_s: float,
    take: Callable[[dict[str, Any]], None],
    on_output: Callable[[bytes], None],
) -> ChildEnd:
    """Run the worker on ``request``; ``take`` each record the child itself sent, hand its
    output to ``on_output``; return how it ended."""
    import json

    read_end, write_end = os.pipe()
    try:
        process = subprocess.Popen(
            [
                sys.executable,
                "-I",
                "-m",
                "ppaux.observer.worker",
                str(write_end),
                json.dumps(request),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            pass_fds=(write_end,),
            start_new_session=True,
            cwd=request["cwd"],
            env=_environment(),
        )
    finally:
        os.close(write_end)
    end = ChildEnd()
    reader = FrameReader()
    assert process.stdout is not None
    streams = {read_end: "records", process.stdout.fileno(): "output"}
    selector = selectors.DefaultSelector()
    for fd, name in streams.items():
        os.set_blocking(fd, False)
        selector.register(fd, selectors.EVENT_READ, name)
    started = time.monotonic()
    deadline = started + START_ALLOWANCE_S + timeout_s
    open_streams = set(streams)
    try:
        while open_streams:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                end.timed_out = not end.finished
                break
            for key, _ in selector.select(timeout=min(remaining, 1.0)):
                fd = key.fd
                try:
                    data = os.read(fd, 1 << 16)
                except BlockingIOError:
                    continue
                if not data:
                    selector.unregister(fd)
                    open_streams.discard(fd)
                    continue
                if key.data == "output":
                    on_output(data)
                    continue
                try:
                    messages = reader.feed(data)
                except FrameError as exc:
                    end.garbled = str(exc)
                    selector.unregister(fd)
                    open_streams.discard(fd)
                    continue
                for message in messages:
                    if message.get("pid") != process.pid:
                        fork = message.get("pid")
                        if isinstance(fork, int) and fork not in end.forks:
                            end.forks.append(fork)
                        continue
                    if message.get("event") == "ready":
                        deadline = time.monotonic() + timeout_s + GRACE_S
                        continue
                    deadline = time.monotonic() + timeout_s + GRACE_S
                    if message.get("event") == "end":
                        end.finished = True
                        deadline = time.monotonic() + EXIT_ALLOWANCE_S
                    take(message)
            if end.finished and process.poll() is not None:
                _drain(process.stdout.fileno(), on_output)
                break
    finally:
        selector.close()
        if not end.timed_out:
            # Its pipes are closed or it sent its last record: it has a moment to exit.
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(min(deadline - time.monotonic(), EXIT_ALLOWANCE_S), 0.1))
        if process.poll() is None:
            _kill_group(process.pid)
            if not end.finished:
                end.timed_out = True
        end.returncode = process.wait()
        # Whatever the child started in its group (a fork, a subprocess) ends with it.
        _kill_group(process.pid)
        os.close(read_end)
        process.stdout.close()
        end.waited_s = time.monotonic() - started
    return end
