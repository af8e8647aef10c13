"""Run a command in a fresh process and measure it: exit status, wall time and peak memory.

The command is started by a small launcher process (``os.posix_spawn``) that waits for it with
``os.wait4``: the kernel's peak resident set size is then the command's own. Measuring from the
test process directly would not do: a child's peak starts at its parent's size when it forks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Run", "run_measured", "inspect_command"]

_LAUNCHER = r"""
import json, os, sys, time
limit, out, err, *cmd = sys.argv[1:]
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
                  "max_rss_kb": usage.ru_maxrss, "timed_out": timed_out}))
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


def run_measured(cmd: list[str], cwd: Path, limit_s: float, env: dict[str, str] | None = None) -> Run:
    """Run ``cmd`` in ``cwd`` (killed after ``limit_s`` seconds); output goes through files."""
    out, err = cwd / ".stdout", cwd / ".stderr"
    cwd.mkdir(parents=True, exist_ok=True)
    launcher = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, str(limit_s), str(out), str(err), *cmd],
        cwd=cwd, capture_output=True, text=True, env=env, timeout=limit_s + 60,
    )
    if launcher.returncode != 0:
        raise RuntimeError(f"launcher failed: {launcher.stderr}")
    result = json.loads(launcher.stdout)
    run = Run(result["rc"], result["seconds"], result["max_rss_kb"] / 1024, result["timed_out"],
              out.read_bytes(), err.read_bytes())
    out.unlink()
    err.unlink()
    return run


def inspect_command(path: str | os.PathLike, fmt: str = "json") -> list[str]:
    """``python -m ppaux_cli inspect PATH --format FMT`` with this interpreter."""
    return [sys.executable, "-m", "ppaux_cli", "inspect", os.fspath(path), "--format", fmt]
