"""Write tests/slow_tests.txt: the test functions that take half a second or more, or a fifth
of a second of CPU time in a case (a second in all their cases).

The fast tier (``pytest -m fast``) leaves them out. Their time comes from what they start (a
check-observer child importing torch, ``python -m ppaux_cli``, torch in a sandbox, a browser) or
from running a whole corpus, and it is measured, not guessed: run the suite with
``--junitxml=FILE`` (any tier that holds them, ``-n`` or not), then::

    python scripts/slow_tests.py FILE [FILE ...] [--threshold SECONDS] [--cpu SECONDS]

A function is slow when any one of its cases took ``--threshold`` seconds (default 0.5) or
more in any of the runs given. Functions measured in no run keep their line as it was: the
list only grows or shrinks by what was measured.

Wall time depends on what else loads the machine. ``--cpu SECONDS`` measures by CPU time
instead: each case's user and system time, its own process's and its children's, which
``tests/conftest.py`` writes as the case's JUnit property ``cpu``. A function one of whose cases
spent ``SECONDS`` or more is added; none is taken off, since a test's CPU time does not count
the time it waits (a timeout, a sleep), which the wall-time run sees. ``--cpu-total SECONDS``
adds as well each function whose cases spent ``SECONDS`` or more together: a function of many
cheap cases (one per file of a corpus) costs the tier as much as one slow case.
"""

from __future__ import annotations

import argparse
import xml.etree.ElementTree as ET
from pathlib import Path

LIST = Path(__file__).resolve().parent.parent / "tests" / "slow_tests.txt"
HEADER = (
    "# Test functions that take half a second or more, or 0.2 s of CPU time in a case or 1 s in\n"
    "# all their cases (written by scripts/slow_tests.py from measured runs); the fast tier,\n"
    "# pytest -m fast, leaves them out. One path::function a line.\n"
)


def measured(paths: list[str], cpu: bool = False, total: bool = False) -> dict[str, float]:
    """The longest case of each test function (``tests/x.py::f``) over the JUnit files: its
    wall time, or with ``cpu`` its property ``cpu`` (cases without one are left out); with
    ``total`` too, the sum of its cases' ``cpu`` in each file, the largest of those sums."""
    longest: dict[str, float] = {}
    for path in paths:
        spent_here: dict[str, float] = {}
        for case in ET.parse(path).iter("testcase"):
            module = case.get("classname", "").replace(".", "/") + ".py"
            function = case.get("name", "").split("[", 1)[0]
            key = f"{module}::{function}"
            if cpu:
                spent = [
                    p.get("value", "0") for p in case.iter("property") if p.get("name") == "cpu"
                ]
                if not spent:
                    continue
                seconds = float(spent[0])
            else:
                seconds = float(case.get("time", "0"))
            if total:
                spent_here[key] = spent_here.get(key, 0.0) + seconds
                seconds = spent_here[key]
            longest[key] = max(longest.get(key, 0.0), seconds)
    return longest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("junit", nargs="+", help="JUnit XML files of measured runs")
    parser.add_argument("--threshold", type=float, default=0.5, help="seconds (default 0.5)")
    parser.add_argument(
        "--cpu", type=float, metavar="SECONDS", help="measure by CPU time instead; only adds"
    )
    parser.add_argument(
        "--cpu-total",
        type=float,
        metavar="SECONDS",
        help="with --cpu, also a function whose cases spent SECONDS together; only adds",
    )
    args = parser.parse_args()
    cpu = args.cpu is not None
    times = measured(args.junit, cpu=cpu)
    threshold = args.cpu if cpu else args.threshold
    kept = set()
    if LIST.exists():
        kept = {
            line.strip()
            for line in LIST.read_text().splitlines()
            if line.strip() and not line.startswith("#") and (cpu or line.strip() not in times)
        }
    slow = kept | {key for key, seconds in times.items() if seconds >= threshold}
    if cpu and args.cpu_total is not None:
        totals = measured(args.junit, cpu=True, total=True)
        slow |= {key for key, seconds in totals.items() if seconds >= args.cpu_total}
    LIST.write_text(HEADER + "".join(f"{key}\n" for key in sorted(slow)))
    print(f"{len(slow)} slow test functions written to {LIST}")


if __name__ == "__main__":
    main()
