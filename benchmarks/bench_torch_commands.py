"""CPU seconds of ``tensorize`` and ``replay`` on a tiny file, the two commands whose cost is
torch's import, with this checkout and (``--before SRC``) another, interleaved run by run.

Run::

    python benchmarks/bench_torch_commands.py [--runs 12] [--before SRC] [--workdir DIR]

It writes (with torch, in a child process) ``tiny.pt``: one 4-element tensor and one auxiliary
int, in the legacy format. Each command runs as its own process (``python -m ppaux_cli``), with
bytecode caches allowed (``PYTHONDONTWRITEBYTECODE`` unset: an installed package has its
``.pyc`` files); its CPU seconds (user + system) come from ``os.wait4``. ``SRC`` is a folder
holding another checkout's ``ppaux`` and ``ppaux_cli``, put first on ``PYTHONPATH``. It prints
a Markdown table of medians and minimums. The script itself never imports torch.
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
value = {"w": torch.arange(4.0), "__sampling_observer_output__.n": 3}
torch.save(value, sys.argv[1] + "/tiny.pt", _use_new_zipfile_serialization=False)
"""


def _cpu(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    # Run outside the checkout: ``python -m`` puts the working directory first on sys.path,
    # ahead of PYTHONPATH, so a run from the checkout would import its ppaux for both trees.
    process = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd
    )
    _, _, usage = os.wait4(process.pid, 0)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=12)
    parser.add_argument("--before", help="another checkout's source folder, compared")
    parser.add_argument("--workdir", default=tempfile.gettempdir() + "/ppaux-torch-bench")
    args = parser.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-c", _WRITE, str(work)], check=True)
    tiny, out = str(work / "tiny.pt"), work / "out.pt"
    python = sys.executable
    cases = {
        "tensorize": [python, "-m", "ppaux_cli", "tensorize", tiny, "-o", str(out)],
        "replay": [python, "-m", "ppaux_cli", "replay", tiny],
        "import torch": [python, "-c", "import torch"],
    }
    trees = {"after": None} if args.before is None else {"before": args.before, "after": None}
    seconds: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.runs):
        for name, argv in cases.items():
            for tree, source in trees.items():
                env = dict(os.environ)
                env.pop("PYTHONPATH", None)
                env.pop("PYTHONDONTWRITEBYTECODE", None)
                if source is not None:
                    env["PYTHONPATH"] = source
                if out.exists():
                    out.unlink()
                seconds.setdefault((name, tree), []).append(_cpu(argv, env, work))
    print("| command | " + " | ".join(f"{t} median CPU s | {t} min CPU s" for t in trees) + " |")
    print("|" + "---|" * (1 + 2 * len(trees)))
    for name in cases:
        cells = []
        for tree in trees:
            runs = seconds[(name, tree)]
            cells += [f"{statistics.median(runs):.2f}", f"{min(runs):.2f}"]
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
