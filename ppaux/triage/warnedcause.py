"""NCCL's warning as the cause of the root it stands above: a communicator's set-up (or a
transfer in flight) that NCCL reported failed, just before a traceback cut before its
exception line.
"""

from __future__ import annotations

from ppaux.triage.ncclflight import flight_failure
from ppaux.triage.ncclsetup import setup_failure
from ppaux.triage.records import Event, Failure
from ppaux.triage.startup import in_flight, near

__all__ = ["warned_before"]


def warned_before(roots: list[Failure], event: Event, records: list[Failure | Event]) -> None:
    """Name NCCL's warning ``event`` that a communicator's set-up failed (or that a transfer
    failed in flight: :func:`~ppaux.triage.ncclflight.flight_failure`) as the cause of the
    root it stands above in its log, where that root's traceback is cut before its exception
    line (sglang's start-up traceback after NCCL's ``socketPollConnect: Connect to ...
    returned 113(No route to host)``): the only error the log shows before it, no other
    record (``records``) between them but NCCL's own warnings of the same process. Where the
    log gives both times, within the minutes a set-up takes; where one has none (NCCL's own
    lines carry none), the warning stands just above the root, where NCCL's return codes lead
    to it (:func:`~ppaux.triage.startup.near`), and, for a set-up's warning, no frame of the
    root says its process was past its start-up (a step, a loop, a collective): a warning
    hours earlier, or a set-up's above another program's step, is no cause."""
    if event.kind != "nccl-warn":
        return
    flight = None if (said := setup_failure(event.text)) else flight_failure(event.text)
    said = said or flight
    if said is None:
        return
    for root in roots:
        if (
            root.source == event.source
            and root.order > event.order
            and root.exception is None
            and root.said is None
            and root.warned is None
            and not root.spoken_above
            and _close(event, root, flight is not None)
            and not any(_between(r, event, root) for r in records)
        ):
            root.warned = (*said, f"{event.source}:{event.line}")
            return


def _close(event: Event, root: Failure, flight: bool = False) -> bool:
    """Whether NCCL's warning ``event`` is near enough above ``root`` to be its cause: by both
    times, where the log gives them; else by its place and, for a set-up's warning (not
    ``flight``: a collective's in flight), ``root``'s frames."""
    if root.time is not None and event.time is not None:
        return not _long_after(root.time, event.time)
    return near(event.line, root.line) and (flight or not in_flight(root))


#: Who a record is of where its line names no process.
_NAMELESS = "a process"


def _between(record: Failure | Event, event: Event, root: Failure) -> bool:
    """Whether ``record`` stands between NCCL's warning ``event`` and ``root`` in their log, and
    is not another of NCCL's warnings of the same process, or of a process one of the two lines
    does not name (its return codes, the next call it refused: ``Attempt to use communicator
    before the previous operation returned``)."""
    if record.source != root.source or not event.order < record.order < root.order:
        return False
    if not isinstance(record, Event) or record.kind != "nccl-warn":
        return True
    return _NAMELESS not in (record.who, event.who) and record.who != event.who  # known, other


#: How long after NCCL's set-up warning a cut traceback may start and still be its failure: the
#: set-up raises within the bootstrap's timeout, minutes at most.
_SETUP_REACH_S = 600.0


def _long_after(later: float | None, earlier: float | None) -> bool:
    """Whether the log's times put ``later`` more than :data:`_SETUP_REACH_S` after
    ``earlier`` (never, where either is not known)."""
    return later is not None and earlier is not None and later - earlier > _SETUP_REACH_S
