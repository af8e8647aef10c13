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
The server runs the CLI once on a missing file first, so that the modules the CLI imports
lazily are loaded before it forks; ``PPAUX_TEST_PRELOAD`` (comma-separated module names, such as
``torch``) imports more before forking, for commands that import them on every run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Run", "inspect_command", "run_cli_many", "run_measured"]

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
    if time.monotonic() - start > float(limit):
        os.kill(pid, 9)
        done, status, usage = os.wait4(pid, 0)
        timed_out = True
        break
    time.sleep(0.005)
print(json.dumps({"rc": os.waitstatus_to_exitcode(status), "seconds": time.monotonic() - start,
                  "max_rss_kb": usage.ru_maxrss, "timed_out": timed_out,
                  "cpu_s": usage.ru_utime + usage.ru_stime}))
"""


_SERVER = r"""
import json, os, sys, time, traceback
import ppaux_cli.app
limit, jobs = float(sys.argv[1]), json.loads(sys.argv[2])
# Modules the commands import lazily and that are slow to import (torch), imported once here.
import warnings
for module in filter(None, os.environ.get("PPAUX_TEST_PRELOAD", "").split(",")):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns on import where numpy is absent
        __import__(module)
# Warm up: the CLI imports its command modules lazily; import them once, here, output discarded.
saved = os.dup(1), os.dup(2)
null = os.open(os.devnull, os.O_WRONLY)
os.dup2(null, 1)
os.dup2(null, 2)
for fmt in ("json", "text", "github", "sarif", "junit", "gitlab", "markdown", "html"):
    sys.argv = ["ppaux", "inspect", os.devnull + "-missing.pt", "--format", fmt]
    try:
        ppaux_cli.app.main()
    except SystemExit:
        pass
sys.stdout.flush()
sys.stderr.flush()
os.dup2(saved[0], 1)
os.dup2(saved[1], 2)
results = []
for argv, workdir in jobs:
    out, err = os.path.join(workdir, ".stdout"), os.path.join(workdir, ".stderr")
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.chdir(workdir)
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
        os._exit(code)
    timed_out = False
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() - start > limit:
            os.kill(pid, 9)
            done, status, usage = os.wait4(pid, 0)
            timed_out = True
            break
        time.sleep(0.002)
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


def run_cli_many(
    jobs: list[tuple[list[str], Path]], limit_s: float, env: dict[str, str] | None = None
) -> list[Run]:
    """Run ``ppaux ARGS`` for each (ARGS, directory) job, one forked process each, in order."""
    for _, workdir in jobs:
        workdir.mkdir(parents=True, exist_ok=True)
    payload = json.dumps([(argv, str(workdir)) for argv, workdir in jobs])
    server = subprocess.run(
        [sys.executable, "-c", _SERVER, str(limit_s), payload],
        capture_output=True,
        text=True,
        env=env,
        timeout=limit_s * len(jobs) + 120,
    )
    if server.returncode != 0:
        raise RuntimeError(f"server failed: {server.stderr}")
    runs = []
    for (_, workdir), result in zip(jobs, json.loads(server.stdout), strict=True):
        out, err = workdir / ".stdout", workdir / ".stderr"
        runs.append(
            Run(
                result["rc"],
                result["seconds"],
                result["max_rss_kb"] / 1024,
                result["timed_out"],
                out.read_bytes(),
                err.read_bytes(),
                result.get("cpu_s", 0.0),
            )
        )
        out.unlink()
        err.unlink()
    return runs


def inspect_command(path: str | os.PathLike, fmt: str = "json") -> list[str]:
    """``python -m ppaux_cli inspect PATH --format FMT`` with this interpreter."""
    return [sys.executable, "-m", "ppaux_cli", "inspect", os.fspath(path), "--format", fmt]
