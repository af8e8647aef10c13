"""Measure what ``ppaux explain`` costs on a long argument: its did-you-mean compares a bounded
prefix, so a ten times longer argument should cost no more.

Run::

    python benchmarks/bench_explain.py

Each argument (a sentence, a word, a rule name) is given at two lengths, each run in its own
process as a user would (``python -m ppaux_cli explain ARG``, the interpreter's start-up
included); CPU time (user and system) and the kernel's peak resident set size, both from
``os.wait4``, are printed as a Markdown table, with the ratio of the long run's CPU to the short
one's. Exit 1 when a run took over 2 s of CPU or 250 MB, or ended in a traceback.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from hostile_run import run_measured  # noqa: E402

LIMIT_S, LIMIT_MB = 2.0, 250.0
#: An argument's repeated unit; each is given 1,000 and 10,000 times (under the kernel's
#: 128 KiB bound on one argument).
UNITS = {"a sentence": "bad message ", "a word": "x", "a rule name": "not-a-rule"}


def main() -> int:
    """Run every argument at both lengths, print the figures; exit 1 over the target."""
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs, load average {load}; "
        "fresh python -m ppaux_cli per run\n\n"
        "| argument | KB | CPU s | peak RSS MB | CPU s at 10x | peak MB at 10x | ratio |\n"
        "|---|---|---|---|---|---|---|"
    )
    env = {**os.environ, "NO_COLOR": "1", "PYTHONIOENCODING": "utf-8:strict"}
    root = Path(tempfile.mkdtemp(prefix="ppaux-explain-"))
    failed = []
    for name, unit in UNITS.items():
        runs = [
            run_measured(
                [sys.executable, "-m", "ppaux_cli", "explain", unit * times],
                root / f"{unit.strip()}-{times}",
                LIMIT_S * 30,
                env,
            )
            for times in (1000, 10_000)
        ]
        failed += [
            f"{name} x{times}: {run.cpu_s:.2f} s CPU, {run.rss_mb:.0f} MB"
            for times, run in zip((1000, 10_000), runs, strict=True)
            if run.cpu_s > LIMIT_S or run.rss_mb > LIMIT_MB or b"Traceback" in run.stderr
        ]
        short, long = runs
        print(
            f"| {name} | {len(unit)} | {short.cpu_s:.2f} | {short.rss_mb:.0f} | "
            f"{long.cpu_s:.2f} | {long.rss_mb:.0f} | {long.cpu_s / short.cpu_s:.2f} |"
        )
    print(f"\nover {LIMIT_S:.0f} s of CPU or {LIMIT_MB:.0f} MB, or a traceback: {len(failed)}")
    print("".join(f"- {line}\n" for line in failed), end="")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
