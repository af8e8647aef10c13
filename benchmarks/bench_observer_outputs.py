"""Benchmark ``ppaux check-observer --outputs`` given a generator: peak memory against the
number of outputs.

Run::

    python benchmarks/bench_observer_outputs.py [--counts 10,150] [--megabytes 8]

For each count N it writes an observer and a generator yielding N outputs of ``--megabytes``
each (a fresh float32 tensor made as the generator is asked for it), runs ``python -m
ppaux_cli check-observer obs.py:Obs --outputs outs.py:stream -f json -o report.json`` and
prints the exit status and the peak resident set of the largest process of its tree (the
children's ``ru_maxrss``: the target's child). Outputs read one at a time keep the peak flat in
N; read all before the first step, it grows by ``--megabytes`` per output. ``PYTHON`` (the
environment variable, default this interpreter) runs the check, so another checkout's
ppaux can be measured beside this one with ``PYTHONPATH``. The script imports nothing from
ppaux.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

OBSERVER = """\
class Host:
    def __init__(self, t):
        self.t = t

    def consume(self, batch, commits):
        for req in batch.reqs:
            req.customized_info = {"first": float(self.t[0])}


class Out:
    def __init__(self, t):
        self.t = t

    def copy_to_host(self, copy):
        return Host(copy(self.t))

    def to_pp_tensors(self):
        return {"t": self.t}


class Obs:
    def from_pp_tensors(self, tensors):
        return Out(tensors["t"])
"""

OUTPUTS = """\
import torch

from obs import Out


def stream():
    for i in range({count}):
        yield Out(torch.full(({items},), float(i)))
"""


def peak_mb(count: int, megabytes: int) -> tuple[int, float]:
    """Exit status and the peak RSS (MB) of the largest process of one check's tree."""
    with tempfile.TemporaryDirectory() as folder:
        here = Path(folder)
        (here / "obs.py").write_text(OBSERVER, encoding="utf-8")
        items = megabytes * (1 << 20) // 4
        text = textwrap.dedent(OUTPUTS.format(count=count, items=items))
        (here / "outs.py").write_text(text, encoding="utf-8")
        python = os.environ.get("PYTHON", sys.executable)
        command = [python, "-m", "ppaux_cli", "check-observer", "obs.py:Obs"]
        command += ["--outputs", "outs.py:stream", "-f", "json", "-o", "report.json"]
        # One check per process: ru_maxrss of the children is this check's alone.
        probe = (
            "import resource, subprocess, sys;"
            "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, "
            "stderr=subprocess.DEVNULL).returncode;"
            "print(r, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
        )
        done = subprocess.run(
            [sys.executable, "-c", probe, *command],
            cwd=here,
            capture_output=True,
            text=True,
            check=True,
        )
        status, kilobytes = done.stdout.split()
        return int(status), int(kilobytes) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="10,150")
    parser.add_argument("--megabytes", type=int, default=8)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    print("| outputs | MB each | exit | peak RSS (MB) |")
    print("|---:|---:|---:|---:|")
    for count in (int(c) for c in args.counts.split(",")):
        status, peak = peak_mb(count, args.megabytes)
        print(f"| {count} | {args.megabytes} | {status} | {peak:,.0f} |")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
