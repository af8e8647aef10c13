"""Measure what a target that floods the check's records costs ppaux's own process.

Run::

    python benchmarks/bench_observer_records.py [--records N]

Targets of ``tests/hostile_records.py`` are checked (``--batch-sizes 1 --steps 1
--timeout 5``), each in a fresh process that imports the library and runs ``check_observer``:
``BigRecord`` (one record of 60 MiB whose fields are all a record's of the check), ``ManyRecords``
(``--records`` small records of the check's, 2,000,000 by default), ``PidlessFrames``
(``--pidless`` frames of ``{}``, 1,700,000 by default), ``ForkFrames`` (``--forks`` records each
naming another process, 25,000 by default; once more with ``max_step_records`` at 2**32, where
only the byte bounds hold them) and, for the baseline, the
fixture ``entropy_good.py:EntropyObserver``. For each it prints the parent's peak resident set
size and CPU time (user and system, ``getrusage(RUSAGE_SELF)``: the check's child, where the
target and torch run, is not counted), the wall time, and the PP715 finding's end and first
words. Run it from a checkout to measure that checkout (``PYTHONPATH`` picks another).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HOSTILE = REPO / "tests" / "hostile_records.py"
GOOD = REPO / "fixtures" / "observers" / "entropy_good.py"

# The process's own figures (RUSAGE_SELF): the child's, and its torch, are not counted.
_RUN = """
import json, resource, sys
from ppaux.limits import Limits
from ppaux.observer import ObserverOptions, check_observer
options = ObserverOptions(batch_sizes=(1,), steps=1, timeout_s=5.0)
report = check_observer(sys.argv[1], options, limits=Limits(**json.loads(sys.argv[2])))
ends = [(f.extra.get("end"), f.message[:110]) for f in report.findings if f.code == "PP715"]
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps([usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime, ends]))
"""


def measure(
    target: str, env: dict[str, str], limits: dict[str, int]
) -> tuple[float, float, float, str]:
    """Peak RSS (MB), CPU (s) and wall time (s) of ppaux's process in one check of
    ``target`` under ``limits`` (fields of ``Limits``), and its PP715 findings."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", _RUN, target, json.dumps(limits)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        check=False,
    )
    wall = time.monotonic() - started
    if done.returncode != 0:
        return 0.0, 0.0, wall, f"exit status {done.returncode}"
    rss, cpu, ends = json.loads(done.stdout)
    return rss, cpu, wall, str(ends)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--pidless", type=int, default=1_700_000)
    parser.add_argument("--forks", type=int, default=25_000)
    args = parser.parse_args()
    env = {
        **os.environ,
        "PPAUX_MANY_RECORDS": str(args.records),
        "PPAUX_PIDLESS_FRAMES": str(args.pidless),
        "PPAUX_FORK_FRAMES": str(args.forks),
    }
    unbounded = {"max_step_records": 1 << 32}
    print(f"{'target':<52} {'peak RSS MB':>11} {'CPU s':>6} {'wall s':>7}  PP715")
    for target, limits in (
        (f"{GOOD}:EntropyObserver", {}),
        (f"{HOSTILE}:BigRecord", {}),
        (f"{HOSTILE}:ManyRecords", {}),
        (f"{HOSTILE}:PidlessFrames", {}),
        (f"{HOSTILE}:ForkFrames", {}),
        (f"{HOSTILE}:ForkFrames", unbounded),
    ):
        rss, cpu, wall, ends = measure(target, env, limits)
        name = target.rpartition("/")[2] + (" (max_step_records=2**32)" if limits else "")
        print(f"{name:<52} {rss:>11.0f} {cpu:>6.2f} {wall:>7.1f}  {ends}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
