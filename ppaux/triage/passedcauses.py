"""torch's c10d lines the scanner passed over just above a traceback's first line that say
what failed (:func:`~ppaux.triage.causeabove.c10d_cause`): kept while the log is read, given to
the traceback once it has ended cut before its exception line."""

from __future__ import annotations

from ppaux.patterns import lazy
from ppaux.triage.causeabove import C10D_WORDS, c10d_cause
from ppaux.triage.linetimes import wall_time
from ppaux.triage.records import Failure
from ppaux.triage.startup import in_flight

__all__ = ["MAX_CAUSES", "attach_causes", "passed_cause", "same_process_above", "spoken_above"]


#: At most this many causes are kept of one log (each a traceback's, in the log's order).
MAX_CAUSES = 16


def passed_cause(raw: bytes, previous: list[bytes]) -> tuple[int, str, str] | None:
    """(how many lines above the marked line ``raw`` it stands, the cause, what it says) where
    ``raw`` starts a traceback and ``previous`` (the lines the scanner passed over just before
    it, oldest first) hold torch's c10d lines that its port was in use, of the same process
    (:func:`same_process_above`); None otherwise. Cheap where they do not: the bytes are looked
    at before any line is decoded."""
    if b"Traceback" not in raw or not any(w in line for line in previous for w in C10D_WORDS):
        return None
    lines = [line.decode("utf-8", "replace") for line in previous]
    found = c10d_cause(lines)
    if found is None:
        return None
    index, name, said = found
    if not same_process_above(lines[index], lines[index + 1 :], raw.decode("utf-8", "replace")):
        return None
    return len(previous) - index, name, said


#: What names a line's process: a rank's prefix (``[rank1]:``), sglang's stage and rank
#: (``PP1 TP0``), a worker's pid (``pid=2493``).
_LABELS = lazy(
    r"\[(?:rank|default)(?P<rank>\d{1,6})\]:|(?P<stage>(?:DP\d{1,4} )?(?:PP\d{1,4} )?TP\d{1,4}"
    r"(?: EP\d{1,4})?)\]|\bpid=(?P<pid>\d{1,9})"
)
#: A time at a line's start (a collector's, a logger's), before its text.
_LEADING_TIME = lazy(r"^\W{0,4}(\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d)")
#: How far apart in the log's times torch's c10d lines and the traceback they caused may be:
#: the store raises as it fails to listen, within seconds.
_C10D_REACH_S = 60.0
#: A line that may stand between: torch's c10d lines (its ``socket.cpp`` warnings).
_C10D_LINE = lazy(r"\[c10d\]|socket\.cpp:\d")


def _labels(text: str) -> dict[str, str]:
    labels: dict[str, str] = {}
    for found in _LABELS.finditer(text[:300]):
        for key, value in found.groupdict().items():
            if value is not None:
                labels.setdefault(key, value)
    return labels


def _time(text: str) -> float | None:
    found = _LEADING_TIME.search(text)
    return None if found is None else wall_time(found.group(1))


def same_process_above(cause: str, between: list[str], traceback: str) -> bool:
    """Whether the c10d line ``cause``, ``between`` lines below it, is the same process's as the
    traceback's first line ``traceback``: the same rank, stage and pid where either line names
    one (``[rank1]:`` is no cause of ``[rank0]:``'s traceback), within
    :data:`_C10D_REACH_S` seconds where both give a time, and nothing between them but torch's
    own c10d lines or blank ones (a launcher's retry, a test that passed, another record)."""
    if _labels(cause) != _labels(traceback):
        return False
    start, end = _time(cause), _time(traceback)
    if start is not None and end is not None and abs(end - start) > _C10D_REACH_S:
        return False
    return all(not line.strip() or _C10D_LINE.search(line) for line in between)


#: What a line of NCCL's or torch's c10d's own holds: such lines may stand between a warning
#: and the traceback it caused.
_QUIET_WORDS = (b"NCCL", b"[c10d]", b"socket.cpp:")
#: Words of a record's text (``Prefill batch. #new-seq``), not a collector's framing of it
#: (``  },``, ``"tsNs": "2159938110123456000"``).
_WORDS = lazy(rb"[A-Za-z]{2,}[.,:;]? [A-Za-z#(]")


def spoken_above(raw: bytes, previous: list[bytes]) -> bool:
    """Whether ``raw`` starts a traceback and one of ``previous`` (the lines the scanner passed
    over just before it) is another record: words, neither NCCL's nor torch's c10d's
    (sglang's ``Prefill batch`` of the same stage, a launcher's line). A warning above such
    a line is no cause of the traceback: another record stands between them."""
    return b"Traceback" in raw and any(
        _WORDS.search(line) and not any(word in line for word in _QUIET_WORDS) for line in previous
    )


def attach_causes(
    source: str,
    failures: list[Failure],
    causes: list[tuple[int, int, str, str]],
    spoken: list[int] | None = None,
) -> None:
    """Give each traceback of ``failures`` that starts at a line of ``causes`` (the traceback's
    first line, the cause's line, the cause, what it says) and is cut before its exception its
    cause, where nothing else the log shows of it says one and no frame says its process was
    past its start-up (a set-up's failure is no cause of a step's). Mark each that starts at a
    line of ``spoken`` (:func:`spoken_above`) as one another record stands just above."""
    for failure in failures:
        failure.spoken_above = failure.line in (spoken or ())
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
