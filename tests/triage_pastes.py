"""What the paste tests compare: a report's roots, and a log as a terminal wraps it."""

from __future__ import annotations

from pathlib import Path

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
#: sglang's own log of the failure this project started from (rank 0's pop refusing a list).
AUX = LOGS / "sglang-aux-list.log"


def roots(report):
    """(code, rank, kind, exception) of each root finding (PP801, PP802) and of PP809."""
    return [
        (f.code, f.key, f.extra.get("kind"), f.extra.get("exception"))
        for f in report.findings
        if f.code in ("PP801", "PP802", "PP809")
    ]


def wrapped(text: str, width: int) -> str:
    """``text`` cut into rows of ``width`` characters, as a terminal shows a long line."""
    return "".join(
        "".join(line[i : i + width] + "\n" for i in range(0, len(line), width)) or "\n"
        for line in text.split("\n")[:-1]
    )
