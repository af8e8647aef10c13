"""Run ppaux in fresh processes and measure each: exit status, wall time, CPU time and peak
memory.

:func:`run_measured` starts a command from a small launcher process (``os.posix_spawn``) that
waits for it with ``os.wait4``, so the kernel's peak resident set size is the command's own
(measured from the test process it would not be: a child's peak starts at its parent's size).

:func:`run_cli_many` does the same for many ``ppaux`` command lines at a tenth of the cost: a
server process imports the CLI once, then forks one child per command line; the child changes to
its own directory, points stdout and stderr at files and runs exactly what ``python -m
ppaux_cli`` runs (``ppaux_cli.app.main``), an uncaught exception printing its traceback as the
interpreter would. Each child is a separate process that dies with its exit code or signal.
The server runs each command that reads a dump once on a missing file first (inspect in every
format), so that the modules the CLI imports lazily are loaded before it forks;
``PPAUX_TEST_PRELOAD`` (comma-separated module names, such as ``torch``) imports more before
forking, for commands that import them on every run.

:func:`run_cli_formats` runs one command line in several ``--format`` values from one forked
child: the child computes the command's reading step once (the reader's result is shared, as a
cache would share it) and runs the whole command line once per format after that, so that a
corpus read in eight formats costs one read and eight renderings.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Run", "inspect_command", "run_cli_formats", "run_cli_many", "run_measured"]

_LAUNCHER = r"""
import json, os, resource, sys, time
limit, memory, out, err, *cmd = sys.argv[1:]
if int(memory):
    # Inherited by the command: a runaway read fails with MemoryError instead of eating the host.
    resource.setrlimit(resource.RLIMIT_AS, (int(memory) << 20, int(memory) << 20))
start = time.monotonic()
with open(out, "wb") as o, open(err, "wb") as e:
    pid = os.posix_spawn(cmd[0], cmd, os.environ, file_actions=[
        (os.POSIX_SPAWN_DUP2, o.fileno(), 1), (os.POSIX_SPAWN_DUP2, e.fileno(), 2)])
timed_out = False
while True:
    done, status, usage = os.wait4(pid, os.WNOHANG)
    if done:
        break
    waited = time.monotonic() - start
    if waited > float(limit):
        os.kill(pid, 9)
        done, status, usage = os.wait4(pid, 0)
        timed_out = True
        break
    time.sleep(min(0.05, max(0.002, waited / 20)))  # as the server below waits
print(json.dumps({"rc": os.waitstatus_to_exitcode(status), "seconds": time.monotonic() - start,
                  "max_rss_kb": usage.ru_maxrss, "timed_out": timed_out,
                  "cpu_s": usage.ru_utime + usage.ru_stime}))
"""


_SERVER = r"""
import json, os, sys, time, traceback
import ppaux_cli.app
limit, jobs, shared = float(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
# Modules the commands import lazily and that are slow to import (torch), imported once here.
import warnings
for module in filter(None, os.environ.get("PPAUX_TEST_PRELOAD", "").split(",")):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns on import where numpy is absent
        __import__(module)
# Warm up: the CLI imports its command modules lazily; import them once, here, output discarded
# (every format's renderer, and the commands that read a dump besides inspect).
saved = os.dup(1), os.dup(2)
null = os.open(os.devnull, os.O_WRONLY)
os.dup2(null, 1)
os.dup2(null, 2)
missing = os.devnull + "-missing.pt"
warm_up = [["inspect", missing, "--format", fmt]
           for fmt in ("json", "text", "github", "sarif", "junit", "gitlab", "markdown", "html")]
warm_up += [["replay", missing], ["diff", missing, missing], ["tensorize", missing, "-o", missing]]
for argv in warm_up:
    sys.argv = ["ppaux", *argv]
    try:
        ppaux_cli.app.main()
    except SystemExit:
        pass
sys.stdout.flush()
sys.stderr.flush()
os.dup2(saved[0], 1)
os.dup2(saved[1], 2)


def run_main(argv, out, err):
    # What 'python -m ppaux_cli ARGV' does, stdout and stderr into the files OUT and ERR; the
    # exit code it would end with.
    for fd, name in ((1, out), (2, err)):
        target = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, fd)
        os.close(target)
    sys.argv = ["ppaux", *argv]
    code = 0
    try:
        ppaux_cli.app.main()
    except SystemExit as exc:
        if isinstance(exc.code, int) or exc.code is None:
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        traceback.print_exc()
        code = 120
    return code


def share_first_result(module_name, name):
    # MODULE.NAME computes its result once in this process: a later call with the same
    # arguments (a progress callback aside) gets the same object back.
    import importlib
    module = importlib.import_module(module_name)
    original, memo = getattr(module, name), {}
    def shared(*args, **kwargs):
        key = repr((args, sorted((k, v) for k, v in kwargs.items() if k != "progress")))
        if key not in memo:
            memo[key] = original(*args, **kwargs)
        return memo[key]
    setattr(module, name, shared)


results = []
for argv, workdir, formats in jobs:
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.chdir(workdir)
        if formats is None:
            os._exit(run_main(argv, ".stdout", ".stderr"))
        import signal
        share_first_result(*shared.split(":"))
        for fmt in formats:
            began = time.monotonic()
            signal.alarm(int(limit) + 1)  # a format that hangs ends the process (SIGALRM)
            code = run_main([*argv, "--format", fmt], ".stdout." + fmt, ".stderr." + fmt)
            signal.alarm(0)
            line = json.dumps({"format": fmt, "rc": code, "seconds": time.monotonic() - began})
            fd = os.open(".formats", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.write(fd, (line + "\n").encode())
            os.close(fd)
        os._exit(0)
    timed_out = False
    span = limit * (1 if formats is None else len(formats))
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        waited = time.monotonic() - start
        if waited > span:
            os.kill(pid, 9)
            done, status, usage = os.wait4(pid, 0)
            timed_out = True
            break
        # Looks again after a twentieth of the time waited (2 ms to 50 ms): a quick command's
        # end is seen within 2 ms, and a long one costs this process 20 looks a second.
        time.sleep(min(0.05, max(0.002, waited / 20)))
    results.append({"rc": os.waitstatus_to_exitcode(status), "seconds": time.monotonic() - start,
                    "max_rss_kb": usage.ru_maxrss, "timed_out": timed_out,
                    "cpu_s": usage.ru_utime + usage.ru_stime})
print(json.dumps(results))
"""


@dataclass
class Run:
    """What one measured command did."""

    rc: int
    seconds: float
    rss_mb: float
    timed_out: bool
    stdout: bytes
    stderr: bytes
    #: CPU time (user and system) of the command alone, from ``os.wait4``.
    cpu_s: float = 0.0


def run_measured(
    cmd: list[str],
    cwd: Path,
    limit_s: float,
    env: dict[str, str] | None = None,
    *,
    address_space_mb: int = 0,
) -> Run:
    """Run ``cmd`` in ``cwd`` (killed after ``limit_s`` seconds); output goes through files.

    ``address_space_mb`` caps the command's virtual memory (RLIMIT_AS), for inputs that could
    make it allocate without end.
    """
    out, err = cwd / ".stdout", cwd / ".stderr"
    cwd.mkdir(parents=True, exist_ok=True)
    launcher = subprocess.run(
        [
            sys.executable,
            "-c",
            _LAUNCHER,
            str(limit_s),
            str(address_space_mb),
            str(out),
            str(err),
            *cmd,
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=limit_s + 60,
    )
    if launcher.returncode != 0:
        raise RuntimeError(f"launcher failed: {launcher.stderr}")
    result = json.loads(launcher.stdout)
    run = Run(
        result["rc"],
        result["seconds"],
        result["max_rss_kb"] / 1024,
        result["timed_out"],
        out.read_bytes(),
        err.read_bytes(),
        result.get("cpu_s", 0.0),
    )
    out.unlink()
    err.unlink()
    return run


def _serve(
    jobs: list[tuple[list[str], Path, list[str] | None]],
    limit_s: float,
    env: dict[str, str] | None,
    shared: str = "",
) -> list[dict]:
    for _, workdir, _ in jobs:
        workdir.mkdir(parents=True, exist_ok=True)
    payload = json.dumps([(argv, str(workdir), formats) for argv, workdir, formats in jobs])
    count = sum(len(formats or [None]) for _, _, formats in jobs)
    server = subprocess.run(
        [sys.executable, "-c", _SERVER, str(limit_s), payload, shared],
        capture_output=True,
        text=True,
        env=env,
        timeout=limit_s * count + 120,
    )
    if server.returncode != 0:
        raise RuntimeError(f"server failed: {server.stderr}")
    return json.loads(server.stdout)


def _take(path: Path) -> bytes:
    data = path.read_bytes() if path.exists() else b""
    path.unlink(missing_ok=True)
    return data


def run_cli_many(
    jobs: list[tuple[list[str], Path]], limit_s: float, env: dict[str, str] | None = None
) -> list[Run]:
    """Run ``ppaux ARGS`` for each (ARGS, directory) job, one forked process each, in order."""
    results = _serve([(argv, workdir, None) for argv, workdir in jobs], limit_s, env)
    runs = []
    for (_, workdir), result in zip(jobs, results, strict=True):
        runs.append(
            Run(
                result["rc"],
                result["seconds"],
                result["max_rss_kb"] / 1024,
                result["timed_out"],
                (workdir / ".stdout").read_bytes(),
                (workdir / ".stderr").read_bytes(),
                result.get("cpu_s", 0.0),
            )
        )
        (workdir / ".stdout").unlink()
        (workdir / ".stderr").unlink()
    return runs


def run_cli_formats(
    jobs: list[tuple[list[str], Path]],
    formats: list[str],
    limit_s: float,
    env: dict[str, str] | None = None,
    shared: str = "ppaux.dump:inspect_paths",
) -> list[dict[str, Run]]:
    """Run ``ppaux ARGS --format FMT`` for each (ARGS, directory) job and each format, in order,
    all formats of a job in one forked process in which the function ``shared`` (``module:name``,
    the command's reading step) computes its result once: the input is read once, and every
    format is the command's whole path after that (options, gate, renderer, writing, exit code).

    Each format's :class:`Run` has its own exit code, output and wall time; its peak memory is
    the process's over all its formats (never below the format's own), its CPU time the
    process's; a process that dies or runs past ``limit_s`` in a format marks that format and
    those after it timed out (or failed with the process's exit code).
    """
    results = _serve([(argv, workdir, formats) for argv, workdir in jobs], limit_s, env, shared)
    found = []
    for (_, workdir), result in zip(jobs, results, strict=True):
        lines = _take(workdir / ".formats").decode().splitlines()
        done = {line["format"]: line for line in map(json.loads, lines)}
        died = result["timed_out"] or result["rc"] == -14  # SIGALRM: a format past the limit
        runs = {}
        for fmt in formats:
            line = done.get(fmt)
            runs[fmt] = Run(
                line["rc"] if line else result["rc"],
                line["seconds"] if line else result["seconds"],
                result["max_rss_kb"] / 1024,
                line is None and died,
                _take(workdir / f".stdout.{fmt}"),
                _take(workdir / f".stderr.{fmt}"),
                result.get("cpu_s", 0.0),
            )
        found.append(runs)
    return found


def inspect_command(path: str | os.PathLike, fmt: str = "json") -> list[str]:
    """``python -m ppaux_cli inspect PATH --format FMT`` with this interpreter."""
    return [sys.executable, "-m", "ppaux_cli", "inspect", os.fspath(path), "--format", fmt]
