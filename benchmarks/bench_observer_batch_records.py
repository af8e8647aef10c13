"""Measure what the records of a check at the largest batch size cost ppaux's own process.

Run::

    python benchmarks/bench_observer_batch_records.py [--python PATH] [--strings N]

Two checks at ``--batch-size 4096``, each in a fresh process (``--python``: the interpreter
of the checkout to measure; this one by default) under ``/usr/bin/time -f "%U %S %M"``: the
worked example ``fixtures/observers/entropy_good.py:EntropyObserver`` (3 steps), and
``tests/hostile_records.py:ShortStrings`` (one step; one record of short strings, the most a
record can cost to read within the bounds; ``--strings``, 1,150,000 by default, sets how
many strings). For each it prints the parent's own peak resident
set size and CPU time (``getrusage(RUSAGE_SELF)``: the check's child, where the target and
torch run, is not counted), the findings' codes, and what ``/usr/bin/time`` printed (its
``%M`` is the larger of the parent and the child).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GOOD = REPO / "fixtures" / "observers" / "entropy_good.py"
HOSTILE = REPO / "tests" / "hostile_records.py"

# The process's own figures (RUSAGE_SELF): the child's, and its torch, are not counted.
_RUN = """
import json, resource, sys
from ppaux.observer import ObserverOptions, check_observer
options = ObserverOptions(batch_sizes=(4096,), steps=int(sys.argv[2]), timeout_s=60.0)
report = check_observer(sys.argv[1], options)
usage = resource.getrusage(resource.RUSAGE_SELF)
codes = sorted({f.code for f in report.findings})
print(json.dumps([usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime, codes]))
"""


def measure(
    python: str, target: str, steps: int, strings: int
) -> tuple[float, float, list[str], str]:
    """The parent's peak RSS (MB) and CPU (s), the findings' codes, and ``/usr/bin/time``'s
    line, for one check of ``target``."""
    done = subprocess.run(
        ["/usr/bin/time", "-f", "%U %S %M", python, "-c", _RUN, target, str(steps)],
        capture_output=True,
        text=True,
        check=False,
        cwd="/",
        env={**os.environ, "PPAUX_DENSE_STRINGS": str(strings)},
    )
    timed = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
    if done.returncode != 0:
        return 0.0, 0.0, [f"exit status {done.returncode}"], timed
    rss, cpu, codes = json.loads(done.stdout)
    return rss, cpu, codes, timed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--strings", type=int, default=1_150_000)
    args = parser.parse_args()
    print(f"{'target':<32} {'parent MB':>9} {'CPU s':>6}  {'codes':<10} time: %U %S %M")
    for target, steps in ((f"{GOOD}:EntropyObserver", 3), (f"{HOSTILE}:ShortStrings", 1)):
        rss, cpu, codes, timed = measure(args.python, target, steps, args.strings)
        name = target.rpartition("/")[2]
        print(f"{name:<32} {rss:>9.0f} {cpu:>6.2f}  {','.join(codes) or '-':<10} {timed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
