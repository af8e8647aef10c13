"""A chain's header (``During handling of the above exception, another exception occurred:``,
``The above exception was the direct cause of the following exception:``) the scanner passed
over just above a traceback's first line, after a piece of a traceback whose header the paste
lost (its last caret line, ``^^^^``, then its exception line): one process's chained traceback,
never a second process's failure. The piece's exception is the chain's first; the traceback
below goes on from it. Where that traceback is cut before its own exception line, the piece's
exception is the only one the log shows of it: it stands, the handler's frames add nothing."""

from __future__ import annotations

from ppaux.triage.records import Failure

__all__ = ["chained_above", "join_chains"]

#: The words of Python's two chain headers.
_HEADERS = (
    b"During handling of the above exception, another exception occurred",
    b"The above exception was the direct cause of the following exception",
)
#: How many lines a piece's first line may stand above the chained traceback's first line.
_REACH = 64


def chained_above(raw: bytes, previous: list[bytes]) -> bool:
    """Whether ``raw`` starts a traceback and one of ``previous`` (the lines the scanner passed
    over just before it) is a chain's header. Cheap: bytes only."""
    return b"Traceback" in raw and any(h in line for line in previous for h in _HEADERS)


def _piece_before(failures: list[Failure], index: int) -> Failure | None:
    """The piece of a traceback just before ``failures[index]`` in the log, of its process."""
    later = failures[index]
    for earlier in reversed(failures[:index]):
        if earlier.source != later.source or earlier.order >= later.order:
            continue  # the order read: a log exported newest first is numbered backwards
        if (
            earlier.fragment
            and earlier.exception is not None
            and (earlier.stream, earlier.ranks) == (later.stream, later.ranks)
            and abs(later.line - earlier.line) <= _REACH
        ):
            return earlier
        return None
    return None


def join_chains(failures: list[Failure], chained: list[int]) -> list[Failure]:
    """``failures`` (in the log's order) with each traceback that starts at a line of
    ``chained`` (:func:`chained_above`) joined to the piece just above it: the piece's
    exception first in its chain where the traceback shows its own, else the piece alone."""
    dropped: set[int] = set()
    for index, later in enumerate(failures):
        if later.line not in chained or later.chain:
            continue
        earlier = _piece_before(failures, index)
        if earlier is None or id(earlier) in dropped:
            continue
        if later.exception is None:
            dropped.add(id(later))
            continue
        later.chain = [(earlier.exception or "", earlier.message)]
        dropped.add(id(earlier))
    return [f for f in failures if id(f) not in dropped]
