"""Measure ``ppaux inspect`` over the adversarial corpus: worst wall time and peak memory.

Run::

    python benchmarks/bench_adversarial.py [--literal] [--format F ...] [--workdir DIR]

Every file of ``fixtures/adversarial/`` goes through ``ppaux inspect FILE --format F`` for every
output format (or the ``--format`` ones) in its own process and its own empty directory, as
``tests/test_adversarial.py`` runs it: forked from a
process that has imported the CLI (``--literal``: a fresh ``python -m ppaux_cli`` each time,
slower, same figures plus the interpreter's start-up). The peak resident set size is the
kernel's, read with ``os.wait4``. It prints a Markdown table of the ten slowest and the ten
largest files, the totals that ``docs/security.md`` quotes, and checks the payloads did not run
(no file appeared in any directory) and the corpus did not change.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "fixtures"))

import make_adversarial as corpus  # noqa: E402
from hostile_run import inspect_command, run_cli_many, run_measured  # noqa: E402

LIMIT_S = 120.0
FORMATS = ("text", "json", "github", "sarif", "junit", "gitlab", "markdown", "html")


def main() -> int:
    """Run the corpus once and print the figures; exit 1 if anything ran or changed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--literal", action="store_true", help="start python -m ppaux_cli afresh for every file"
    )
    parser.add_argument("--workdir", default=None, help="where the per-file directories go")
    parser.add_argument(
        "--format",
        action="append",
        dest="formats",
        choices=FORMATS,
        help="output format to run (repeatable; default: all)",
    )
    args = parser.parse_args()
    root = Path(args.workdir or tempfile.mkdtemp(prefix="ppaux-adversarial-"))
    env = {**os.environ, "NO_COLOR": "1", "PYTHONIOENCODING": "utf-8:strict"}
    before = {
        c.name: hashlib.sha256((corpus.OUT / c.filename).read_bytes()).hexdigest()
        for c in corpus.CASES
    }
    formats = args.formats or list(FORMATS)
    jobs = [(c, fmt) for c in corpus.CASES for fmt in formats]
    if args.literal:
        runs = [
            run_measured(
                inspect_command(corpus.OUT / c.filename, fmt),
                root / f"{c.name}.{fmt}",
                LIMIT_S,
                env,
            )
            for c, fmt in jobs
        ]
    else:
        runs = []
        for fmt in formats:  # one server per format: the job list travels on its command line
            runs += run_cli_many(
                [
                    (
                        ["inspect", str(corpus.OUT / c.filename), "--format", fmt],
                        root / f"{c.name}.{fmt}",
                    )
                    for c in corpus.CASES
                ],
                LIMIT_S,
                env,
            )
        jobs = [(c, fmt) for fmt in formats for c in corpus.CASES]
    rows = list(zip(jobs, runs, strict=True))
    created = {
        f"{c.name}.{fmt}": os.listdir(root / f"{c.name}.{fmt}")
        for c, fmt in jobs
        if os.listdir(root / f"{c.name}.{fmt}")
    }
    changed = [
        c.name
        for c in corpus.CASES
        if before[c.name] != hashlib.sha256((corpus.OUT / c.filename).read_bytes()).hexdigest()
    ]
    tracebacks = [f"{c.name} ({fmt})" for (c, fmt), r in rows if b"Traceback" in r.stderr]
    timeouts = [f"{c.name} ({fmt})" for (c, fmt), r in rows if r.timed_out]
    codes = sorted({r.rc for _, r in rows})
    exits = {code: sum(1 for _, r in rows if r.rc == code) for code in codes}

    print(
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs, load average "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}; "
        f"{'fresh python -m ppaux_cli' if args.literal else 'forked from a loaded CLI'}\n"
    )
    print("| slowest | format | seconds | peak RSS MB | exit |\n|---|---|---|---|---|")
    for (case, fmt), run in sorted(rows, key=lambda x: -x[1].seconds)[:10]:
        print(f"| `{case.filename}` | {fmt} | {run.seconds:.2f} | {run.rss_mb:.0f} | {run.rc} |")
    print("\n| largest | format | peak RSS MB | seconds | exit |\n|---|---|---|---|---|")
    for (case, fmt), run in sorted(rows, key=lambda x: -x[1].rss_mb)[:10]:
        print(f"| `{case.filename}` | {fmt} | {run.rss_mb:.0f} | {run.seconds:.2f} | {run.rc} |")
    print("\n| format | worst seconds | worst peak RSS MB | total seconds |\n|---|---|---|---|")
    for fmt in formats:
        mine = [r for (_, f), r in rows if f == fmt]
        print(
            f"| {fmt} | {max(r.seconds for r in mine):.2f} | "
            f"{max(r.rss_mb for r in mine):.0f} | {sum(r.seconds for r in mine):.1f} |"
        )
    seconds = [r.seconds for _, r in rows]
    rss = sorted(r.rss_mb for _, r in rows)
    print(
        f"\ncases: {len(corpus.CASES)} x {len(formats)} formats; exit codes: {exits}; total "
        f"{sum(seconds):.1f} s; worst {max(seconds):.2f} s; peak RSS {rss[-1]:.0f} MB "
        f"(median {rss[len(rss) // 2]:.0f} MB)"
    )
    print(f"files created (code executions): {len(created)} {created or ''}")
    print(f"corpus files changed: {len(changed)} {changed or ''}")
    print(
        f"tracebacks: {len(tracebacks)} {tracebacks or ''}; hangs: {len(timeouts)} {timeouts or ''}"
    )
    return 1 if created or changed or tracebacks or timeouts else 0


if __name__ == "__main__":
    sys.exit(main())
