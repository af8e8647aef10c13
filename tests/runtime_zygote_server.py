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

Only the standard library and what the runtime's processes import anyway are imported here: the
test suite's own modules are not, so that a runner imports them afresh, as ``python`` would.
"""

from __future__ import annotations

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


def _execute(argv: list[str], cwd: str) -> int:
    """Run ``python ARGV``'s program in this process (already set up); its exit status."""
    import runpy
    import types

    try:
        if argv[0] == "-c":
            sys.argv = ["-c", *argv[2:]]
            sys.path[0] = ""
            main = types.ModuleType("__main__")
            main.__dict__["__builtins__"] = __builtins__
            sys.modules["__main__"] = main
            exec(compile(argv[1], "<string>", "exec"), main.__dict__)
        elif argv[0] == "-m":
            sys.argv = [argv[1], *argv[2:]]
            sys.path[0] = cwd
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            script = os.path.abspath(argv[0])
            sys.argv = list(argv)
            sys.path[0] = os.path.dirname(script)
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


def _run(request: dict, imported: dict[str, str]) -> None:
    """The runner: set up as ``python`` would be, run, and end with the exit status."""
    code = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
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
        sys.stdout.write(imported["stdout"])
        sys.stderr.write(imported["stderr"])
        code = _execute(request["argv"], request["cwd"])
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
    """The handler of one request: fork its runner, report its pid, wait, report its end."""
    stream = connection.makefile("rwb")
    request = json.loads(stream.readline())
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        stream.close()
        connection.close()
        _run(request, imported)
    stream.write(json.dumps({"pid": pid}).encode() + b"\n")
    stream.flush()
    _, status, usage = os.wait4(pid, 0)
    end = {
        "returncode": os.waitstatus_to_exitcode(status),
        "cpu_s": usage.ru_utime + usage.ru_stime,
    }
    stream.write(json.dumps(end).encode() + b"\n")
    stream.flush()


def main(path: str) -> None:
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
