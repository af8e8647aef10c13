"""Benchmark ``ppaux fingerprint`` and ``ppaux check-skew`` (issue 3, item 8).

Run::

    python benchmarks/bench_skew.py [--runs 7] [--distributed-runs 3] [--wheel SGLANG_WHL]
                                    [--workdir /tmp/ppaux-bench-skew]
    python benchmarks/bench_skew.py --sources [--before PPAUX_SOURCE_DIR] [--runs 5]
                                    [--trees NAME ...]

It times whole processes, interleaved run by run so that a noisy neighbour slows both alike:

* ``python -m ppaux_cli fingerprint -o FILE`` with sglang 0.5.23 installed (the files ppaux reads,
  taken from ``--wheel``, default the 0.5.23 wheel in ``$PPAUX_WHEEL_CACHE`` or
  ``~/.cache/ppaux/wheels``, put on ``PYTHONPATH`` as an installed package; without a wheel the
  ``fixtures/skew/trees/v0523`` tree stands in and the table says so);
* ``python -m torch.utils.collect_env``, what people run today;
* ``python -m ppaux_cli check-skew DIR`` over 1,024 fingerprints (a few of them skewed), in the
  JSON and the text format;
* ``torchrun --nproc-per-node 8 -m ppaux_cli check-skew --distributed`` on 127.0.0.1 (gloo), wall
  time from launch to exit, process-group start included.

It prints a Markdown table (median, min and max wall seconds), the ratio the fingerprint target is
stated in, and whether each target holds. The driver never imports torch.

With ``--sources`` it measures only ``fingerprint --sglang-path TREE`` (CPU seconds and peak RSS
of the process, from ``os.wait4``) on the installed files, the same with a syntax error at the
scheduler file's end, and with a transport module of 40,000 ``except`` clauses; with
``--before DIR`` (``git archive REV ppaux | tar -x -C DIR``) each run is made with that ppaux
too, in turn; the target is under 2 s of CPU and 250 MB for each.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TEMPLATE = REPO / "fixtures" / "skew" / "fingerprints" / "consistent" / "pp0.json"
FALLBACK_TREE = REPO / "fixtures" / "skew" / "trees" / "v0523"
READ_BY_PPAUX = (
    "sglang/_version.py",
    "sglang/srt/managers/scheduler_pp_mixin.py",
    "sglang/srt/managers/utils.py",
    "sglang/srt/distributed/parallel_state.py",
    "sglang/srt/sampling/sampling_observer_pp.py",
)
STAGES = 1024
LOCAL_PROCESSES = 8

# Targets (issue 3, item 8).
TARGET_FINGERPRINT_S = 0.3
TARGET_FINGERPRINT_SPEEDUP = 5.0
TARGET_CHECK_SKEW_S = 1.0
TARGET_DISTRIBUTED_S = 10.0
# Any source tree under 1 MB a file (--sources).
TARGET_SOURCE_CPU_S = 2.0
TARGET_SOURCE_MB = 250


def _default_wheel() -> Path | None:
    cache = Path(os.environ.get("PPAUX_WHEEL_CACHE") or Path.home() / ".cache" / "ppaux" / "wheels")
    found = sorted(cache.glob("sglang-0.5.23-*.whl")) if cache.is_dir() else []
    return found[0] if found else None


def _installed_sglang(workdir: Path, wheel: Path | None) -> tuple[Path, str]:
    """A directory to put on PYTHONPATH holding ``sglang/`` with the files ppaux reads."""
    site = workdir / "site"
    if site.exists():
        shutil.rmtree(site)
    if wheel is None:
        shutil.copytree(FALLBACK_TREE / "sglang", site / "sglang")
        return site, f"fixture tree {FALLBACK_TREE.relative_to(REPO)}"
    with zipfile.ZipFile(wheel) as archive:
        for name in READ_BY_PPAUX:
            target = site / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(archive.read(name))
    return site, f"sglang 0.5.23 files from {wheel.name}"


def _fingerprints(workdir: Path) -> Path:
    """1,024 fingerprints of one deployment; ranks 5, 300 and 1000 run another torch."""
    folder = workdir / f"fingerprints-{STAGES}"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    template = json.loads(TEMPLATE.read_text("utf-8"))
    for rank in range(STAGES):
        doc = json.loads(json.dumps(template))
        doc["host"] = f"node-{rank // 8}"
        doc["pid"] = 10_000 + rank
        doc["rank"] = {
            "rank": rank,
            "local_rank": rank % 8,
            "world_size": STAGES,
            "pp_rank": rank // 256,
            "pp_size": STAGES // 256,
        }
        if rank in (5, 300, 1000):
            doc["packages"]["torch"] = "2.13.0+cu128"
        (folder / f"rank{rank:04d}.json").write_text(json.dumps(doc, indent=2) + "\n", "utf-8")
    return folder


def _time(command: list[str], env: dict[str, str], *, expect: tuple[int, ...] = (0,)) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False
    )
    elapsed = time.perf_counter() - start
    if done.returncode not in expect:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return elapsed


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _row(label: str, times: list[float]) -> str:
    return (
        f"| {label} | {len(times)} | {statistics.median(times):.3f} | {min(times):.3f} | "
        f"{max(times):.3f} |"
    )


def _sources_trees(
    workdir: Path, site: Path, args_trees: list[str] | None = None
) -> dict[str, Path]:
    """Trees to fingerprint: the installed files, the same with a syntax error at the end of
    the scheduler file (in no definition ppaux reads), and with the transport module as one
    ``try`` of 40,000 ``except`` clauses (valid Python, just under 1 MB), or as a module that
    imports add and pop from itself, then short lines to 1 MB; then the scheduler file as each
    of :data:`COSTLY_SCHEDULERS` (``*_to_1mb``: the release's scheduler, then the unit repeated
    to 1 MB; ``*_to_500k``: to 500 KB, within ``max_analysed_source_bytes``, so parsed).
    ``args_trees``, when given, keeps only the trees of those names."""
    trees = {}
    for name in ("real", "error_at_end", "many_clauses", "self_import", *COSTLY_SCHEDULERS):
        tree = workdir / "sources" / name
        if tree.exists():
            shutil.rmtree(tree)
        shutil.copytree(site, tree)
        trees[name] = tree
    scheduler = trees["error_at_end"] / READ_BY_PPAUX[1]
    scheduler.write_text(scheduler.read_text("utf-8") + "\n\ndef unused():\n    x = = 1\n", "utf-8")
    clauses = "".join(f"except E{n}:\n    x = {n}\n" for n in range(40_000))
    source = "try:\n    pass\n" + clauses[: 1_000_000 - 100]
    (trees["many_clauses"] / READ_BY_PPAUX[4]).write_text(source[: source.rindex("except")])
    # A transport module that imports add and pop from itself, then 1 MB of short lines: a
    # chain of re-exports that comes back where it started is read once, not once a hop.
    itself = (
        "from sglang.srt.sampling.sampling_observer_pp import"
        " add_auxiliary_output_to_pp_tensors, pop_auxiliary_output_from_pp_tensors\n"
    )
    filler = "a=b\n" * ((1_000_000 - len(itself)) // 4)
    (trees["self_import"] / READ_BY_PPAUX[4]).write_text(itself + filler)
    real = (site / READ_BY_PPAUX[1]).read_text("utf-8")
    for name, text in COSTLY_SCHEDULERS.items():
        if name.endswith("_to_1mb"):  # the release's scheduler, then the unit to 1 MB
            text = real + text * ((1_000_000 - len(real)) // len(text))
        elif name.endswith("_to_500k"):  # to 500 KB: as much as one analysis parses
            text = real + text * ((500_000 - len(real)) // len(text))
        (trees[name] / READ_BY_PPAUX[1]).write_bytes(text.encode())
    if args_trees:
        trees = {name: tree for name, tree in trees.items() if name in args_trees}
    return trees


#: Valid scheduler files under 1 MB that cost the most: 200,000 lines indented by a tab, 160,000
#: statements ended by a lone CR, 120,000 short statements, and an f-string of 100,000 fields
#: (300 KB: CPython alone parses it in 6 s).
COSTLY_SCHEDULERS = {
    "tabs": "if a:\n" + "\tx=1\n" * 199_990,
    "cr_only": "x = 1\r" * 160_000,
    "short_statements": "".join(f"a{n}=1\n" for n in range(120_000)),
    "fstring_300k": "x = f'" + "{a}" * 99_990 + "'\n",
    "assign_to_1mb": "a=b\n",
    "semicolons_to_1mb": "a;b;c;d;e;g;h;i;j\n",
    "assign_to_500k": "a=b\n",
    "semicolons_to_500k": "a;b;c;d;e;g;h;i;j\n",
}


def _measured(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """CPU seconds (user + system) and peak RSS MB of one process run to its end, started in
    ``cwd`` (``python -m`` puts its folder first on ``sys.path``: not the checkout's)."""
    process = subprocess.Popen(
        command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {process.returncode}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def sources(args: argparse.Namespace, site: Path) -> int:
    """``--sources``: fingerprint's CPU time and peak memory on the trees of
    :func:`_sources_trees`, with ``--before`` (a ppaux source folder) and this checkout, run in
    turn; and the scheduler file's status each gives the tree with the error at its end."""
    trees = _sources_trees(args.workdir, site, args.trees)
    sides = {"after": REPO}
    if args.before is not None:
        sides = {"before": args.before, **sides}
    figures: dict[tuple[str, str], list[tuple[float, float]]] = {}
    status: dict[str, str] = {}
    for _ in range(args.runs):
        for name, tree in trees.items():
            for side, root in sides.items():
                env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(root)}
                out = args.workdir / "sources" / f"{name}-{side}.json"
                command = [sys.executable, "-m", "ppaux_cli", "fingerprint"]
                command += ["--sglang-path", str(tree), "-o", str(out)]
                figures.setdefault((name, side), []).append(_measured(command, env, args.workdir))
                if name == "error_at_end":
                    files = json.loads(out.read_text("utf-8"))["sglang"]["files"]
                    status[side] = files[0]["status"]
    print(
        f"{datetime.date.today()}, Python {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}; median of {args.runs} runs of each"
    )
    print()
    print("| tree | " + " | ".join(f"{side}: CPU s, peak MB" for side in sides) + " |")
    print("|---|" + "---|" * len(sides))
    ok = True
    for name in trees:
        cells = []
        for side in sides:
            runs = figures[(name, side)]
            cpu = statistics.median(r[0] for r in runs)
            rss = statistics.median(r[1] for r in runs)
            cells.append(f"{cpu:.2f}, {rss:.0f}")
            if side == "after" and (cpu >= TARGET_SOURCE_CPU_S or rss >= TARGET_SOURCE_MB):
                ok = False
        print(f"| {name} | " + " | ".join(cells) + " |")
    print()
    print(
        "scheduler file with an error at its end: "
        + ", ".join(f"{s}: {v}" for s, v in status.items())
    )
    print(
        f"- {'met' if ok else 'MISSED'}: every tree under {TARGET_SOURCE_CPU_S:g} s of CPU and "
        f"{TARGET_SOURCE_MB} MB"
    )
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="runs of each quick command (>= 5)")
    parser.add_argument("--distributed-runs", type=int, default=3, help="runs of the torchrun case")
    parser.add_argument("--wheel", type=Path, default=None, help="the sglang 0.5.23 wheel")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/ppaux-bench-skew"))
    parser.add_argument(
        "--sources", action="store_true", help="only fingerprint's cost on hostile sources"
    )
    parser.add_argument(
        "--before", type=Path, default=None, help="with --sources: a ppaux source folder to compare"
    )
    parser.add_argument(
        "--trees", nargs="+", default=None, help="with --sources: only the trees of these names"
    )
    args = parser.parse_args(argv)
    if args.runs < 5:
        parser.error("--runs must be at least 5 (the targets are medians of five or more)")
    wheel = args.wheel or _default_wheel()
    args.workdir.mkdir(parents=True, exist_ok=True)
    site, installed = _installed_sglang(args.workdir, wheel)
    if args.sources:
        return sources(args, site)
    folder = _fingerprints(args.workdir)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
    }
    env.update(NO_COLOR="1", PYTHONPATH=os.pathsep.join([str(site), str(REPO)]))
    py = sys.executable
    out = args.workdir / "stage.json"

    # Other work on the machine slows every command; the load average is printed with the table.
    load_before = os.getloadavg()[0]
    fingerprint, collect_env, skew_json, skew_text = [], [], [], []
    for _ in range(args.runs):
        fingerprint.append(_time([py, "-m", "ppaux_cli", "fingerprint", "-o", str(out)], env))
        collect_env.append(_time([py, "-m", "torch.utils.collect_env"], env))
        skew_json.append(
            _time(
                [py, "-m", "ppaux_cli", "check-skew", str(folder), "-f", "json"], env, expect=(1,)
            )
        )
        skew_text.append(
            _time([py, "-m", "ppaux_cli", "check-skew", str(folder)], env, expect=(1,))
        )
    analysed = json.loads(out.read_text("utf-8"))["sglang"]
    if analysed["version"] != "0.5.23" or analysed["transport"] != "present":
        raise SystemExit(f"the fingerprint did not find the installed sglang: {analysed}")

    distributed = []
    for _ in range(args.distributed_runs):
        command = [
            py,
            "-m",
            "torch.distributed.run",
            "--nproc-per-node",
            str(LOCAL_PROCESSES),
            "--master-addr",
            "127.0.0.1",
            "--master-port",
            str(_free_port()),
            "--monitor-interval",
            "0.2",
            "-m",
            "ppaux_cli",
            "check-skew",
            "--distributed",
            "--timeout",
            "60",
            "-f",
            "json",
        ]
        distributed.append(
            _time(command, {**env, "OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "lo"})
        )

    speedup = statistics.median(collect_env) / statistics.median(fingerprint)
    print(
        f"{datetime.date.today()}, {platform.python_implementation()} "
        f"{platform.python_version()}, {os.cpu_count()} CPUs, load average "
        f"{load_before:.1f} before and {os.getloadavg()[0]:.1f} after; sglang: {installed}"
    )
    print()
    print("| command | runs | median s | min s | max s |")
    print("|---|---|---|---|---|")
    print(_row("`ppaux fingerprint -o FILE`", fingerprint))
    print(_row("`python -m torch.utils.collect_env`", collect_env))
    print(_row(f"`ppaux check-skew DIR -f json` ({STAGES} fingerprints)", skew_json))
    print(_row(f"`ppaux check-skew DIR` ({STAGES} fingerprints, text)", skew_text))
    print(
        _row(
            f"`torchrun --nproc-per-node {LOCAL_PROCESSES} ... check-skew --distributed`",
            distributed,
        )
    )
    print()
    checks = [
        (
            f"fingerprint median <= {TARGET_FINGERPRINT_S} s",
            statistics.median(fingerprint) <= TARGET_FINGERPRINT_S,
        ),
        (
            f"fingerprint >= {TARGET_FINGERPRINT_SPEEDUP:g}x faster than collect_env "
            f"(measured {speedup:.1f}x)",
            speedup >= TARGET_FINGERPRINT_SPEEDUP,
        ),
        (
            f"check-skew over {STAGES} fingerprints <= {TARGET_CHECK_SKEW_S} s (JSON and text)",
            max(statistics.median(skew_json), statistics.median(skew_text)) <= TARGET_CHECK_SKEW_S,
        ),
        (
            f"--distributed with {LOCAL_PROCESSES} local processes <= {TARGET_DISTRIBUTED_S} s",
            statistics.median(distributed) <= TARGET_DISTRIBUTED_S,
        ),
    ]
    for text, ok in checks:
        print(f"- {'met' if ok else 'MISSED'}: {text}")
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
