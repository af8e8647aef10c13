"""The check's own work in one process, and the request walk's share of it.

Run::

    python benchmarks/bench_request_walk.py [--steps 1000] [--batch-size 64] [--rounds 2] \\
        [--python OTHER/bin/python ...]

For each Python (this one, then each ``--python``, alternated round by round so that the
load on a shared machine falls on each alike), a process imports torch and that Python's
ppaux, and runs ``observer_report`` (the in-process runner: the child's work, no parent and no
records pipe) on two observers of ``bench_observer.py``'s hostile set: ``consume`` rebuilding
each request's list (``old + [x]``) and ``to_pp_tensors`` naming a new 1 MB key, at one batch
size, with ``OMP_WAIT_POLICY=PASSIVE`` as the check's child runs. It prints the CPU seconds of
the whole report (``time.process_time``) and of ``RequestWalk.step`` within it. The script
imports nothing from ppaux itself.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_observer import HOSTILE_OBSERVERS

_RUN = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
import torch
import ppaux.observer.growth as growth
from ppaux.observer import ObserverOptions
from ppaux.observer.check import observer_report
import hostile_observers

walked = [0.0]
step = growth.RequestWalk.step

def timed(self, *args):
    start = time.process_time()
    try:
        return step(self, *args)
    finally:
        walked[0] += time.process_time() - start

growth.RequestWalk.step = timed
options = ObserverOptions(steps=int(sys.argv[3]), batch_sizes=(int(sys.argv[4]),))
start = time.process_time()
observer_report(getattr(hostile_observers, sys.argv[2]), options, None)
print(json.dumps([time.process_time() - start, walked[0]]))
"""

OBSERVERS = {"consume rebuilds its list": "Rebuilding", "names a new 1 MB key": "KeyOf1MB"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--python", action="append", default=[], help="another Python to time")
    args = parser.parse_args()
    pythons = [sys.executable, *args.python]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["OMP_WAIT_POLICY"] = "PASSIVE"
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {args.steps} steps, batch size "
        f"{args.batch_size}, load average {os.getloadavg()[0]:.2f} before\n"
    )
    print("| round | observer | python | total CPU s | walk CPU s |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "hostile_observers.py").write_text(HOSTILE_OBSERVERS, encoding="utf-8")
        for round_ in range(1, args.rounds + 1):
            for label, name in OBSERVERS.items():
                for python in pythons:
                    done = subprocess.run(
                        [python, "-c", _RUN, folder, name, str(args.steps), str(args.batch_size)],
                        cwd=folder,
                        env=env,
                        capture_output=True,
                        text=True,
                        check=True,
                    )
                    total, walk = json.loads(done.stdout.strip().splitlines()[-1])
                    print(f"| {round_} | {label} | `{python}` | {total:.2f} | {walk:.2f} |")
    print(f"\nload average after {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
