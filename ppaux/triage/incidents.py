"""From failures and events to incidents: a root, the ranks that share it, and what followed.

Records of every log are merged by time (records without a time keep their place in their
log). A failure of a communication kind (:func:`communication`: NCCL watchdog, gloo's closed
connection, TCPStore, DistBackendError, ...) is what a rank dies of when *another* rank died;
the others are root candidates. The earliest scheduler failure that is not of a communication
kind is an incident's root; later ones with the same error within :data:`SAME_MOMENT_S`
seconds are more ranks of the same incident; a different error starts an incident of its own.
Everything else (communication failures, watchdog and store lines, the parent's SIGQUIT) is
collateral of the latest incident that began before it (or of the first, when it came
earlier); a record without a time, of the latest incident before it in its own log.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from ppaux.sglang import search_message
from ppaux.triage.frames import in_scheduler_process
from ppaux.triage.records import Event, Failure

__all__ = ["SAME_MOMENT_S", "Incident", "communication", "incidents"]

#: Ranks that fail with the same error within this many seconds of the first are one incident.
SAME_MOMENT_S = 5.0

_COMMUNICATION_TYPES = re.compile(
    r"(?:^|\.)(?:DistBackendError|DistNetworkError|DistStoreError|DistError|"
    r"ConnectionResetError|ConnectionRefusedError|ConnectionAbortedError|BrokenPipeError|"
    r"ConnectionError)$"
)
_COMMUNICATION_TEXT = re.compile(
    r"Connection closed by peer|Connection reset by peer|Broken pipe|Watchdog caught|"
    r"NCCL (?:error|communicator was aborted)|ncclRemoteError|ncclSystemError|TCPStore|"
    r"recvValue failed|sendBytes failed|recvBytes failed|Socket Timeout|"
    r"Timed out waiting|timed out in|Connection refused|Connection was likely closed|"
    r"process group has been aborted|ProcessGroupGloo|ProcessGroupNCCL",
)


def communication(failure: Failure) -> bool:
    """True when ``failure`` is what a rank dies of when a peer died first."""
    if failure.exception is None:
        return False
    if _COMMUNICATION_TYPES.search(failure.exception):
        return True
    return bool(_COMMUNICATION_TEXT.search(failure.message[:2000]))


@dataclass
class Incident:
    """One root (the first failure) with the ranks that failed of it at the same moment, and
    the failures and events that followed."""

    root: Failure
    ranks: list[Failure] = field(default_factory=list)
    collateral: list[Failure] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)

    @property
    def members(self) -> list[Failure]:
        """The root and every rank that failed with it."""
        return [self.root, *self.ranks]


def _when(time: float | None, order: int) -> tuple[float, int]:
    return (time if time is not None else math.inf, order)


def _same(a: Failure, b: Failure) -> bool:
    return a.exception == b.exception and a.message.split("\n", 1)[0] == b.message.split("\n", 1)[0]


def incidents(
    failures: list[Failure], events: list[Event]
) -> tuple[list[Incident], list[Failure], list[Event]]:
    """(incidents, failures with no root, events with no root), merged by time.

    The last two are not empty only when no incident was found: communication failures and
    events whose cause is not in these logs.
    """
    # A bare traceback (no 'X hit an exception', no rank prefix) that went nowhere near a
    # scheduler (an HTTP request refused, a launcher's own error) is no PP failure: neither a
    # root nor what one caused.
    ordered = sorted(
        (f for f in failures if f.process or f.scheduler or _pp_related(f)),
        key=lambda f: _when(f.time, f.order),
    )
    # A traceback cut off before its exception says nothing of its cause: a root only when
    # no complete one is there.
    complete = [f for f in ordered if f.exception is not None and not communication(f)]
    candidates = complete or [f for f in ordered if f.exception is None]
    scheduler = [f for f in candidates if f.scheduler]
    roots = scheduler or candidates
    found: list[Incident] = []
    for failure in roots:
        joined = False
        for incident in found:
            root = incident.root
            close = (
                failure.time is None
                or root.time is None
                or abs(failure.time - root.time) <= SAME_MOMENT_S
            )
            if _same(failure, root) and close:
                incident.ranks.append(failure)
                joined = True
                break
        if not joined:
            found.append(Incident(failure))
    chosen = {id(f) for i in found for f in i.members}
    rest = [f for f in ordered if id(f) not in chosen]
    if not found:
        return [], rest, sorted(events, key=lambda e: _when(e.time, e.order))
    for failure in rest:
        _owner(found, failure).collateral.append(failure)
    for event in events:
        if event.kind == "capture":
            continue
        _owner(found, event).events.append(event)
    return found, [], []


def _pp_related(failure: Failure) -> bool:
    """True for a bare traceback that a scheduler raised or may have: cut off before its
    exception, one of sglang's messages, or through its scheduler-process code."""
    if failure.exception is None or in_scheduler_process(failure.frames):
        return True
    chain = [(failure.exception, failure.message), *failure.chain]
    return any(search_message(message.split("\n", 1)[0]) for _, message in chain)


def _owner(found: list[Incident], record: Failure | Event) -> Incident:
    """The latest incident whose root came before ``record``; the first if none did.

    A record without a time (torch's C++ lines carry no year) belongs to the latest root
    before it in its own log, where there is one: its place in that log is all that says when
    it came, so a later incident of the same log is never its cause.
    """
    time, order = record.time, record.order
    if time is None:
        earlier = [
            i for i in found if i.root.source == record.source and i.root.order < record.order
        ]
        if earlier:
            return max(earlier, key=lambda i: i.root.order)
    owner = found[0]
    for incident in found:
        if _when(incident.root.time, incident.root.order) <= _when(time, order):
            owner = incident
    return owner
