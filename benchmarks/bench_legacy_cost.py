"""CPU time and peak memory of ``inspect``, ``tensorize`` and ``replay`` on files under 1 MB
(legacy-format ones, ``torch.save(..., _use_new_zipfile_serialization=False)``, and a zip of
many small tensors), beside the floor every torch-using command pays:
``python -c "import torch"``.

Run::

    python benchmarks/bench_legacy_cost.py [--runs 3] [--before SRC] [--workdir DIR]

It writes (with torch, in a child process) three files: ``e7k.pt``, 7,400 empty tensors and one
auxiliary int (about 970 KB, almost all pickle), ``tiny.pt``, one 4-element tensor and one
auxiliary int (both legacy), and ``many3k.pt``, a zip of a 2-element tensor and 3,000
one-element auxiliary tensors (about 920 KB, most of it storage records and their headers).
Each command runs as its own process; its CPU seconds (user + system) and peak RSS come from
``os.wait4``. With ``--before SRC`` (a folder holding another checkout's
``ppaux`` and ``ppaux_cli``, put first on ``PYTHONPATH``) every command also runs with that
code, interleaved run by run with this checkout's, so both columns meet the same machine load.
It prints a Markdown table of medians. The script itself never imports torch.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

_WRITE = """
import sys, torch
aux = "__sampling_observer_output__.n"
files = {
    "e7k.pt": {**{f"t{i}": torch.empty(0) for i in range(7400)}, aux: 3},
    "tiny.pt": {"w": torch.arange(4.0), aux: 3},
}
for name, value in files.items():
    torch.save(value, sys.argv[1] + "/" + name, _use_new_zipfile_serialization=False)
many = {"logits": torch.zeros(2)}
many.update({f"__sampling_observer_output__.k{i}": torch.ones(1) for i in range(3000)})
torch.save(many, sys.argv[1] + "/many3k.pt")
"""


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(CPU seconds, peak RSS in MB) of one process."""
    # Run outside the checkout: ``python -m`` puts the working directory first on sys.path,
    # ahead of PYTHONPATH, so a run from the checkout would import its ppaux for both trees.
    process = subprocess.Popen(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=tempfile.gettempdir(),
    )
    _, _, usage = os.wait4(process.pid, 0)
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--before", help="another checkout's source folder, compared")
    parser.add_argument("--workdir", default=tempfile.gettempdir() + "/ppaux-legacy-bench")
    args = parser.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-c", _WRITE, str(work)], check=True)
    python = sys.executable
    cases = []
    for name in ("e7k.pt", "many3k.pt", "tiny.pt"):
        path = str(work / name)
        size = os.path.getsize(path)
        label = f"{name} ({size:,} B)"
        cases += [
            (label, "inspect", [python, "-m", "ppaux_cli", "inspect", path, "-f", "json"]),
            (
                label,
                "tensorize",
                [python, "-m", "ppaux_cli", "tensorize", path, "-o", str(work / "out.pt")],
            ),
            (label, "replay", [python, "-m", "ppaux_cli", "replay", path]),
        ]
    cases.append(("(floor)", "import torch", [python, "-c", "import torch"]))
    trees = {"after": None} if args.before is None else {"before": args.before, "after": None}
    results: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    for _ in range(args.runs):
        for label, command, argv in cases:
            for tree, source in trees.items():
                env = dict(os.environ)
                env.pop("PYTHONPATH", None)
                if source is not None:
                    env["PYTHONPATH"] = source
                out = work / "out.pt"
                if out.exists():
                    out.unlink()
                results.setdefault((label, command, tree), []).append(_run(argv, env))
    header = "| file | command | " + " | ".join(f"{tree} CPU s | {tree} peak MB" for tree in trees)
    print(header + " |")
    print("|" + "---|" * (2 + 2 * len(trees)))
    for label, command, _ in cases:
        cells = []
        for tree in trees:
            runs = results[(label, command, tree)]
            cells.append(f"{statistics.median(r[0] for r in runs):.2f}")
            cells.append(f"{statistics.median(r[1] for r in runs):.0f}")
        print(f"| {label} | {command} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
