"""Numbers in a record longer than any real one (a rank, a pid, an exit code, a source line):
the record is kept and the number said too long to read, never cut into a shorter one that
the log does not hold. A line that holds one is named in PP811 (:data:`LONG_NUMBER_PLACES`)."""

from __future__ import annotations

__all__ = ["LONG_NUMBER_PLACES", "number_said"]

#: Where a record holds a number that triage reads, other than a rank's prefix or a frame's
#: line: mpirun's rank and pid, a C++ source place (NCCL's ``init.cc:N``), an exit code.
LONG_NUMBER_PLACES = (
    r"process rank \d{7,}|with PID \d{10,}|\.(?:cc|c|h|cu|cpp):\d{7,}"
    r"|exitcode\s*[:=]\s*-?\d{10,}|\(pid: \d{10,}"
)


def number_said(digits: str, most: int) -> str:
    """``digits`` as a message says them: the number where it has at most ``most`` digits,
    else how many it has ('(5000 digits, too long to read)'); a number a record kept only the
    start and the end of (``123 ... 789``) is too long, its digits not counted."""
    if " ... " in digits:
        return "(a number too long to read)"
    sign = "-" if digits.startswith("-") else ""
    bare = digits.lstrip("-")
    if len(bare) <= most:
        return sign + str(int(bare))
    return f"({sign}{len(bare)} digits, too long to read)"
