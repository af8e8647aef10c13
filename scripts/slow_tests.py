"""Write tests/slow_tests.txt: the test functions that take half a second or more.

The fast tier (``pytest -m fast``) leaves them out. Their time comes from what they start (a
check-observer child importing torch, ``python -m ppaux_cli``, torch in a sandbox, a browser) or
from running a whole corpus, and it is measured, not guessed: run the suite with
``--junitxml=FILE`` (any tier that holds them, ``-n`` or not), then::

    python scripts/slow_tests.py FILE [FILE ...] [--threshold SECONDS]

A function is slow when any one of its cases took ``--threshold`` seconds (default 0.5) or
more in any of the runs given. Functions measured in no run keep their line as it was: the
list only grows or shrinks by what was measured.
"""

from __future__ import annotations

import argparse
import xml.etree.ElementTree as ET
from pathlib import Path

LIST = Path(__file__).resolve().parent.parent / "tests" / "slow_tests.txt"
HEADER = (
    "# Test functions that take half a second or more (written by scripts/slow_tests.py from a\n"
    "# measured run); the fast tier, pytest -m fast, leaves them out. One path::function a line.\n"
)


def measured(paths: list[str]) -> dict[str, float]:
    """The longest case of each test function (``tests/x.py::f``) over the JUnit files."""
    longest: dict[str, float] = {}
    for path in paths:
        for case in ET.parse(path).iter("testcase"):
            module = case.get("classname", "").replace(".", "/") + ".py"
            function = case.get("name", "").split("[", 1)[0]
            key = f"{module}::{function}"
            longest[key] = max(longest.get(key, 0.0), float(case.get("time", "0")))
    return longest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("junit", nargs="+", help="JUnit XML files of measured runs")
    parser.add_argument("--threshold", type=float, default=0.5, help="seconds (default 0.5)")
    args = parser.parse_args()
    times = measured(args.junit)
    kept = set()
    if LIST.exists():
        kept = {
            line.strip()
            for line in LIST.read_text().splitlines()
            if line.strip() and not line.startswith("#") and line.strip() not in times
        }
    slow = kept | {key for key, seconds in times.items() if seconds >= args.threshold}
    LIST.write_text(HEADER + "".join(f"{key}\n" for key in sorted(slow)))
    print(f"{len(slow)} slow test functions written to {LIST}")


if __name__ == "__main__":
    main()
