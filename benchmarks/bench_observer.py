"""Benchmark ``ppaux check-observer``: a small observer's default check, and with sglang's wire.

Run::

    python benchmarks/bench_observer.py [--runs 11] [--runtime ~/.cache/ppaux/runtime/0.5.23]

It times whole processes (what a developer or a CI job waits for), interleaved run by run so that
a noisy neighbour slows every command alike, stdout and stderr to /dev/null, ``NO_COLOR=1``:

* ``ppaux check-observer fixtures/observers/entropy_good.py:EntropyObserver --format json``: the
  default check (emulated wire, batch sizes 1 and 4, 3 steps: 6 outputs down both paths);
* the same with ``--transport none`` and ``--transport torch-distributed`` (a second process
  joined over gloo);
* ``python -c "import torch"``: the floor every check pays;
* with ``--runtime DIR`` (a runtime prepared by the tests' runtime tier, see
  docs/sglang-runtime.md), the default check and ``--transport sglang`` under that runtime's
  ``PYTHONPATH``: sglang's own wire, ``SamplingBatchInfo`` and result processing.

It prints a Markdown table (median, min and max wall seconds, median CPU seconds of the child
and its children) and whether the targets hold: the default check at most 2 s and ``--transport
sglang`` at most 10 s median wall time. The load average before and after is printed: on a
shared machine wall time is not the work. The script imports nothing from ppaux.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET = "fixtures/observers/entropy_good.py:EntropyObserver"
TARGET_DEFAULT_SECONDS = 2.0
TARGET_SGLANG_SECONDS = 10.0


def _commands(python: str, runtime: str | None) -> dict[str, tuple[list[str], dict[str, str]]]:
    plain = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    plain["NO_COLOR"] = "1"
    ppaux = [python, "-m", "ppaux_cli", "check-observer", TARGET, "--format", "json"]
    commands = {
        "check-observer (default: --transport wire)": (ppaux, plain),
        "check-observer --transport none": ([*ppaux, "--transport", "none"], plain),
        "check-observer --transport torch-distributed": (
            [*ppaux, "--transport", "torch-distributed"],
            plain,
        ),
        "python -c 'import torch' (floor)": ([python, "-c", "import torch"], plain),
    }
    if runtime is not None:
        root = Path(runtime).expanduser()
        env = dict(plain)
        env["PYTHONPATH"] = os.pathsep.join(
            str(root / part) for part in ("sglang", "site", "standins")
        )
        env["PYTHONNOUSERSITE"] = "1"
        env.setdefault("HF_HOME", str(root / "hf-home"))
        env.setdefault("TRITON_CACHE_DIR", str(root / "triton-cache"))
        commands[f"check-observer under {root.name}'s runtime (default transport)"] = (ppaux, env)
        commands[f"check-observer --transport sglang ({root.name})"] = (
            [*ppaux, "--transport", "sglang"],
            env,
        )
    return commands


def _time(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


_IN_PROCESS = """
import json, sys, time
import torch
from ppaux.observer import ObserverOptions, check_observer
walls, cpus = [], []
for _ in range(int(sys.argv[1])):
    wall, cpu = time.perf_counter(), time.process_time()
    report = check_observer(sys.argv[2], ObserverOptions(transport=sys.argv[3]))
    walls.append(time.perf_counter() - wall)
    cpus.append(time.process_time() - cpu)
    assert report.findings == [], report.findings
print(json.dumps([walls, cpus]))
"""


def _in_process(python: str, runs: int, transport: str, env: dict[str, str]) -> list[list[float]]:
    """Wall and CPU seconds of each ``check_observer`` call in one process (torch imported)."""
    import json

    done = subprocess.run(
        [python, "-c", _IN_PROCESS, str(runs), TARGET, transport],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    values: list[list[float]] = json.loads(done.stdout.strip().splitlines()[-1])
    return values


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument(
        "--runtime", help="a prepared sglang runtime directory (for --transport sglang)"
    )
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    commands = _commands(args.python, args.runtime)
    load_before = os.getloadavg()[0]
    for argv, env in commands.values():  # warm the caches once, untimed
        _time(argv, env)
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(args.runs):
        for name, (argv, env) in commands.items():
            samples[name].append(_time(argv, env))
    load_after = os.getloadavg()[0]
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, CPython "
        f"{platform.python_version()}, {os.cpu_count()} CPUs, {args.runs} runs, load average "
        f"{load_before:.2f} before, {load_after:.2f} after\n"
    )
    print("| command | median s | min s | max s | median CPU s |")
    print("|---|---|---|---|---|")
    medians = {}
    for name, values in samples.items():
        walls = [w for w, _ in values]
        cpus = [c for _, c in values]
        medians[name] = statistics.median(walls)
        print(
            f"| `{name}` | {statistics.median(walls):.3f} | {min(walls):.3f} | {max(walls):.3f} "
            f"| {statistics.median(cpus):.3f} |"
        )
    print(
        "\nIn one process, torch already imported (the first call, then the median of the rest):\n"
    )
    print("| check_observer(...) | first wall s | median wall s | median CPU s |")
    print("|---|---|---|---|")
    plain = commands["check-observer (default: --transport wire)"][1]
    for transport in ("wire", "none", "torch-distributed"):
        walls, cpus = _in_process(args.python, args.runs + 1, transport, plain)
        print(
            f"| transport {transport} | {walls[0]:.3f} | {statistics.median(walls[1:]):.3f} "
            f"| {statistics.median(cpus[1:]):.3f} |"
        )
    default = medians["check-observer (default: --transport wire)"]
    floor = medians["python -c 'import torch' (floor)"]
    print(
        f"\ndefault check: {default:.3f} s median ({default - floor:.3f} s over the torch import "
        f"floor): target {TARGET_DEFAULT_SECONDS} s "
        + ("met" if default <= TARGET_DEFAULT_SECONDS else "NOT met")
    )
    for name, value in medians.items():
        if "--transport sglang" in name:
            print(
                f"--transport sglang: {value:.3f} s median: target {TARGET_SGLANG_SECONDS} s "
                + ("met" if value <= TARGET_SGLANG_SECONDS else "NOT met")
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
