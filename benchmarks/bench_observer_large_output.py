"""Benchmark ``ppaux check-observer`` on an observer whose output is logits-sized: the cost of
digesting it (in the child, a piece at a time) against the same observer with a small output.

Run::

    python benchmarks/bench_observer_large_output.py [--rows 256] [--vocab 152064] [--steps 2]

It writes an observer whose ``after_sample`` returns a float32 tensor of ``rows x vocab``
elements made at each step (256 x 152,064: 38,928,384 elements, 156 MB, the logits of a batch
of 256 at Qwen2's vocabulary), and the same observer returning 32 elements, runs ``python -m
ppaux_cli check-observer obs.py:Obs --batch-size 1 --steps N -f json -o report.json`` on each
and prints, for each: the wall time, the exit status, the codes found, the peak resident set of
ppaux's own process (the parent, which judges) and of the largest process below it (the
target's child). The difference of the wall times over the steps is what comparing one such
output costs per step. ``PYTHON`` (the environment variable, default this interpreter) runs
the check. The script imports nothing from ppaux.
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

OBSERVER = """\
import torch


class Host:
    def __init__(self, t):
        self.t = t

    def consume(self, batch, commits):
        for req in batch.reqs:
            req.customized_info = {{"first": float(self.t.reshape(-1)[0])}}


class Out:
    def __init__(self, t):
        self.t = t

    def copy_to_host(self, copy):
        return Host(copy(self.t))

    def to_pp_tensors(self):
        return {{"t": self.t}}


class Obs:
    step = 0

    def is_active(self, sampling_info):
        return True

    def before_grammar(self, logits, sampling_info):
        return logits.sum(dim=-1)

    def after_sample(self, state, token_ids):
        Obs.step += 1
        return Out(torch.full(({rows}, {vocab}), float(Obs.step), dtype=torch.float32))

    def from_pp_tensors(self, tensors):
        return Out(tensors["t"])
"""

#: Runs the CLI in this process and says the peak resident sets (KiB) on stderr at the end.
RUNNER = """\
import resource, sys
from ppaux_cli.app import main
try:
    main()
finally:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    below = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    sys.stderr.write(f"\\nPEAK {own} {below}\\n")
"""


def _run(folder: Path, rows: int, vocab: int, steps: int) -> dict[str, object]:
    (folder / "obs.py").write_text(OBSERVER.format(rows=rows, vocab=vocab), encoding="utf-8")
    report = folder / "report.json"
    python = os.environ.get("PYTHON", sys.executable)
    argv = [python, "-c", RUNNER, "check-observer", "obs.py:Obs", "--batch-size", "1"]
    argv += ["--steps", str(steps), "-f", "json", "-o", str(report)]
    began = time.monotonic()
    done = subprocess.run(argv, cwd=folder, capture_output=True, text=True, check=False)
    took = time.monotonic() - began
    peak = done.stderr.rpartition("PEAK ")[2].split()
    found = json.loads(report.read_text(encoding="utf-8")) if report.exists() else {}
    return {
        "elements": rows * vocab,
        "wall_s": round(took, 2),
        "exit": done.returncode,
        "codes": sorted({f["code"] for f in found.get("findings", [])}),
        "parent_peak_mb": round(int(peak[0]) / 1024, 1) if len(peak) == 2 else None,
        "child_peak_mb": round(int(peak[1]) / 1024, 1) if len(peak) == 2 else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=256)
    parser.add_argument("--vocab", type=int, default=152064)
    parser.add_argument("--steps", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        small = _run(folder, 1, 32, args.steps)
        large = _run(folder, args.rows, args.vocab, args.steps)
    for row in (small, large):
        print(json.dumps(row))
    extra = (float(large["wall_s"]) - float(small["wall_s"])) / args.steps  # type: ignore[arg-type]
    print(f"per step, the large output costs {extra:.2f} s more than the small one")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    main()
