"""The test suite's fork server for the check's child (ppaux.observer.forked): one process per
test process that starts as the child would (``python -I -B`` with the check's warning options,
in the child's environment), imports torch and the ppaux modules the worker imports before the
target, and then, for each request on its socket, forks a child that runs
``ppaux.observer.worker`` as ``-m`` runs it, after that import: the check's child without the
~2 s of CPU of its torch import. It forks twice, so that the child becomes the asking process's
own (a subreaper while the check runs); the child takes the asking process's session rules
(a session of its own), directory, environment, signal mask, umask, resource limits and
descriptors. A request whose options or environment differ from the server's (but for
``CHANGING``) is refused: the check then starts its child itself. :class:`ChildForks` starts
it and sets the hook.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys

SERVER = r"""
import array, json, os, resource, runpy, signal, socket, sys, warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
import torch  # noqa: F401
import ppaux.errors, ppaux.suggestions, ppaux.replay
import ppaux.observer.apart, ppaux.observer.check, ppaux.observer.digests
import ppaux.observer.drive, ppaux.observer.endings, ppaux.observer.framing
import ppaux.observer.fresh, ppaux.observer.inhand, ppaux.observer.interpreter
import ppaux.observer.lines, ppaux.observer.parts, ppaux.observer.requests
import ppaux.observer.runner, ppaux.observer.target, ppaux.observer.torch_threads

# What may differ from the server's environment: pytest's name of the test, and the display
# settings of the CLI tests (tests/helpers.py's ENV), which neither torch nor the modules
# imported here read at import; the child's os.environ is the request's whole.
CHANGING = ("PYTEST_CURRENT_TEST", "NO_COLOR", "COLUMNS")
WORKER = "ppaux.observer.worker"
channel = socket.socket(fileno=int(sys.argv[1]))
options = sys.orig_argv[1 : sys.orig_argv.index("-c")]
expected = [sys.executable, *options, "-m", WORKER]
own = {k: v for k, v in os.environ.items() if k not in CHANGING}


def refusal(request, env, fds):
    # Why the request cannot be forked from here (None: it can).
    if request["argv"] != expected:
        return f"the child's command {request['argv']} is not the server's {expected}"
    if env != own:
        keys = sorted(k for k in {*env, *own} if env.get(k) != own.get(k))
        shown = ", ".join(f"{k}: {own.get(k)!r:.60} here, {env.get(k)!r:.60} asked" for k in keys)
        return f"the child's environment differs from the server's in {shown}"
    if len(fds) != len(request["fds"]):
        return f"{len(fds)} descriptors came for the {len(request['fds'])} named"
    return None


def receive():
    head, fds, _, _ = socket.recv_fds(channel, 8, 64)
    if len(head) < 8:
        return None, []
    size = int.from_bytes(head, "big")
    data = b""
    while len(data) < size:
        chunk = channel.recv(size - len(data))
        if not chunk:
            break
        data += chunk
    return json.loads(data), fds


def child(request, fds):
    os.setsid()
    import time

    waited = time.monotonic() + 60
    while os.getppid() != request["owner"]:  # until the intermediate process is gone
        if time.monotonic() > waited:
            os._exit(111)
        time.sleep(0.001)
    targets = request["fds"]
    top = max([*targets, *fds]) + 1
    import fcntl

    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD, top) for fd in fds]
    for fd, target in zip(moved, targets):
        os.dup2(fd, target, inheritable=True)
    os.dup2(moved[1], 2, inheritable=True)
    keep = sorted({0, 1, 2, *targets})
    start = 0
    for fd in [*keep, 1 << 20]:
        if fd > start:
            os.closerange(start, fd)
        start = fd + 1
    os.chdir(request["cwd"])
    os.umask(request["umask"])
    for name, (soft, hard) in request["limits"].items():
        try:
            resource.setrlimit(getattr(resource, name), (soft, hard))
        except (ValueError, OSError):
            pass
    os.environ.clear()
    os.environ.update(request["env"])
    signal.pthread_sigmask(signal.SIG_SETMASK, request["mask"])
    sys.argv[:] = ["-m"]  # as -m starts; runpy puts the module's path in its place
    status = 0
    try:
        runpy._run_module_as_main(WORKER)
    except SystemExit as exc:
        if exc.code is None:
            status = 0
        elif isinstance(exc.code, int):
            status = exc.code
        else:
            print(exc.code, file=sys.stderr)
            status = 1
    except BaseException:
        sys.excepthook(*sys.exc_info())
        status = 1
    import atexit, threading

    threading._shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(status & 0xFF)


while True:
    request, fds = receive()
    if request is None:
        break
    env = {k: v for k, v in request["env"].items() if k not in CHANGING}
    pid = None
    refused = refusal(request, env, fds)
    if refused is None:
        read_end, write_end = os.pipe()
        middle = os.fork()
        if middle == 0:
            os.close(read_end)
            grandchild = os.fork()
            if grandchild == 0:
                os.close(write_end)
                channel.close()
                child(request, fds)
            os.write(write_end, str(grandchild).encode())
            os._exit(0)
        os.close(write_end)
        os.waitpid(middle, 0)
        pid = int(os.read(read_end, 64) or b"0") or None
        os.close(read_end)
    for fd in fds:
        os.close(fd)
    channel.sendall(json.dumps({"pid": pid, "refused": refused}).encode() + b"\n")
"""


class ChildForks:
    """One :data:`SERVER` process, its socket named by the hook in this process's environment
    (as ``ppaux.observer.forked`` reads it)."""

    def __init__(self) -> None:
        from ppaux.observer import child, forked, interpreter
        from ppaux.replay import warning_options

        ours, theirs = socket.socketpair()
        self.socket = ours
        self.hook = f"{os.getpid()}:{ours.fileno()}"
        os.environ[forked.HOOK] = self.hook
        isolation, env, _ = interpreter.started(child._environment())
        assert isolation == ["-I"], "the fork server starts as the child does: isolated"
        options = [*isolation, "-B", *warning_options()]
        self.process = subprocess.Popen(
            [sys.executable, *options, "-c", SERVER, str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
            env=env,
        )
        theirs.close()

    def close(self) -> None:
        from ppaux.observer import forked

        if os.environ.get(forked.HOOK) == self.hook:
            del os.environ[forked.HOOK]
        self.socket.close()
        self.process.wait(timeout=60)
