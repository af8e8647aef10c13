"""Benchmark ppaux's start-up: ``ppaux --help`` and a one-dump ``inspect``, against the floors.

Run::

    python benchmarks/bench_startup.py [--runs 31] [--baseline-python OTHER/bin/python]

It times whole processes, interleaved run by run so that a noisy neighbour slows every command
alike, each with stdout and stderr to /dev/null, ``NO_COLOR=1`` and bytecode caches on (as an
installed package has them; a development shell's PYTHONDONTWRITEBYTECODE is dropped, and the
caches go to a temporary folder, not the repository):

* ``ppaux --help`` (the console script installed beside this Python)
* ``ppaux inspect ONE.pt --format json`` on a committed fixture dump
* ``python -m ppaux_cli rules`` (a command that runs, without reading any file)
* ``python -c pass`` and ``python -c "import typer"`` (the floors no CLI can go under)

With ``--baseline-python`` the first two also run, in the same rounds, under another
environment (another checkout or Typer release installed there), and the paired ratio of the
medians is printed. It prints a Markdown table (median, min and max wall seconds, median CPU
seconds of the child), then whether the targets hold: ``ppaux --help`` at most 0.10 s and the
one-dump ``inspect`` at most 0.12 s median wall time, on a quiet machine. A run is also checked
not to import torch or pydantic. The script imports nothing from ppaux.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ONE_DUMP = "fixtures/dumps/clean_output.pt"

#: Targets: median wall seconds on a quiet 2-core machine.
TARGET_HELP_SECONDS = 0.10
TARGET_INSPECT_SECONDS = 0.12


def _commands(python: str, baseline: str | None) -> dict[str, list[str]]:
    script = Path(python).with_name("ppaux")
    ppaux = [str(script)] if script.exists() else [python, "-m", "ppaux_cli"]
    commands = {
        "ppaux --help": [*ppaux, "--help"],
        f"ppaux inspect {ONE_DUMP} --format json": [
            *ppaux,
            "inspect",
            ONE_DUMP,
            "--format",
            "json",
        ],
        "python -m ppaux_cli rules": [python, "-m", "ppaux_cli", "rules"],
        "python -c pass (floor)": [python, "-c", "pass"],
        "python -c 'import typer' (floor)": [python, "-c", "import typer"],
    }
    if baseline is not None:
        commands["baseline: python -m ppaux_cli --help"] = [baseline, "-m", "ppaux_cli", "--help"]
        commands[f"baseline: python -m ppaux_cli inspect {ONE_DUMP} --format json"] = [
            baseline,
            "-m",
            "ppaux_cli",
            "inspect",
            ONE_DUMP,
            "--format",
            "json",
        ]
    return commands


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and child CPU seconds (user + system) of one run."""
    start = time.perf_counter()
    process = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=REPO
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {process.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def _heavy_imports(python: str, env: dict[str, str]) -> list[str]:
    """torch or pydantic, if a one-dump inspect imports them (it must import neither)."""
    # -X importtime lists every module imported, on stderr, without changing what is imported.
    result = subprocess.run(
        [python, "-X", "importtime", "-m", "ppaux_cli", "inspect", ONE_DUMP, "--format", "json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
    )
    names = {
        line.rsplit("|", 1)[-1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:")
    }
    return sorted(names & {"torch", "pydantic"})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=31, help="runs per command (default 31)")
    parser.add_argument(
        "--baseline-python",
        metavar="PYTHON",
        help="also time --help and inspect under this interpreter's ppaux",
    )
    args = parser.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["NO_COLOR"] = "1"
    env["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="ppaux-bench-pycache-")
    commands = _commands(sys.executable, args.baseline_python)
    for argv_ in commands.values():  # warm the file cache and the bytecode caches once
        _run(argv_, env)
    walls: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    load_before = os.getloadavg()[0]
    for _ in range(args.runs):
        for name, argv_ in commands.items():
            wall, cpu = _run(argv_, env)
            walls[name].append(wall)
            cpus[name].append(cpu)
    print(
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, {args.runs} runs each, load average before "
        f"{load_before:.2f}, after {os.getloadavg()[0]:.2f}\n"
    )
    print("| command | median s | min s | max s | median CPU s |")
    print("|---|---|---|---|---|")
    for name in commands:
        w, c = walls[name], cpus[name]
        print(
            f"| `{name}` | {statistics.median(w):.3f} | {min(w):.3f} | {max(w):.3f} "
            f"| {statistics.median(c):.3f} |"
        )
    help_median = statistics.median(walls["ppaux --help"])
    inspect_name = f"ppaux inspect {ONE_DUMP} --format json"
    inspect_median = statistics.median(walls[inspect_name])
    heavy = _heavy_imports(sys.executable, env)
    print()
    for label, median, target in (
        ("ppaux --help", help_median, TARGET_HELP_SECONDS),
        ("ppaux inspect ONE.pt --format json", inspect_median, TARGET_INSPECT_SECONDS),
    ):
        print(
            f"{label}: {median:.3f} s median; target <= {target} s: "
            f"{'met' if median <= target else 'NOT met'}"
        )
    if args.baseline_python:
        for mine, theirs in (
            ("ppaux --help", "baseline: python -m ppaux_cli --help"),
            (inspect_name, f"baseline: python -m ppaux_cli {inspect_name[6:]}"),
        ):
            pairs = [a / b for a, b in zip(walls[mine], walls[theirs], strict=True)]
            print(f"{mine} / baseline: {statistics.median(pairs):.2f}x (median of paired ratios)")
    print(f"one-dump inspect imports torch or pydantic: {', '.join(heavy) or 'no'}")
    held = help_median <= TARGET_HELP_SECONDS and inspect_median <= TARGET_INSPECT_SECONDS
    return 0 if held and not heavy else 1


if __name__ == "__main__":
    sys.exit(main())
