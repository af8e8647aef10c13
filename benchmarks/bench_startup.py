"""Benchmark the start-up of ``ppaux --help`` against the interpreter's own start-up.

Run::

    python benchmarks/bench_startup.py [--runs 31]

It times whole processes, interleaved run by run so that a noisy neighbour slows every command
alike, each with stdout and stderr to /dev/null and ``NO_COLOR=1``:

* ``ppaux --help`` (the console script installed beside this Python)
* ``python -m ppaux_cli --help``
* ``python -m ppaux_cli rules`` (a command that runs, without reading any file)
* ``python -c pass`` and ``python -c "import typer"`` (the floors no CLI can go under)

and prints a Markdown table (median, min and max wall seconds, median CPU seconds of the child),
then whether the target holds: ``ppaux --help`` at most 0.15 s median wall time. A run is also
checked not to import torch. The script imports nothing from ppaux.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

#: Target from the project's issue: ``ppaux --help`` median wall time, seconds.
TARGET_HELP_SECONDS = 0.15


def _commands() -> dict[str, list[str]]:
    python = sys.executable
    script = Path(python).with_name("ppaux")
    help_command = [str(script), "--help"] if script.exists() else None
    if help_command is None:
        found = shutil.which("ppaux")
        help_command = [found, "--help"] if found else [python, "-m", "ppaux_cli", "--help"]
    return {
        "ppaux --help": help_command,
        "python -m ppaux_cli --help": [python, "-m", "ppaux_cli", "--help"],
        "python -m ppaux_cli rules": [python, "-m", "ppaux_cli", "rules"],
        "python -c pass (floor)": [python, "-c", "pass"],
        "python -c 'import typer' (floor)": [python, "-c", "import typer"],
    }


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and child CPU seconds (user + system) of one run."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env=env, cwd=REPO)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {process.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def _imports_torch(env: dict[str, str]) -> bool:
    # -X importtime lists every module imported, on stderr, without changing what is imported.
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "ppaux_cli", "--help"],
                            capture_output=True, text=True, env=env, cwd=REPO)
    names = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines()
             if line.startswith("import time:")}
    return "torch" in names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=31, help="runs per command (default 31)")
    args = parser.parse_args(argv)
    env = {**os.environ, "NO_COLOR": "1"}
    commands = _commands()
    for argv_ in commands.values():  # warm the file cache and the bytecode caches once
        _run(argv_, env)
    walls: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(args.runs):
        for name, argv_ in commands.items():
            wall, cpu = _run(argv_, env)
            walls[name].append(wall)
            cpus[name].append(cpu)
    print(f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs, "
          f"{args.runs} runs each, load average before: {os.getloadavg()[0]:.2f}\n")
    print("| command | median s | min s | max s | median CPU s |")
    print("|---|---|---|---|---|")
    for name in commands:
        w, c = walls[name], cpus[name]
        print(f"| `{name}` | {statistics.median(w):.3f} | {min(w):.3f} | {max(w):.3f} "
              f"| {statistics.median(c):.3f} |")
    help_median = statistics.median(walls["ppaux --help"])
    floor = statistics.median(walls["python -c pass (floor)"])
    torch = _imports_torch(env)
    print()
    print(f"ppaux --help: {help_median:.3f} s median, {help_median / floor:.1f}x the bare "
          f"interpreter; target <= {TARGET_HELP_SECONDS} s: "
          f"{'met' if help_median <= TARGET_HELP_SECONDS else 'NOT met'}")
    print(f"ppaux --help imports torch: {'yes (wrong)' if torch else 'no'}")
    return 0 if help_median <= TARGET_HELP_SECONDS and not torch else 1


if __name__ == "__main__":
    sys.exit(main())
