"""The check's child forked from a process that imported torch already: a hook of ppaux's own
test suite.

``PPAUX_TEST_CHILD_FORKS=<pid>:<fd>`` in the environment of the process ``<pid>`` names a
socket to a fork server of the test suite's (tests/child_forks.py), started by that process
with the options and the environment the child would start with, that imported torch and
ppaux's own modules once. Where it applies, :func:`forked_child` asks it for the child instead
of starting ``python -I -B -m ppaux.observer.worker``: the server forks twice, so that the
child becomes this process's own (this process is a subreaper while the check runs:
:mod:`.reaper`), in a session of its own, in the given directory with the given environment,
signal mask, umask and resource limits, with the given descriptors (its stdin and output pipes
among them), and it runs the worker as ``-m`` runs it. What it cannot give is a hash seed of
the child's own (all the server's children share the server's): the hook does not apply where
the environment sets ``PYTHONHASHSEED``, nor in any other process than ``<pid>`` (a CLI that a
test started), nor where the options or the environment (but ``PYTEST_CURRENT_TEST``) differ
from the server's in what torch's import could read. Checks meant for users never set it.
:func:`refusal` says why the last check of this process started its child itself.

Imports nothing beyond the standard library at import.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import IO, Any

__all__ = ["HOOK", "Forked", "forked_child", "refusal"]

#: The test suite's hook (see the module's docstring).
HOOK = "PPAUX_TEST_CHILD_FORKS"

_lock = threading.Lock()
#: Why the last :func:`forked_child` returned None (for the test suite's messages).
_refused: list[str] = ["the hook was not asked yet"]


def refusal() -> str:
    """Why the last :func:`forked_child` of this process returned None: where the hook does not
    apply, or what the server answered (its reason); "" where it forked the child."""
    return _refused[0]


class Forked:
    """The forked child, as much of ``subprocess.Popen`` as the check uses."""

    def __init__(self, pid: int, stdin: IO[bytes], stdout: IO[bytes]) -> None:
        self.pid = pid
        self.stdin: IO[bytes] | None = stdin
        self.stdout: IO[bytes] | None = stdout
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: as subprocess takes it
                self.returncode = 0
                return 0
            if pid == self.pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        import subprocess

        end = None if timeout is None else time.monotonic() + timeout
        delay = 0.0005
        while self.poll() is None:
            if end is not None and time.monotonic() >= end:
                raise subprocess.TimeoutExpired([sys.executable], timeout or 0.0)
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
        assert self.returncode is not None
        return self.returncode


def _server() -> int | str:
    """The socket to the fork server, where the hook applies to this process; else why not."""
    hook = os.environ.get(HOOK, "")
    owner, _, fd = hook.partition(":")
    if not (owner.isdigit() and fd.isdigit()):
        return f"{HOOK}={hook!r} names no server"
    if int(owner) != os.getpid():
        return f"{HOOK} is process {owner}'s, not this process's ({os.getpid()})"
    if not sys.platform.startswith("linux"):
        return f"no subreaper on {sys.platform}"
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        flag = ctypes.c_int(0)
        if libc.prctl(37, ctypes.byref(flag), 0, 0, 0) != 0 or not flag.value:
            # not a subreaper: the child would not become this process's
            return "this process is not a subreaper"
    except (OSError, AttributeError):
        return "prctl cannot be called"
    return int(fd)


def forked_child(
    argv: Sequence[str], cwd: str, env: Mapping[str, str], pass_fds: Sequence[int]
) -> Forked | None:
    """The child ``argv`` would start, forked by the test suite's server; None where the hook
    does not apply (the caller then starts it)."""
    server = _server()
    if isinstance(server, str) or "PYTHONHASHSEED" in env:
        _refused[0] = server if isinstance(server, str) else "PYTHONHASHSEED is set"
        return None
    import json
    import resource
    import signal
    import socket

    limits = {
        name: resource.getrlimit(getattr(resource, name))
        for name in dir(resource)
        if name.startswith("RLIMIT_")
    }
    mask = os.umask(0)
    os.umask(mask)
    message: dict[str, Any] = {
        "argv": list(argv),
        "cwd": cwd,
        "env": dict(env),
        "fds": [0, 1, *pass_fds],
        "owner": os.getpid(),
        "mask": sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])),
        "umask": mask,
        "limits": limits,
    }
    stdin_read, stdin_write = os.pipe()
    output_read, output_write = os.pipe()
    try:
        with _lock, socket.socket(fileno=os.dup(server)) as channel:
            data = json.dumps(message).encode("utf-8")
            fds = [stdin_read, output_write, *pass_fds]
            socket.send_fds(channel, [len(data).to_bytes(8, "big") + data], fds)
            answer = b""
            while not answer.endswith(b"\n"):
                chunk = channel.recv(4096)
                if not chunk:
                    break
                answer += chunk
        answered = json.loads(answer or b"{}")
        pid = answered.get("pid")
    finally:
        os.close(stdin_read)
        os.close(output_write)
    if not isinstance(pid, int):
        os.close(stdin_write)
        os.close(output_read)
        _refused[0] = str(answered.get("refused") or "the server answered no child")
        return None
    _refused[0] = ""
    return Forked(pid, os.fdopen(stdin_write, "wb"), os.fdopen(output_read, "rb"))
