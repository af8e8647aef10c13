"""Measure ppaux's commands over the adversarial corpus: worst CPU time, wall time and peak memory.

Run::

    python benchmarks/bench_adversarial.py [--command C ...] [--literal] [--format F ...]
                                           [--recheck N] [--workdir DIR]

``--command`` (repeatable, default ``inspect``; ``all`` is every one) chooses what runs over
every file of ``fixtures/adversarial/`` under 1 MB:

- ``inspect``: ``ppaux inspect FILE --format F``;
- ``diff``: ``ppaux diff FILE fixtures/dumps/clean_output.pt --format F``;
- ``replay``: ``ppaux replay FILE --format F``;
- ``tensorize``: ``ppaux tensorize FILE -o NEW`` (once; NEW a fresh path in the run's
  directory);
- ``triage``: ``ppaux triage LOG --format F`` over every log of ``fixtures/logs/`` and hostile
  logs under 1 MB written here (one 1 MB line, 50,000 short rank-prefixed lines, the failures
  of 1,000 ranks, escape sequences and bidi marks in the error lines, invalid UTF-8).

Every run is its own process in its own empty directory, as ``tests/test_adversarial.py`` runs
them: forked from a process that has imported the CLI (for ``replay`` and ``tensorize``, torch
too, so that a forked run's CPU time is what the command adds beyond ``import torch``), or with
``--literal`` a fresh ``python -m ppaux_cli`` each time (slower; the interpreter's start-up and
torch's import included). Peak resident set size and CPU time (user and system) are the
kernel's, read with ``os.wait4``. ``--recheck N`` (default 5) runs the N costliest inputs of
each command by CPU time, and the N largest by peak RSS, each in its worst format, again as
fresh ``python -m ppaux_cli`` processes, which is what a user pays (a forked replay or
tensorize run holds torch's pages from the start, needed or not, so its RSS is judged on the
fresh run); for ``replay`` and ``tensorize`` the cost of ``python -c "import torch"`` is
measured beside them.

It prints, per command, the costliest runs, the worst CPU time, wall time and peak RSS with
their files, and every run over the target (2 s of CPU, 250 MB); then checks that no payload ran
(no file appeared in any directory but the one tensorize was asked to write), that the corpus
did not change, and that no run ended in a traceback, an internal error or a hang. Exit 1 when
any of that happened or a run was over the target.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "fixtures"))

import make_adversarial as corpus  # noqa: E402
from hostile_run import Run, run_cli_many, run_measured  # noqa: E402

LIMIT_S = 120.0
TARGET_CPU_S, TARGET_MB, BUDGET = 2.0, 250.0, 1_000_000
FORMATS = ("text", "json", "github", "sarif", "junit", "gitlab", "markdown", "html")
COMMANDS = ("inspect", "diff", "replay", "tensorize", "triage")
TORCH_COMMANDS = ("replay", "tensorize")
CLEAN = REPO / "fixtures" / "dumps" / "clean_output.pt"
LOGS = REPO / "fixtures" / "logs"
#: What tensorize is asked to write, in its run's own directory.
NEW = "new.pt"


@dataclass
class Job:
    """One command line to run: the command, the input's name, the format, the arguments and
    the run's own directory."""

    command: str
    name: str
    fmt: str
    argv: list[str]
    workdir: Path


# -- hostile logs ---------------------------------------------------------------------------


def _block() -> str:
    """The first failing stage's lines of the project's sglang log: the scheduler's exception
    line, the traceback and the error."""
    lines = (LOGS / "sglang-aux-list.log").read_text().splitlines(keepends=True)
    start = next(n for n, line in enumerate(lines) if "Scheduler hit an exception" in line)
    end = next(n for n in range(start, len(lines)) if lines[n].startswith("RuntimeError"))
    return "".join(lines[start : end + 1])


def hostile_logs(folder: Path) -> list[Path]:
    """Write logs under 1 MB that could make triage's cost grow; return their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(24)
    block = _block()
    logs: dict[str, bytes] = {}
    # One line of 1 MB, no newline, the markers inside it.
    line = "[PP1] Scheduler hit an exception: Traceback (most recent call last): RuntimeError: "
    line += "received a non-tensor auxiliary PP output SIGQUIT received "
    logs["one_line.log"] = (line * (BUDGET // len(line) + 1)).encode()[: BUDGET - 1]
    # 50,000 short rank-prefixed lines, then one failure.
    short = "".join(f"[PP{n % 8}] b{n % 10}\n" for n in range(50_000))
    logs["many_lines.log"] = (short + block).encode()
    # As many failures of as many ranks as fit.
    many = "".join(block.replace(" PP0]", f" PP{n}]") for n in range(1_000))
    logs["many_tracebacks.log"] = many.encode()[: BUDGET - 1]
    # Escape sequences, bidi overrides, NUL, CR and Markdown/HTML specials in the error lines.
    hostile = "\x1b[2J\x1b]8;;http://x\x07\u202e|<b>*`\x00\r"
    escaped = block.replace(" PP0]", f" PP0{hostile}]") + block.replace(
        "PP output", f"PP output{hostile * 3}"
    ).replace(" PP0]", " PP1]")
    logs["escapes.log"] = (escaped * (BUDGET // len(escaped.encode()))).encode()[: BUDGET - 1]
    # A real failure with invalid UTF-8 (lone continuation bytes, surrogates, overlong forms)
    # sprinkled through every line.
    base = (LOGS / "sglang-aux-list.log").read_bytes()
    bad = (b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\x80", b"\xf4\x90\x80\x80")
    noisy = bytearray()
    while len(noisy) < BUDGET - len(base) - 64:
        chunk = bytearray(base)
        for _ in range(200):
            chunk[rng.randrange(len(chunk)) : 0] = rng.choice(bad)
        noisy += chunk
    logs["invalid_utf8.log"] = bytes(noisy[: BUDGET - 1])
    paths = []
    for name, data in logs.items():
        assert len(data) < BUDGET, (name, len(data))
        (folder / name).write_bytes(data)
        paths.append(folder / name)
    return paths


def triage_inputs(root: Path) -> list[Path]:
    """The project's log fixtures and the hostile logs."""
    fixtures = sorted(p for p in LOGS.rglob("*") if p.is_file() and p.suffix in (".log", ".gz"))
    return fixtures + hostile_logs(root / "logs")


# -- jobs -----------------------------------------------------------------------------------


def corpus_files() -> list[Path]:
    """The corpus files under 1 MB (all of them, today)."""
    return [
        corpus.OUT / c.filename
        for c in corpus.CASES
        if (corpus.OUT / c.filename).stat().st_size < BUDGET
    ]


def make_jobs(command: str, formats: list[str], root: Path) -> list[Job]:
    """Every run of ``command``: each input in each format (tensorize once)."""
    jobs = []
    if command == "triage":
        inputs = triage_inputs(root)
    else:
        inputs = corpus_files()
    for path in inputs:
        name = path.relative_to(LOGS).as_posix() if path.is_relative_to(LOGS) else path.name
        for fmt in formats if command != "tensorize" else ("-",):
            workdir = root / command / f"{name.replace('/', '_')}.{fmt}"
            if command == "diff":
                argv = ["diff", str(path), str(CLEAN), "--format", fmt]
            elif command == "tensorize":
                argv = ["tensorize", str(path), "-o", str(workdir / NEW)]
            else:
                argv = [command, str(path), "--format", fmt]
            jobs.append(Job(command, name, fmt, argv, workdir))
    return jobs


def run_jobs(jobs: list[Job], literal: bool, env: dict[str, str]) -> list[Run]:
    """Run every job, forked from a loaded CLI or (``literal``) in a fresh interpreter."""
    if literal:
        return [
            run_measured([sys.executable, "-m", "ppaux_cli", *job.argv], job.workdir, LIMIT_S, env)
            for job in jobs
        ]
    preload = {**env}
    if jobs and jobs[0].command in TORCH_COMMANDS:
        preload["PPAUX_TEST_PRELOAD"] = "torch"
    runs: list[Run] = []
    for at in range(0, len(jobs), 200):  # the job list travels on the server's command line
        part = jobs[at : at + 200]
        runs += run_cli_many([(job.argv, job.workdir) for job in part], LIMIT_S, preload)
    return runs


def torch_import(env: dict[str, str], root: Path) -> Run:
    """The cheapest of three fresh ``python -c "import torch"`` runs."""
    runs = [
        run_measured(
            [sys.executable, "-W", "ignore", "-c", "import torch"],
            root / "import-torch",
            LIMIT_S,
            env,
        )
        for _ in range(3)
    ]
    return min(runs, key=lambda r: r.cpu_s)


# -- report ---------------------------------------------------------------------------------


def _row(job: Job, run: Run) -> str:
    return (
        f"| `{job.name}` | {job.fmt} | {run.cpu_s:.2f} | {run.seconds:.2f} | "
        f"{run.rss_mb:.0f} | {run.rc} |"
    )


def _broken(run: Run) -> str | None:
    stderr = run.stderr.decode("utf-8", "replace")
    if run.timed_out:
        return "hang"
    if "Traceback" in stderr:
        return "traceback"
    if "internal error" in stderr:
        return "internal error"
    if run.rc not in (0, 1, 2):
        return f"exit {run.rc}"
    return None


def main() -> int:
    """Run the chosen commands over the corpus, print the figures; exit 1 on any problem."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--command",
        action="append",
        dest="commands",
        choices=(*COMMANDS, "all"),
        help="command to run over the corpus (repeatable; default: inspect; all: every one)",
    )
    parser.add_argument(
        "--literal", action="store_true", help="start python -m ppaux_cli afresh for every run"
    )
    parser.add_argument("--workdir", default=None, help="where the per-run directories go")
    parser.add_argument(
        "--format",
        action="append",
        dest="formats",
        choices=FORMATS,
        help="output format to run (repeatable; default: all)",
    )
    parser.add_argument(
        "--recheck",
        type=int,
        default=5,
        metavar="N",
        help="run the N costliest inputs (by CPU and by RSS) of each command again in fresh "
        "processes (default 5)",
    )
    args = parser.parse_args()
    commands = list(COMMANDS) if "all" in (args.commands or []) else args.commands or ["inspect"]
    root = Path(args.workdir or tempfile.mkdtemp(prefix="ppaux-adversarial-"))
    env = {
        **os.environ,
        "NO_COLOR": "1",
        "PYTHONIOENCODING": "utf-8:strict",
        "COLUMNS": "100",
        "PYTHONWARNINGS": "ignore",
    }
    before = {
        c.name: hashlib.sha256((corpus.OUT / c.filename).read_bytes()).hexdigest()
        for c in corpus.CASES
    }
    formats = args.formats or list(FORMATS)
    started = time.monotonic()
    load_before = os.getloadavg()
    results: dict[str, list[tuple[Job, Run]]] = {}
    for command in commands:
        jobs = make_jobs(command, formats, root)
        results[command] = list(zip(jobs, run_jobs(jobs, args.literal, env), strict=True))
    rechecks: dict[str, list[tuple[Job, Run]]] = {}
    baseline = None
    if not args.literal and args.recheck > 0:
        for command, rows in results.items():
            # The N costliest inputs by CPU time and the N largest by peak RSS, each in its
            # worst format (a forked replay or tensorize run holds torch's pages from the
            # start, whether it needed torch or not).
            costly: list[tuple[Job, Run]] = []
            for measure in (lambda r: r.cpu_s, lambda r: r.rss_mb):
                names: set[str] = set()
                for row in sorted(rows, key=lambda x: -measure(x[1])):
                    if len(names) == args.recheck:
                        break
                    if row[0].name not in names:
                        names.add(row[0].name)
                        if row not in costly:
                            costly.append(row)
            rechecks[command] = [
                (
                    job,
                    run_measured(
                        [sys.executable, "-m", "ppaux_cli", *job.argv],
                        job.workdir.with_name(job.workdir.name + ".fresh"),
                        LIMIT_S,
                        env,
                    ),
                )
                for job, _ in costly
            ]
    if any(c in TORCH_COMMANDS for c in commands):
        baseline = torch_import(env, root)
    load_after = os.getloadavg()

    def created(job: Job) -> list[str]:
        found = []
        for folder in (job.workdir, job.workdir.with_name(job.workdir.name + ".fresh")):
            if folder.is_dir():
                found += [
                    f for f in os.listdir(folder) if not (job.command == "tensorize" and f == NEW)
                ]
        return found

    every = [(job, run) for rows in (*results.values(), *rechecks.values()) for job, run in rows]
    made = {f"{job.command} {job.name} ({job.fmt})": created(job) for job, _ in every}
    made = {k: v for k, v in made.items() if v}
    changed = [
        c.name
        for c in corpus.CASES
        if before[c.name] != hashlib.sha256((corpus.OUT / c.filename).read_bytes()).hexdigest()
    ]
    broken = [
        f"{job.command} {job.name} ({job.fmt}): {why}"
        for job, run in every
        if (why := _broken(run)) is not None
    ]
    # A forked replay or tensorize run starts with torch imported: its CPU time is its own, but
    # its peak RSS holds torch's pages whether it needed torch or not; its fresh recheck says.
    over = [
        f"{job.command} `{job.name}` ({job.fmt}{', fresh' if fresh else ''}): "
        f"{run.cpu_s:.2f} s CPU, {run.seconds:.2f} s wall, {run.rss_mb:.0f} MB"
        for fresh, rows in ((False, results), (True, rechecks))
        for command, command_rows in rows.items()
        for job, run in command_rows
        if run.cpu_s > TARGET_CPU_S
        or (run.rss_mb > TARGET_MB and (fresh or args.literal or command not in TORCH_COMMANDS))
    ]

    mode = (
        "fresh python -m ppaux_cli per run"
        if args.literal
        else ("forked from a loaded CLI (replay and tensorize: torch imported before the fork)")
    )
    print(
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs; load average "
        f"{' '.join(f'{x:.1f}' for x in load_before)} at the start, "
        f"{' '.join(f'{x:.1f}' for x in load_after)} at the end; {mode}; "
        f"{time.monotonic() - started:.0f} s in all\n"
    )
    for command, rows in results.items():
        print(f"## {command}\n")
        print("| costliest (CPU) | format | CPU s | wall s | peak RSS MB | exit |")
        print("|---|---|---|---|---|---|")
        for job, run in sorted(rows, key=lambda x: -x[1].cpu_s)[:5]:
            print(_row(job, run))
        print("\n| largest | format | CPU s | wall s | peak RSS MB | exit |")
        print("|---|---|---|---|---|---|")
        for job, run in sorted(rows, key=lambda x: -x[1].rss_mb)[:3]:
            print(_row(job, run))
        if command in rechecks:
            print(
                "\n| costliest, again in a fresh process | format | CPU s | wall s | "
                "peak RSS MB | exit |"
            )
            print("|---|---|---|---|---|---|")
            for job, run in rechecks[command]:
                print(_row(job, run))
        print()
    print("## worst per command\n")
    print(
        "| command | runs | worst CPU s | its file (format) | worst wall s | its file | "
        "peak RSS MB | its file | exits |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for command, rows in results.items():
        pool = rows + rechecks.get(command, [])
        cpu = max(pool, key=lambda x: x[1].cpu_s)
        wall = max(pool, key=lambda x: x[1].seconds)
        rss = max(pool, key=lambda x: x[1].rss_mb)
        exits = {code: sum(1 for _, r in rows if r.rc == code) for code in {r.rc for _, r in rows}}
        print(
            f"| {command} | {len(rows)} | {cpu[1].cpu_s:.2f} | `{cpu[0].name}` ({cpu[0].fmt}) | "
            f"{wall[1].seconds:.2f} | `{wall[0].name}` | {rss[1].rss_mb:.0f} | "
            f"`{rss[0].name}` | {dict(sorted(exits.items()))} |"
        )
    if baseline is not None:
        print(
            f'\n`python -c "import torch"` (fresh, best of 3): {baseline.cpu_s:.2f} s CPU, '
            f"{baseline.seconds:.2f} s wall, {baseline.rss_mb:.0f} MB"
        )
    print(f"\nover {TARGET_CPU_S:.0f} s of CPU or {TARGET_MB:.0f} MB: {len(over)}")
    for line in over:
        print(f"- {line}")
    print(f"files created (code executions): {len(made)} {made or ''}")
    print(f"corpus files changed: {len(changed)} {changed or ''}")
    print(f"tracebacks, internal errors, hangs: {len(broken)}")
    for line in broken:
        print(f"- {line}")
    return 1 if made or changed or broken or over else 0


if __name__ == "__main__":
    sys.exit(main())
