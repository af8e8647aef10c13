"""torch's c10d lines the scanner passed over just above a traceback's first line that say
what failed (:func:`~ppaux.triage.causeabove.c10d_cause`): kept while the log is read, given to
the traceback once it has ended cut before its exception line."""

from __future__ import annotations

from ppaux.triage.causeabove import C10D_WORDS, c10d_cause
from ppaux.triage.records import Failure
from ppaux.triage.startup import in_flight

__all__ = ["MAX_CAUSES", "attach_causes", "passed_cause"]


#: At most this many causes are kept of one log (each a traceback's, in the log's order).
MAX_CAUSES = 16


def passed_cause(raw: bytes, previous: list[bytes]) -> tuple[int, str, str] | None:
    """(how many lines above the marked line ``raw`` it stands, the cause, what it says) where
    ``raw`` starts a traceback and ``previous`` (the lines the scanner passed over just before
    it, oldest first) hold torch's c10d lines that its port was in use; None otherwise. Cheap
    where they do not: the bytes are looked at before any line is decoded."""
    if b"Traceback" not in raw or not any(w in line for line in previous for w in C10D_WORDS):
        return None
    found = c10d_cause([line.decode("utf-8", "replace") for line in previous])
    if found is None:
        return None
    index, name, said = found
    return len(previous) - index, name, said


def attach_causes(
    source: str, failures: list[Failure], causes: list[tuple[int, int, str, str]]
) -> None:
    """Give each traceback of ``failures`` that starts at a line of ``causes`` (the traceback's
    first line, the cause's line, the cause, what it says) and is cut before its exception its
    cause, where nothing else the log shows of it says one and no frame says its process was
    past its start-up (a set-up's failure is no cause of a step's)."""
    for marked, line, name, said in causes:
        for failure in failures:
            if (
                failure.line == marked
                and failure.exception is None
                and failure.said is None
                and failure.warned is None
                and not failure.chain
                and not in_flight(failure)
            ):
                failure.warned = (name, said, f"{source}:{line}")
                break
