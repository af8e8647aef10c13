"""The process that :mod:`runtime_zygote` starts for one prepared sglang release.

``python runtime_zygote_server.py SOCKET`` with the runtime's environment: it imports torch and
the release's pipeline-parallel runtime (what every process of the runtime tier imports first,
some 10 s of CPU), prints one ``ready`` line (JSON: its pid, the CPU seconds the imports took,
what they printed) and then serves requests on the Unix socket ``SOCKET`` until its standard
input closes (the test process that started it ended or let it go).

A request (one JSON line: argv as given to ``python``, environment, working directory, and the
files for standard input, output and error) is handled in a forked copy of this process, which
forks again the process that runs it, reports that process's pid, waits for it and reports its
exit code and CPU time. The runner is what ``python ARGV`` would be after those imports: its own
``sys.argv``, ``sys.path[0]``, environment, working directory, ``__main__`` and standard
streams, whatever the imports printed on them first, Python's exit status rules (``SystemExit``,
an uncaught exception's traceback and 1), then the interpreter's shutdown (non-daemon threads
joined, ``atexit`` functions run, streams flushed).

A request may instead come from the release's *interpreter* (:mod:`runtime_zygote`'s
``interpreter``): a Python of the test virtual environment that, asked to run ppaux's own receiver
(``python -I [-W ...] -c BOOT ...``), hands its command line, environment, working directory and
open file descriptors (``SCM_RIGHTS``) to this process and waits for the runner, passing on the
signals it is sent and ending as the runner ended. Its ``-I`` and ``-W`` options are applied in
the runner (the isolated path: neither the script's folder nor ``PYTHONPATH``). A runner whose
requester went away (killed) is killed.

Only the standard library and what the runtime's processes import anyway are imported here: the
test suite's own modules are not, so that a runner imports them afresh, as ``python`` would.
"""

from __future__ import annotations

import fcntl
import json
import os
import resource
import select
import signal
import socket
import sys
import tempfile


def _import_runtime() -> dict[str, str]:
    """Import torch and the release's runtime; what they wrote to stdout and stderr."""
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    captured = {}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            import sglang.srt.distributed.parallel_state
            import sglang.srt.managers.scheduler_pp_mixin  # noqa: F401
            import torch  # noqa: F401
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            for fd, copy in saved.items():
                os.dup2(copy, fd)
                os.close(copy)
        for name, file in (("stdout", out), ("stderr", err)):
            file.seek(0)
            captured[name] = file.read().decode("utf-8", "replace")
    return captured


def _exit_code(exc: SystemExit) -> int:
    """The exit status ``python`` gives ``raise SystemExit(code)``."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    print(exc.code, file=sys.stderr)
    return 1


#: ``sys.path`` after its first entry (the script's folder), less the zygote's ``PYTHONPATH``.
_BASE_PATH: list[str] = []
#: The zygote's own ``PYTHONPATH`` (a runner's environment is its request's).
_PYTHONPATH = os.environ.get("PYTHONPATH", "")


def _options(argv: list[str]) -> tuple[list[str], bool]:
    """Apply the interpreter options ahead of ``-c``/``-m``/the script (``-I``, ``-W``); the rest
    of ``argv`` and whether the interpreter is isolated."""
    import warnings

    isolated = False
    given: list[str] = []
    while argv and argv[0].startswith("-") and argv[0] not in ("-c", "-m"):
        if argv[0] == "-I":
            isolated = True
            argv = argv[1:]
        elif argv[0] == "-W" and len(argv) > 1:
            given.append(argv[1])
            argv = argv[2:]
        else:
            raise SystemExit(f"runtime_zygote_server: unsupported interpreter option {argv[0]}")
    if given:
        sys.warnoptions[:] = given
        warnings._processoptions(given)  # type: ignore[attr-defined]
    return argv, isolated


def _path(env: dict[str, str], isolated: bool) -> None:
    """``sys.path`` after its first entry, as the request's interpreter has it: where it is
    isolated or its ``PYTHONPATH`` is not the zygote's, the zygote's own entries without the
    zygote's ``PYTHONPATH`` and with the request's (none where isolated)."""
    if not isolated and env.get("PYTHONPATH", "") == _PYTHONPATH:
        return
    given = [] if isolated else [e for e in env.get("PYTHONPATH", "").split(os.pathsep) if e]
    sys.path[1:] = [*given, *_BASE_PATH]


def _execute(argv: list[str], cwd: str, env: dict[str, str]) -> int:
    """Run ``python ARGV``'s program in this process (already set up); its exit status."""
    import runpy
    import types

    try:
        argv, isolated = _options(argv)
        _path(env, isolated)
        if argv[0] == "-c":
            sys.argv = ["-c", *argv[2:]]
            sys.path[0] = ""
            if isolated:
                del sys.path[0]
            main = types.ModuleType("__main__")
            main.__dict__["__builtins__"] = __builtins__
            sys.modules["__main__"] = main
            exec(compile(argv[1], "<string>", "exec"), main.__dict__)
        elif argv[0] == "-m":
            sys.argv = [argv[1], *argv[2:]]
            sys.path[0] = cwd
            if isolated:
                del sys.path[0]
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            script = os.path.abspath(argv[0])
            sys.argv = list(argv)
            sys.path[0] = os.path.dirname(script)
            if isolated:
                del sys.path[0]
            runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        return _exit_code(exc)
    except BaseException:
        import traceback

        traceback.print_exc()
        return 1
    return 0


def _shutdown() -> None:
    """What the interpreter does at its end: join the non-daemon threads, run ``atexit``."""
    import atexit
    import threading

    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        shutdown()
    atexit._run_exitfuncs()


def _descriptors(received: list[int], numbers: list[int]) -> None:
    """Give the runner the requester's descriptors (``received``) at their numbers there."""
    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD, 256) for fd in received]  # above every number
    for fd in received:
        os.close(fd)
    for fd, number in zip(moved, numbers, strict=True):
        os.dup2(fd, number)
        os.close(fd)


def _run(request: dict, imported: dict[str, str], received: list[int]) -> None:
    """The runner: set up as ``python`` would be, run, and end with the exit status."""
    code = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        if "fds" in request:
            _descriptors(received, request["fds"])
        else:
            for fd, (path, flags) in enumerate(
                (
                    (request["stdin"], os.O_RDONLY),
                    (request["stdout"], os.O_WRONLY | os.O_TRUNC),
                    (request["stderr"], os.O_WRONLY | os.O_TRUNC),
                )
            ):
                opened = os.open(path, flags)
                os.dup2(opened, fd)
                os.close(opened)
        if request.get("executable"):
            sys.executable = request["executable"]
        sys.stdout.write(imported["stdout"])
        sys.stderr.write(imported["stderr"])
        code = _execute(request["argv"], request["cwd"], request["env"])
        _shutdown()
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _serve(connection: socket.socket, imported: dict[str, str]) -> None:
    """The handler of one request: fork its runner, report its pid, wait, report its end (the
    runner is killed first if the requester went away)."""
    _, received, _, _ = socket.recv_fds(connection, 1, 64)  # a marker byte, with descriptors
    stream = connection.makefile("rwb")
    request = json.loads(stream.readline())
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        stream.close()
        connection.close()
        _run(request, imported, received)
    for fd in received:
        os.close(fd)
    stream.write(json.dumps({"pid": pid}).encode() + b"\n")
    stream.flush()
    ended = os.pidfd_open(pid)
    while ended not in select.select([ended, connection], [], [])[0]:
        if not connection.recv(1):  # the requester is gone
            os.kill(pid, signal.SIGKILL)
            break
    os.close(ended)
    _, status, usage = os.wait4(pid, 0)
    end = {
        "returncode": os.waitstatus_to_exitcode(status),
        "cpu_s": usage.ru_utime + usage.ru_stime,
    }
    stream.write(json.dumps(end).encode() + b"\n")
    stream.flush()


def main(path: str) -> None:
    own = [e for e in _PYTHONPATH.split(os.pathsep) if e]
    _BASE_PATH[:] = [e for e in sys.path[1:] if e not in own]
    imported = _import_runtime()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    ready = {"pid": os.getpid(), "cpu_s": usage.ru_utime + usage.ru_stime, **imported}
    sys.stdout.write(json.dumps(ready) + "\n")
    sys.stdout.flush()
    handlers: set[int] = set()
    while True:
        readable, _, _ = select.select([listener, sys.stdin], [], [], 1.0)
        for pid in list(handlers):  # reaped here, so that their CPU time is this process's
            if os.waitpid(pid, os.WNOHANG)[0]:
                handlers.discard(pid)
        if sys.stdin in readable and not os.read(sys.stdin.fileno(), 1):
            break
        if listener in readable:
            connection, _ = listener.accept()
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                listener.close()
                code = 0
                try:
                    _serve(connection, imported)
                except BaseException:
                    code = 1
                finally:
                    os._exit(code)
            connection.close()
            handlers.add(pid)
    listener.close()
    for pid in handlers:
        os.waitpid(pid, 0)


if __name__ == "__main__":
    main(sys.argv[1])
