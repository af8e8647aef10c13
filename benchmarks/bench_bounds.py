"""Measure the costs that inputs under 1 MB could once make grow: wide text tables, large
sources to fingerprint, many or large fingerprints to compare.

Run::

    python benchmarks/bench_bounds.py [--workdir DIR] [--only TEXT]

``--only TEXT`` runs the cases whose name holds TEXT. Each case writes its input (under 1 MB,
made here from the project's own fixtures) and runs one command on it in every output format,
each run in its own process, as a user would: ``python -m ppaux_cli ...`` (the interpreter's
start-up included). Wall time and the kernel's peak resident
set size (``os.wait4``) are taken for each run, and its CPU time (user and system, from
``getrusage``), which a loaded machine does not inflate as it does wall time. A Markdown table is
printed: the worst run of each case, then whether every run stayed within the target (2 s of
CPU and 250 MB). Exit 1 when one did not, or ended in a traceback. The two baseline cases give
what replay and tensorize cost on a 1 KB input, most of it torch's import, so that the cost of
an input can be told from the cost of torch.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from hostile_run import run_measured  # noqa: E402

FORMATS = ("text", "json", "github", "sarif", "junit", "gitlab", "markdown", "html")
LIMIT_S, LIMIT_MB, BUDGET = 2.0, 250.0, 1_000_000
FINGERPRINTS = REPO / "fixtures" / "skew" / "fingerprints" / "consistent"
TREE = REPO / "fixtures" / "skew" / "trees" / "v0523"


def _fingerprint(rank: int) -> dict:
    doc = json.loads((FINGERPRINTS / f"pp{rank % 4}.json").read_text())
    doc["rank"].update(rank=rank, pp_rank=rank, world_size=None, pp_size=None)
    return doc


def many_fingerprints(folder: Path) -> list[str]:
    """As many stages as fit in 1 MB, each with its own host and one differing variable: a
    matrix with hundreds of columns."""
    one = len(json.dumps(_fingerprint(0)))
    count = BUDGET // (one + 40)
    for rank in range(count):
        doc = _fingerprint(rank)
        doc["host"] = f"node-{rank}"
        doc["environment"]["NCCL_SOCKET_IFNAME"] = f"eth{rank}"
        (folder / f"pp{rank}.json").write_text(json.dumps(doc))
    return ["check-skew", str(folder)]


def large_fingerprints(folder: Path) -> list[str]:
    """Two stages whose environments differ in every one of ~10,000 variables, each with a
    long value: a matrix with thousands of rows and very wide cells."""
    for rank in (0, 1):
        doc = _fingerprint(rank)
        doc["environment"] = {f"VAR_{n:05d}": f"{rank}-{n}" + "x" * 30 for n in range(6_000)}
        doc["packages"]["torch"] = str(rank) * 100_000  # one cell 100,000 characters wide
        (folder / f"pp{rank}.json").write_text(json.dumps(doc))
    return ["check-skew", str(folder / "pp0.json"), str(folder / "pp1.json")]


def wide_table(folder: Path) -> list[str]:
    """A fingerprint comparison whose single differing value is 200,000 characters of escape
    sequences, bidi overrides and Markdown and HTML specials (JSON-escaped, about 1 MB for the
    two files): one table cell as wide as the input allows."""
    for rank in (0, 1):
        doc = _fingerprint(rank)
        doc["packages"]["sglang-kernel"] = ("\x1b[31m\u202e|<a>*" * 20_000)[: 200_000 - rank]
        (folder / f"pp{rank}.json").write_text(json.dumps(doc))
    return ["check-skew", str(folder / "pp0.json"), str(folder / "pp1.json")]


def _tree_with(folder: Path, name: str, source: str) -> Path:
    tree = folder / "sglang-tree"
    shutil.copytree(TREE, tree)
    (tree / "sglang" / "srt" / "managers" / name).write_text(source)
    return tree


def large_source(folder: Path) -> list[str]:
    """An sglang tree whose scheduler mixin is 1 MB of methods: the transport is found in it."""
    real = (TREE / "sglang" / "srt" / "managers" / "scheduler_pp_mixin.py").read_text()
    filler = "".join(
        f"    def method_{n}(self, x):\n        return x + {n}\n\n" for n in range(20_000)
    )
    lines = real.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("class "))
    source = "".join(lines[: at + 1]) + filler[: BUDGET - len(real)] + "".join(lines[at + 1 :])
    tree = _tree_with(folder, "scheduler_pp_mixin.py", source)
    return ["fingerprint", "--sglang-path", str(tree)]


def invalid_source(folder: Path) -> list[str]:
    """The scheduler mixin with 17,000 two-line methods added to its class and cut in the
    middle of one's header (about 800 KB): not valid Python, so no part of it can be trusted."""
    real = (TREE / "sglang" / "srt" / "managers" / "scheduler_pp_mixin.py").read_text()
    filler = "".join(
        f"    def method_{n}(self, x):\n        return x + {n}\n\n" for n in range(17_000)
    )
    filler = filler[: filler.index("    def method_14000(") + len("    def method_14000(se")]
    lines = real.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("class "))
    source = "".join(lines[: at + 1]) + filler + "".join(lines[at + 1 :])
    tree = _tree_with(folder, "scheduler_pp_mixin.py", source)
    return ["fingerprint", "--sglang-path", str(tree)]


def invalid_function(folder: Path) -> list[str]:
    """The transport module as one 1 MB function whose last line is not Python: a statement
    that must be cut into its body to be parsed in bounded parts."""
    body = "".join(f"    value_{n} = value + {n}\n" for n in range(60_000))
    source = "def add_auxiliary_output_to_pp_tensors(value):\n" + body[: BUDGET - 100]
    source = source[: source.rindex("\n") + 1] + "    y = = 1\n"
    real = (TREE / "sglang" / "srt" / "managers" / "scheduler_pp_mixin.py").read_text()
    tree = _tree_with(folder, "scheduler_pp_mixin.py", real)
    (tree / "sglang" / "srt" / "sampling" / "sampling_observer_pp.py").write_text(source)
    return ["fingerprint", "--sglang-path", str(tree)]


def hostile_source(folder: Path) -> list[str]:
    """The scheduler mixin as 1 MB of one line of 'def' and parentheses that regular
    expressions could backtrack on, and no newline."""
    source = "class SchedulerPPMixin:" + " def (" * (BUDGET // 6)
    tree = _tree_with(folder, "scheduler_pp_mixin.py", source)
    return ["fingerprint", "--sglang-path", str(tree)]


def _one_line(head: str, item: Callable[[int], str], tail: str) -> str:
    """One logical line of about 1 MB: ``head``, items joined by commas, ``tail``."""
    parts, size, n = [head], len(head), 0
    while size < BUDGET - 200:
        parts.append(item(n) + ",")
        size += len(parts[-1])
        n += 1
    return "".join(parts) + tail + "\n"


def _scheduler_line(folder: Path, line: str) -> list[str]:
    tree = _tree_with(folder, "scheduler_pp_mixin.py", line)
    return ["fingerprint", "--sglang-path", str(tree)]


def list_line(folder: Path) -> list[str]:
    """The scheduler mixin as a 1 MB list literal of small numbers on one logical line."""
    return _scheduler_line(folder, _one_line("VALUES = [", lambda n: "1", "]"))


def call_line(folder: Path) -> list[str]:
    """The scheduler mixin as a call with 500,000 arguments on one logical line."""
    return _scheduler_line(folder, _one_line("register(", lambda n: "a", ")"))


def dict_line(folder: Path) -> list[str]:
    """The scheduler mixin as a 1 MB dict literal on one logical line."""
    return _scheduler_line(folder, _one_line("TABLE = {", lambda n: f"{n % 10}:{n % 10}", "}"))


def concat_line(folder: Path) -> list[str]:
    """The transport module as one 1 MB sum of string literals (a left-deep tree)."""
    line = "KEY = " + "+".join(["'a'"] * ((BUDGET - 100) // 4))
    tree = _tree_with(folder, "scheduler_pp_mixin.py", _scheduler_source())
    (tree / "sglang" / "srt" / "sampling" / "sampling_observer_pp.py").write_text(line + "\n")
    return ["fingerprint", "--sglang-path", str(tree)]


def many_clauses(folder: Path) -> list[str]:
    """The transport module as one ``try`` of 40,000 ``except`` clauses (valid, 1 MB)."""
    clauses = "".join(f"except E{n}:\n    x = {n}\n" for n in range(40_000))
    source = "try:\n    pass\n" + clauses[: BUDGET - 100]
    source = source[: source.rindex("except")]
    tree = _tree_with(folder, "scheduler_pp_mixin.py", _scheduler_source())
    (tree / "sglang" / "srt" / "sampling" / "sampling_observer_pp.py").write_text(source)
    return ["fingerprint", "--sglang-path", str(tree)]


def _scheduler_source() -> str:
    return (TREE / "sglang" / "srt" / "managers" / "scheduler_pp_mixin.py").read_text()


P = "__sampling_observer_output__."


def _hostile_dump(path: Path, seed: int) -> None:
    import torch

    key = ("\x1b[31m\u202e|<a>*\ud800" * 400)[:4000]
    message = {f"{P}{n}{key}": torch.full((2,), float(n + seed)) for n in range(120)}
    message[P + "scores"] = [float(n) for n in range(20_000)]
    torch.save(message, path)


def wide_dump(folder: Path) -> list[str]:
    """A dump of 120 auxiliary keys of 4,000 hostile characters each and a list of 20,000
    floats: inspect's table is as wide as its keys, every key full of escapes."""
    _hostile_dump(folder / "a.pt", 0)
    return ["inspect", str(folder / "a.pt")]


def wide_diff(folder: Path) -> list[str]:
    """Two such dumps whose every tensor differs: diff's table and findings, key by key."""
    _hostile_dump(folder / "a.pt", 0)
    _hostile_dump(folder / "b.pt", 1)
    return ["diff", str(folder / "a.pt"), str(folder / "b.pt")]


def wide_replay(folder: Path) -> list[str]:
    """The same dump through replay: every payload rebuilt with torch and popped."""
    _hostile_dump(folder / "a.pt", 0)
    return ["replay", str(folder / "a.pt")]


def wide_tensorize(folder: Path) -> list[str]:
    """The same dump through tensorize: the list converted, the dump written again."""
    _hostile_dump(folder / "a.pt", 0)
    return ["tensorize", str(folder / "a.pt"), "-o", str(folder / "fixed.pt")]


def small_replay(folder: Path) -> list[str]:
    """The baseline of the torch commands: replay of a 1 KB fixture (torch's import is most of
    it)."""
    return ["replay", str(REPO / "fixtures" / "dumps" / "aux_list.pt")]


def small_tensorize(folder: Path) -> list[str]:
    """The baseline of tensorize: a 1 KB fixture's list converted and the dump written."""
    return [
        "tensorize",
        str(REPO / "fixtures" / "dumps" / "aux_list.pt"),
        "-o",
        str(folder / "f.pt"),
    ]


CASES: dict[str, Callable[[Path], list[str]]] = {
    "check-skew, 1 MB of small fingerprints": many_fingerprints,
    "check-skew, two 500 KB fingerprints": large_fingerprints,
    "check-skew, one 200,000-character cell": wide_table,
    "fingerprint, 1 MB scheduler source": large_source,
    "fingerprint, 1 MB hostile source line": hostile_source,
    "fingerprint, 800 KB scheduler source cut in a method": invalid_source,
    "fingerprint, 1 MB transport function, last line invalid": invalid_function,
    "fingerprint, 1 MB list literal on one line": list_line,
    "fingerprint, a call of 500,000 arguments on one line": call_line,
    "fingerprint, 1 MB dict literal on one line": dict_line,
    "fingerprint, 1 MB sum of strings on one line": concat_line,
    "fingerprint, one try of 40,000 except clauses": many_clauses,
    "inspect, 480 KB of hostile keys and a 20,000-float list": wide_dump,
    "diff, two such dumps": wide_diff,
    "replay, one such dump": wide_replay,
    "tensorize, one such dump": wide_tensorize,
    "replay, a 1 KB fixture (baseline)": small_replay,
    "tensorize, a 1 KB fixture (baseline)": small_tensorize,
}


def _size(paths: list[str]) -> int:
    total = 0
    for arg in paths:
        path = Path(arg)
        if path.is_file():
            total += path.stat().st_size
        elif path.is_dir():
            total += sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return total


def main() -> int:
    """Write every case, run it in every format, print the figures; exit 1 over the target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default=None, help="where the inputs and runs go")
    parser.add_argument("--only", default="", help="run only the cases whose name holds this")
    args = parser.parse_args()
    root = Path(args.workdir or tempfile.mkdtemp(prefix="ppaux-bounds-"))
    env = {**os.environ, "NO_COLOR": "1", "PYTHONIOENCODING": "utf-8:strict", "COLUMNS": "100"}
    print(
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs, load average "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}; fresh python -m ppaux_cli per run\n"
    )
    print("| case | input KB | worst format | worst CPU s | its wall s | peak RSS MB | exits |")
    print("|---|---|---|---|---|---|---|")
    failed = []
    for name, make in CASES.items():
        if args.only not in name:
            continue
        folder = root / make.__name__
        folder.mkdir(parents=True, exist_ok=True)
        command = make(folder)
        size = _size(command[1:])
        runs, cpu = {}, {}
        for fmt in FORMATS if command[0] not in ("fingerprint", "tensorize") else ("text",):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            run = run_measured(
                [sys.executable, "-m", "ppaux_cli", *command, "--format", fmt]
                if command[0] not in ("fingerprint", "tensorize")
                else [sys.executable, "-m", "ppaux_cli", *command],
                folder / f"run-{fmt}",
                LIMIT_S * 30,
                env,
            )
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            # The launcher's own CPU is counted too: a few hundredths of a second.
            cpu[fmt] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            runs[fmt] = run
            if cpu[fmt] > LIMIT_S or run.rss_mb > LIMIT_MB or b"Traceback" in run.stderr:
                failed.append(f"{name} ({fmt}): {cpu[fmt]:.2f} s CPU, {run.rss_mb:.0f} MB")
        worst = max(runs, key=lambda f: cpu[f])
        exits = sorted({r.rc for r in runs.values()})
        print(
            f"| {name} | {size / 1000:.0f} | {worst} | {cpu[worst]:.2f} | "
            f"{runs[worst].seconds:.2f} | {max(r.rss_mb for r in runs.values()):.0f} | {exits} |"
        )
    print(f"\nover {LIMIT_S:.0f} s of CPU or {LIMIT_MB:.0f} MB, or a traceback: {len(failed)}")
    for line in failed:
        print(f"- {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
