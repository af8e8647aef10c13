"""Benchmark ``ppaux inspect`` against ``torch.load`` on PP payload dumps of growing size.

Run::

    python benchmarks/bench_inspect.py [--runs 5] [--workdir /tmp/ppaux-bench]

It writes (once, then reuses) ``torch.save`` dumps of 16 MiB, 256 MiB and 2 GiB shaped like a PP
payload (bf16 hidden states and residual, an output message's ``next_token_ids``, logprob lists
and ``None`` values, and ``__sampling_observer_output__.*`` auxiliary entries, one of them a list,
so every dump has a finding), plus a directory of 1,000 small, varied dumps. It then times whole
processes, interleaved run by run so that a noisy neighbour slows every tool alike:

* ``python -m ppaux_cli inspect FILE --format json``
* ``python -c "import torch; torch.load(FILE, weights_only=True, mmap=True)"``
* ``python -c "import torch; torch.load(FILE, weights_only=True)"``
* ``python -m ppaux_cli inspect DIR --format json`` over the 1,000 dumps

plus, in the same rounds, the start-up floors (``python -c pass``, ``import typer`` and
``ppaux --help``). It prints a Markdown table (median,
min, max wall seconds, median CPU seconds, peak RSS), the ratios that the targets are stated in,
and whether each target holds; the exit code is 1 when a target is missed. The script itself
never imports torch: dumps are written by a child process.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

MIB = 1024 * 1024
#: The single-file dumps: label -> bytes of bf16 hidden states + residual.
SIZES = {"16 MiB": 16 * MIB, "256 MiB": 256 * MIB, "2 GiB": 2048 * MIB}
SMALL_DUMPS = 1000
#: The "dump" column of the start-up floors measured alongside.
REFERENCE = "(start-up floor)"
#: Bump when the generated files change shape, so that an old work directory is rewritten.
LAYOUT = 1
HIDDEN = 4096
AUX = "__sampling_observer_output__."

# Targets, for a 2-core machine (issue 2, item 9).
TARGET_BIG_SECONDS = 0.2
TARGET_BIG_PEAK_MB = 60.0
TARGET_SIZE_RATIO = 1.25
TARGET_MMAP_SPEEDUP = 10.0
TARGET_DIR_SECONDS = 3.0

# How each run is measured.
#
# Peak memory cannot come from this process: getrusage(RUSAGE_CHILDREN) is a running maximum over
# every child reaped so far, and even os.wait4(pid) on one child is wrong here, because Linux
# seeds a child's ru_maxrss, at exec, with the high-water RSS of the address space it replaces.
# Python's subprocess spawns with vfork, so that address space is this driver's: a child
# spawned from a 500 MB process reports at least 500 MB. So each run goes through a fresh,
# tiny wrapper (``python -I -S``, about 8 MB, no site packages) that starts the measured
# command with posix_spawn, reads the wall clock around it, and reaps it with os.wait4: the
# reported peak is max(wrapper's own high-water RSS, command's own peak). Every command measured
# here is a full Python process above 10 MB, and the driver checks on each run that the peak is
# above the wrapper's VmHWM (the wrapper's own ru_maxrss would not do: it was seeded from this
# driver in the same way). The wall clock covers exactly the command's process lifetime, from
# spawn to reap, not the wrapper's own start-up.
_WRAPPER = r"""
import os, sys, time
out, err, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
o = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
e = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
actions = [(os.POSIX_SPAWN_DUP2, o, 1), (os.POSIX_SPAWN_DUP2, e, 2)]
with open("/proc/self/status") as status:
    floor = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
start = time.perf_counter()
pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=actions)
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - start
cpu = usage.ru_utime + usage.ru_stime
print(wall, cpu, usage.ru_maxrss, floor, os.waitstatus_to_exitcode(status))
"""


@dataclass
class Case:
    """One timed command line and what it must return."""

    size: str
    tool: str
    argv: list[str]
    expect_rc: int
    check_json: bool = False
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    peaks_kib: list[int] = field(default_factory=list)

    def median(self) -> float:
        return statistics.median(self.walls)

    def peak_mb(self) -> float:
        return max(self.peaks_kib) * 1024 / 1e6


# --- dump generation (runs in a child process that imports torch) -----------------------------

_GENERATOR = r"""
import os, sys
import torch

HIDDEN, AUX = %(hidden)d, %(aux)r


def output_part(batch, seed, aux_list=True):
    g = torch.Generator().manual_seed(seed)
    part = {
        "next_token_ids": torch.randint(0, 151936, (batch,), generator=g),
        "extend_input_len_per_req": [int(x) for x in torch.randint(1, 4096, (batch,), generator=g)],
        "extend_logprob_start_len_per_req": [0] * batch,
        "next_token_logprobs": -torch.rand(batch, generator=g),
        "next_token_top_logprobs_val": [[-float(i) / 7 for i in range(5)] for _ in range(batch)],
        "next_token_top_logprobs_idx": [[int(i) * 31 for i in range(5)] for _ in range(batch)],
        "next_token_token_ids_logprobs_val": None,
        "next_token_token_ids_logprobs_idx": None,
        "sampling_mask_token_ids": None,
        "sampling_mask_lengths": None,
        "sampling_mask_selected_logprobs": None,
        "sampling_mask_support_logprobs": None,
        "sampling_mask_statuses": None,
        "sampling_mask_num_accept_tokens": None,
        "input_token_logprobs": None,
        "input_top_logprobs_val": None,
        "input_top_logprobs_idx": None,
        "input_token_ids_logprobs_val": None,
        "input_token_ids_logprobs_idx": None,
        AUX + "entropy": torch.rand(batch, generator=g),
        AUX + "topk_ids": torch.randint(0, 151936, (batch, 8), generator=g, dtype=torch.int32),
        AUX + "topk_logprobs": -torch.rand(batch, 8, generator=g),
    }
    if aux_list:
        # The finding every dump carries: a plain list under an auxiliary key.
        part[AUX + "accepted"] = [bool(i %% 3) for i in range(batch)]
    part["__msg_type__"] = "output"
    return part


def big(path, nbytes):
    rows = nbytes // (2 * HIDDEN * 2)
    g = torch.Generator().manual_seed(rows)
    payload = {
        "hidden_states": torch.empty(rows, HIDDEN, dtype=torch.bfloat16).normal_(generator=g),
        "residual": torch.empty(rows, HIDDEN, dtype=torch.bfloat16).normal_(generator=g),
    }
    payload.update(output_part(64, rows))
    torch.save(payload, path + ".tmp")
    os.replace(path + ".tmp", path)


def small(folder, count):
    # Varied: batch size, with or without hidden states, clean or with a finding, a near-miss key,
    # a non-output message, spread over ten sub-folders as a capture directory would be.
    for i in range(count):
        batch = 1 + i %% 32
        payload = output_part(batch, i, aux_list=(i %% 4 == 0))
        if i %% 5 == 1:
            payload["hidden_states"] = torch.zeros(2 + i %% 7, 64, dtype=torch.bfloat16)
        if i %% 7 == 2:
            payload["__sampling_observer_output_entropy"] = torch.zeros(batch)
        if i %% 11 == 3:
            payload["__msg_type__"] = "proxy"
        sub = os.path.join(folder, "rank%%d" %% (i %% 10))
        os.makedirs(sub, exist_ok=True)
        torch.save(payload, os.path.join(sub, "step%%04d.pt" %% i))


kind, path = sys.argv[1], sys.argv[2]
if kind == "big":
    big(path, int(sys.argv[3]))
else:
    small(path, int(sys.argv[3]))
""" % {"hidden": HIDDEN, "aux": AUX}


def _dump_name(label: str) -> str:
    return "dump-" + label.replace(" ", "").lower() + ".pt"


def prepare(workdir: Path, python: str) -> dict[str, Path]:
    """Write the dumps into ``workdir`` unless the manifest shows they are already there."""
    workdir.mkdir(parents=True, exist_ok=True)
    manifest_path = workdir / "manifest.json"
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, ValueError):
        manifest = {}
    if manifest.get("layout") != LAYOUT:
        manifest = {"layout": LAYOUT, "files": {}}
    paths = {}
    for label, nbytes in SIZES.items():
        path = workdir / _dump_name(label)
        paths[label] = path
        recorded = manifest["files"].get(path.name)
        if recorded is not None and path.is_file() and path.stat().st_size == recorded:
            continue
        print(f"writing {path} ...", file=sys.stderr, flush=True)
        subprocess.run([python, "-c", _GENERATOR, "big", str(path), str(nbytes)], check=True)
        manifest["files"][path.name] = path.stat().st_size
        manifest_path.write_text(json.dumps(manifest, indent=1))
    folder = workdir / "small"
    paths["dir"] = folder
    present = sorted(folder.rglob("*.pt")) if folder.is_dir() else []
    if manifest["files"].get("small") != [len(present), sum(p.stat().st_size for p in present)]:
        print(f"writing {SMALL_DUMPS} small dumps into {folder} ...", file=sys.stderr, flush=True)
        if folder.is_dir():
            for p in present:
                p.unlink()
        subprocess.run(
            [python, "-c", _GENERATOR, "small", str(folder), str(SMALL_DUMPS)], check=True
        )
        present = sorted(folder.rglob("*.pt"))
        manifest["files"]["small"] = [len(present), sum(p.stat().st_size for p in present)]
        manifest_path.write_text(json.dumps(manifest, indent=1))
    if len(present) != SMALL_DUMPS:
        sys.exit(f"{folder}: expected {SMALL_DUMPS} dumps, found {len(present)}")
    return paths


# --- measuring --------------------------------------------------------------------------------


def command_environment(workdir: Path) -> dict[str, str]:
    """The environment every measured command runs in: the caller's, with bytecode caching on.

    An installed ppaux runs from cached bytecode; with PYTHONDONTWRITEBYTECODE set (as some
    development shells do) every run would recompile each module and time the compiler instead.
    The caches go to the work directory (PYTHONPYCACHEPREFIX), so the repository is not written
    to, and the warm-up run fills them.
    """
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(workdir / "pycache")
    return env


def measure(
    case: Case, python: str, scratch: Path, env: dict[str, str]
) -> tuple[float, float, int]:
    """Run ``case`` once through the wrapper; return (wall s, CPU s, peak RSS KiB)."""
    out, err = scratch / "stdout", scratch / "stderr"
    done = subprocess.run(
        [python, "-I", "-S", "-c", _WRAPPER, str(out), str(err), *case.argv],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    wall_s, cpu_s, peak_s, floor_s, rc_s = done.stdout.split()
    wall, cpu, peak, floor, rc = float(wall_s), float(cpu_s), int(peak_s), int(floor_s), int(rc_s)
    if rc != case.expect_rc:
        tail = err.read_text(errors="replace")[-2000:]
        sys.exit(f"{shlex.join(case.argv)}: exit code {rc}, expected {case.expect_rc}\n{tail}")
    if peak <= floor:
        sys.exit(f"{shlex.join(case.argv)}: peak {peak} KiB not above the wrapper's {floor} KiB")
    if case.check_json:
        # Exit code 1 is also what an uncaught traceback gives: insist on a well-formed report.
        stderr = err.read_text(errors="replace")
        try:
            document = json.loads(out.read_text())
        except ValueError:
            document = None
        if document is None or "Traceback" in stderr:
            sys.exit(f"{shlex.join(case.argv)}: no well-formed JSON report\n{stderr[-2000:]}")
        codes = {f["code"] for f in document["findings"]}
        if "PP101" not in codes or document["summary"]["problems"]:
            sys.exit(
                f"{shlex.join(case.argv)}: unexpected report: findings {sorted(codes)}, "
                f"problems {document['summary']['problems']}"
            )
    return wall, cpu, peak


def build_cases(paths: dict[str, Path], python: str) -> list[Case]:
    """The commands, in the order each run goes through them."""
    inspect = [python, "-m", "ppaux_cli", "inspect"]
    cases = []
    for label in SIZES:
        file = str(paths[label])
        cases += [
            # Exit code 1: the auxiliary list is an error finding (2 would mean unreadable).
            Case(
                label, "ppaux inspect --format json", [*inspect, file, "--format", "json"], 1, True
            ),
            Case(
                label,
                "torch.load(weights_only=True, mmap=True)",
                [python, "-c", f"import torch; torch.load({file!r}, weights_only=True, mmap=True)"],
                0,
            ),
            Case(
                label,
                "torch.load(weights_only=True)",
                [python, "-c", f"import torch; torch.load({file!r}, weights_only=True)"],
                0,
            ),
        ]
    cases.append(
        Case(
            f"{SMALL_DUMPS} small dumps (dir)",
            "ppaux inspect DIR --format json",
            [*inspect, str(paths["dir"]), "--format", "json"],
            1,
            True,
        )
    )
    # Floors, in the same rounds: what any Python command, any Typer command and ppaux's own
    # start-up (--help) pay before any work.
    cases += [
        Case(REFERENCE, "python -c pass", [python, "-c", "pass"], 0),
        Case(REFERENCE, "python -c 'import typer'", [python, "-c", "import typer"], 0),
        Case(REFERENCE, "ppaux --help", [python, "-m", "ppaux_cli", "--help"], 0),
    ]
    return cases


def _version_of(python: str, module: str) -> str:
    done = subprocess.run(
        [python, "-c", f"import {module}; print({module}.__version__)"],
        capture_output=True,
        text=True,
    )
    return done.stdout.strip() or "unavailable"


def machine_facts(python: str) -> dict[str, str]:
    """What the figures depend on: cores, Python, torch, ppaux, CPU, memory, load."""
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = "unknown"
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        memory = f"{pages / 2**30:.1f} GiB"
    except (ValueError, OSError):
        pass
    return {
        "nproc": str(len(os.sched_getaffinity(0))),
        "cpu": cpu,
        "memory": memory,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "torch": _version_of(python, "torch"),
        "ppaux": _version_of(python, "ppaux"),
        "load average at start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


def _size_mb(path: Path) -> str:
    return f"{path.stat().st_size / 1e6:,.1f} MB"


def report(
    cases: list[Case], paths: dict[str, Path], facts: dict[str, str], runs: int, command: str
) -> tuple[str, bool]:
    """The Markdown section and whether every target holds."""
    by = {(c.size, c.tool): c for c in cases}
    inspect_tool = "ppaux inspect --format json"
    small, big = next(iter(SIZES)), list(SIZES)[-1]
    big_inspect = by[(big, inspect_tool)]
    small_inspect = by[(small, inspect_tool)]
    big_mmap = by[(big, "torch.load(weights_only=True, mmap=True)")]
    directory = by[(f"{SMALL_DUMPS} small dumps (dir)", "ppaux inspect DIR --format json")]
    size_ratio = big_inspect.median() / small_inspect.median()
    speedup = big_mmap.median() / big_inspect.median()
    targets = [
        (
            f"inspect of the {big} dump, median <= {TARGET_BIG_SECONDS} s",
            f"{big_inspect.median():.3f} s",
            big_inspect.median() <= TARGET_BIG_SECONDS,
        ),
        (
            f"inspect of the {big} dump, peak <= {TARGET_BIG_PEAK_MB:.0f} MB",
            f"{big_inspect.peak_mb():.1f} MB",
            big_inspect.peak_mb() <= TARGET_BIG_PEAK_MB,
        ),
        (
            f"inspect {big} / {small} median time <= {TARGET_SIZE_RATIO}x",
            f"{size_ratio:.2f}x",
            size_ratio <= TARGET_SIZE_RATIO,
        ),
        (
            f"mmap torch.load / inspect of the {big} dump >= {TARGET_MMAP_SPEEDUP:.0f}x",
            f"{speedup:.1f}x",
            speedup >= TARGET_MMAP_SPEEDUP,
        ),
        (
            f"inspect of the {SMALL_DUMPS}-dump directory, median <= {TARGET_DIR_SECONDS} s",
            f"{directory.median():.3f} s",
            directory.median() <= TARGET_DIR_SECONDS,
        ),
    ]
    lines = [
        f"Command: `{command}`",
        "",
        f"Date: {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}. "
        f"{runs} timed runs per row, interleaved, after one warm-up run (files in the page "
        "cache, bytecode caches written).",
        "",
        "Machine: " + "; ".join(f"{k} {v}" for k, v in facts.items()) + ".",
        "",
        "Files: "
        + "; ".join(f"{label}: {_size_mb(paths[label])}" for label in SIZES)
        + f"; directory: {SMALL_DUMPS} dumps, "
        + f"{sum(p.stat().st_size for p in paths['dir'].rglob('*.pt')) / 1e6:.1f} MB in all.",
        "",
        "| dump | tool | median s | min s | max s | median CPU s | peak RSS MB |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for c in cases:
        lines.append(
            f"| {c.size} | {c.tool} | {c.median():.3f} | {min(c.walls):.3f} | "
            f"{max(c.walls):.3f} | {statistics.median(c.cpus):.3f} | {c.peak_mb():.1f} |"
        )
    lines += [
        "",
        "Times are wall-clock seconds of the whole process; CPU s is its user + system time "
        "(less disturbed by other load on a shared machine). Peak RSS is the highest of the runs, "
        "in MB of 10^6 bytes.",
        "",
        "| target | measured | holds |",
        "|---|---:|---|",
    ]
    lines += [f"| {name} | {value} | {'yes' if ok else 'NO'} |" for name, value, ok in targets]
    return "\n".join(lines) + "\n", all(ok for _, _, ok in targets)


def main(argv: list[str] | None = None) -> int:
    """Prepare the dumps, time every case, print the Markdown section; 1 if a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs", type=int, default=5, help="timed runs per command (median of these)"
    )
    parser.add_argument(
        "--workdir",
        default=os.path.join(tempfile.gettempdir(), "ppaux-bench"),
        help="where the dumps are written and reused (outside the repository)",
    )
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    workdir = Path(args.workdir).resolve()
    if workdir == REPO or REPO in workdir.parents:
        parser.error(f"--workdir {workdir} is inside the repository; pick a folder outside it")
    python = sys.executable
    paths = prepare(workdir, python)
    facts = machine_facts(python)
    cases = build_cases(paths, python)
    scratch = Path(tempfile.mkdtemp(prefix="runs-", dir=workdir))
    try:
        # The warm-up brings every file into the page cache and Python's bytecode caches up to
        # date; then whole rounds, so that load on the shared machine hits every command alike.
        env = command_environment(workdir)
        for case in cases:
            measure(case, python, scratch, env)
        for run in range(args.runs):
            for case in cases:
                wall, cpu, peak = measure(case, python, scratch, env)
                case.walls.append(wall)
                case.cpus.append(cpu)
                case.peaks_kib.append(peak)
            print(f"run {run + 1}/{args.runs} done", file=sys.stderr, flush=True)
    finally:
        for leftover in scratch.iterdir():
            leftover.unlink()
        scratch.rmdir()
    facts["load average at end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    command = "python benchmarks/bench_inspect.py"
    if args.runs != parser.get_default("runs"):
        command += f" --runs {args.runs}"
    if args.workdir != parser.get_default("workdir"):
        command += f" --workdir {shlex.quote(args.workdir)}"
    text, held = report(cases, paths, facts, args.runs, command)
    print(text)
    return 0 if held else 1


if __name__ == "__main__":
    sys.exit(main())
