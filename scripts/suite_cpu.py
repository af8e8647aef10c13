"""Where the test suite's CPU time goes: each module's tests, summed, from a run's CPU log.

A run with ``PPAUX_TEST_CPU_LOG=FILE`` (``tests/conftest.py``) appends one line per test as it
ends, ``SECONDS<TAB>NODEID``: its CPU time from setup to teardown, its own process's and its
waited children's (the JUnit property ``cpu``). One run gives the whole table, and a run
stopped early keeps what it measured::

    PPAUX_TEST_CPU_LOG=cpu.tsv python -m pytest -n 2 -p no:randomly
    python scripts/suite_cpu.py cpu.tsv [--top N] [--tests N]

prints a Markdown table of the modules, most CPU first (tests, CPU seconds summed, the share of
the whole), and with ``--tests N`` the N tests that cost most.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def read_log(path: Path) -> dict[str, float]:
    """Each test's CPU seconds by node id; cases that share an id (a parameter list whose ids
    repeat) are summed under it, and counted as one test."""
    spent: dict[str, float] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        seconds, _, nodeid = line.partition("\t")
        if nodeid:
            spent[nodeid] = spent.get(nodeid, 0.0) + float(seconds)
    return spent


def per_module(spent: dict[str, float]) -> list[tuple[str, int, float]]:
    """``(module, tests, CPU seconds)`` of each module, most CPU first."""
    modules: dict[str, list[float]] = {}
    for nodeid, seconds in spent.items():
        modules.setdefault(nodeid.split("::", 1)[0], []).append(seconds)
    rows = [(module, len(times), sum(times)) for module, times in modules.items()]
    return sorted(rows, key=lambda row: (-row[2], row[0]))


def table(spent: dict[str, float], top: int | None = None, tests: int = 0) -> str:
    """The Markdown tables :func:`main` prints."""
    total = sum(spent.values())
    rows = per_module(spent)
    lines = ["| module | tests | CPU s | share |", "|---|---:|---:|---:|"]
    for module, count, seconds in rows[:top]:
        share = 100 * seconds / total if total else 0.0
        lines.append(f"| {Path(module).name} | {count:,} | {seconds:,.1f} | {share:.1f} % |")
    if top is not None and len(rows) > top:
        rest = rows[top:]
        seconds = sum(row[2] for row in rest)
        share = 100 * seconds / total if total else 0.0
        count = sum(row[1] for row in rest)
        lines.append(f"| {len(rest)} other modules | {count:,} | {seconds:,.1f} | {share:.1f} % |")
    lines.append(f"| all | {len(spent):,} | {total:,.1f} | 100 % |")
    if tests:
        lines += ["", "| test | CPU s |", "|---|---:|"]
        costly = sorted(spent.items(), key=lambda item: (-item[1], item[0]))[:tests]
        lines += [f"| `{nodeid}` | {seconds:.1f} |" for nodeid, seconds in costly]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path, help="the file PPAUX_TEST_CPU_LOG named")
    parser.add_argument("--top", type=int, help="the N modules that cost most, then the rest")
    parser.add_argument("--tests", type=int, default=0, help="also the N tests that cost most")
    args = parser.parse_args()
    print(table(read_log(args.log), args.top, args.tests))


if __name__ == "__main__":
    main()
