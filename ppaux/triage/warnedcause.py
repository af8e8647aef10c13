"""A warning as the cause of the root it stands above, a traceback cut before its exception
line: NCCL's that a communicator's set-up (or a transfer in flight) failed, just before it
(:func:`warned_before`); a record that quotes an import that failed for a library's undefined
symbol, logged as the program went on, anywhere above it (:func:`symbol_before`).
"""

from __future__ import annotations

from ppaux.triage.buildsteps import SYMBOL_CAUSE, quoted_symbol
from ppaux.triage.causeabove import ABOVE_CAUSES, cause_words
from ppaux.triage.ncclflight import flight_failure
from ppaux.triage.ncclsetup import setup_failure, setup_words
from ppaux.triage.records import Event, Failure
from ppaux.triage.startup import in_flight, near

__all__ = ["setup_named", "symbol_before", "warned_before", "warned_words"]


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


def symbol_before(roots: list[Failure], event: Event, failures: list[Failure]) -> None:
    """Name the record ``event`` quoting an import that failed for an undefined symbol (vLLM's
    ``Failed to import from vllm._C with ImportError('...: undefined symbol: ...')``) as the
    cause of the first root below it in its log, where that root's traceback is cut before
    its exception and no failure whose exception the log shows (``failures``) stands between
    them: the program went on without the library, and failed where it needed it."""
    if event.kind != "import-warn" or (found := quoted_symbol(event.text)) is None:
        return
    below = [r for r in roots if r.source == event.source and r.order > event.order]
    if not below:
        return
    root = min(below, key=lambda r: r.order)
    if root.exception is not None or root.said is not None or root.warned is not None:
        return
    if any(
        f.source == root.source and event.order < f.order < root.order and f.exception
        for f in failures
    ):
        return
    said = f"{found[0]}: undefined symbol: {found[1]}"
    root.warned = (SYMBOL_CAUSE, said, f"{event.source}:{event.line}")


def setup_named(roots: list[Failure]) -> str | None:
    """The first communication cause a cut root was given (NCCL's set-up failure, torch's c10d
    port in use: :attr:`~ppaux.triage.records.Failure.warned`), never an import's."""
    return next((w[0] for r in roots if (w := r.warned) and w[0] != SYMBOL_CAUSE), None)


def warned_words(name: str, said: str) -> str:
    """The words for the cause ``name`` a cut traceback was given
    (:attr:`~ppaux.triage.records.Failure.warned`)."""
    if name in ABOVE_CAUSES:
        return cause_words(name, said)
    if name == SYMBOL_CAUSE:
        return f"a record that a compiled extension did not load ({said}"
    return f"NCCL's warning that {setup_words(name, said)}"
