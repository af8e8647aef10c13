"""From failures and events to incidents: a root, the ranks that share it, and what followed.

Records are ordered by time only where their times compare (:func:`seconds_between`): times
with a zone (a collector's) across every log, and sglang's own times, which have none (the
local time of a host, zone unknown), only within their log. Records of one log keep its order;
records whose time has no zone (or that have no time) come after those with a zoned time,
log after log in the order the logs were given, and are never placed among another log's by
their times. A failure of a communication kind (:func:`communication`: NCCL watchdog, gloo's closed
connection, TCPStore, DistBackendError, ...) is what a rank dies of when *another* rank died;
the others are root candidates. The earliest scheduler failure that is not of a communication
kind is an incident's root; later ones with the same error within :data:`SAME_MOMENT_S`
seconds (or whose times do not compare, unless they are more than a day apart:
:func:`~ppaux.triage.runs.far_apart`) are more ranks of the same incident; a different error
starts an incident of its own.
Everything else (communication failures, watchdog and store lines, the parent's SIGQUIT) is
collateral of the latest incident that began before it (or of the first, when it came
earlier); a record without a time, of the latest incident before it in its own log. A
failure that is not a communication one (a traceback cut before its exception included) whose
time is more than :data:`FOLLOWS_S` from every rank of that incident
(:func:`~ppaux.triage.runs.far_apart`: another run's) is collateral of the incident nearest
to it in time that is not so far, else the root of an incident of its own.
A relay (:func:`~ppaux.triage.deaths.relay`: an engine's exception saying that a worker
failed) is collateral of the failure it relays where the log holds that one; where it quotes
the worker's error and the log holds nothing else, it is the root, named after the worker the
log reports dead next; where it quotes nothing, it is a death whose cause is elsewhere.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ppaux.triage.candidates import (
    SAME_MOMENT_S,
    bare_cut,
    communication,
    cut_roots,
    handled,
    init_roots,
    order_key,
    own,
    pp_related,
    ranked,
    stray,
)
from ppaux.triage.deaths import death_of, launcher_summary, relay, worker_name
from ppaux.triage.logorder import own_log_root
from ppaux.triage.records import Event, Failure, process_of
from ppaux.triage.runs import SKEW_S, far_apart, seconds_between
from ppaux.triage.sameprocess import launchers_own, without_own_aborts
from ppaux.triage.warnedcause import symbol_before, warned_before

__all__ = ["FOLLOWS_S", "SAME_MOMENT_S", "Incident", "communication", "incidents"]

#: A failure (not a communication one) more than this many seconds from every rank of an
#: incident did not follow from that incident's root (a watchdog's timeout is minutes).
FOLLOWS_S = 3600.0


@dataclass
class Incident:
    """One root (the first failure) with the ranks that failed of it at the same moment, and
    the failures and events that followed."""

    root: Failure
    ranks: list[Failure] = field(default_factory=list)
    collateral: list[Failure] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    #: A launcher's records of the root's own exit (:func:`~ppaux.triage.sameprocess.
    #: launchers_own`): no failure that followed, the same one told again.
    own: list[Failure | Event] = field(default_factory=list)

    @property
    def members(self) -> list[Failure]:
        """The root and every rank that failed with it."""
        return [self.root, *self.ranks]


def _same(a: Failure, b: Failure) -> bool:
    return a.exception == b.exception and a.message.split("\n", 1)[0] == b.message.split("\n", 1)[0]


def incidents(
    failures: list[Failure], events: list[Event]
) -> tuple[list[Incident], list[Failure], list[Event]]:
    """(incidents, failures with no root, events with no root), merged by time.

    The last two are not empty only when no incident was found: communication failures and
    events whose cause is not in these logs.
    """
    failures = without_own_aborts(failures)
    ordered, roots, strays = _roots(failures, events)
    found = _grouped(roots)
    chosen = {id(f) for i in found for f in i.members}
    rest = [f for f in ordered if id(f) not in chosen]
    if not found:
        return [], [f for f in rest if id(f) not in strays], sorted(events, key=order_key)
    _attach_failures(found, rest)
    _attach_events(found, events, failures)
    return found, [], []


def _roots(
    failures: list[Failure], events: list[Event]
) -> tuple[list[Failure], list[Failure], set[int]]:
    """(the failures in order, the root candidates among them, the ids of stray fragments)."""
    # A bare traceback (no 'X hit an exception', no rank prefix) that went nowhere near a
    # scheduler (an HTTP request refused, a launcher's own error) is no PP failure: neither a
    # root nor what one caused.
    # A traceback that ends in its exception under torch's rank prefix ('[rank1]: ...') is
    # that rank's failure, whatever its frames; where nothing else failed, so is a complete
    # traceback with no frame of sglang's (a script's, torch's own), though not a request
    # that sglang's server refused.
    ordered = [
        f for f in failures if f.process or f.scheduler or f.fragment or pp_related(f) or ranked(f)
    ]
    if all(relay(f) or bare_cut(f) for f in ordered):
        # Nothing but relays (a relay says another process failed): that process's own
        # complete traceback is what they relay. Nor does a bare traceback cut before its
        # exception hide a complete one: the one that shows its exception is the root.
        kept = {id(f) for f in ordered}
        ordered += [f for f in failures if id(f) not in kept and own(f) and not handled(f, ordered)]
    ordered.sort(key=order_key)
    # A traceback cut off before its exception says nothing of its cause: a root only when
    # no complete one is there.
    # A process's death that another reports (a signal, a Ray worker gone) and a launcher's
    # summary of a failed child are never roots: what killed the process is not in the log.
    deaths: list[Failure | Event] = [f for f in ordered if death_of(f) is not None]
    deaths += [e for e in events if e.kind == "death"]
    told = {id(f) for f in ordered if launcher_summary(f)} | {id(f) for f in deaths}
    ordered_roots = [f for f in ordered if id(f) not in told]
    # A relay that quotes the error it relays (a relay that does not is a death, above) is
    # collateral of the failure it relays where the log shows that one, else its only word.
    complete = [f for f in ordered_roots if f.exception is not None and not communication(f)]
    relays = [f for f in complete if relay(f)]
    complete = [f for f in complete if not relay(f)] or relays
    # A fragment with neither its header nor its exception (a few frames, another process's
    # output written in between) after a watchdog's timeout in the same log is a stray piece of
    # a process the watchdog took down: never a root, and no failure of its own where nothing
    # else is one.
    strays = {id(f) for f in ordered_roots if stray(f, events)}
    cuttable = [f for f in ordered_roots if id(f) not in strays]
    candidates = complete or init_roots(ordered_roots) or cut_roots(cuttable, deaths)
    scheduler = [f for f in candidates if f.scheduler or ranked(f)]
    return ordered, scheduler or candidates, strays


def _grouped(roots: list[Failure]) -> list[Incident]:
    """The roots as incidents: a failure with the same error at the same moment as an
    incident's root is one more rank of it; a crash after a root is left for collateral."""
    found: list[Incident] = []
    for failure in roots:
        joined = False
        for incident in found:
            root = incident.root
            close = not far_apart(root, failure, SAME_MOMENT_S)
            if _crash_after(root, failure):  # what followed: collateral, below
                joined = True
                break
            if _same(failure, root) and close:
                incident.ranks.append(failure)
                joined = True
                break
        if not joined:
            found.append(Incident(failure))
    return found


def _attach_failures(found: list[Incident], rest: list[Failure]) -> None:
    """Give each failure that is no incident's member to the incident it followed, or make it
    the root of an incident of its own (it failed first, or belongs to another run or log)."""
    for failure in rest:
        owner = _owner(found, failure)
        if _failed_before(failure, owner) or own_log_root(
            failure, owner.root, {i.root.source for i in found}
        ):  # it failed first, or no time orders the two logs: each has its root
            found.append(Incident(failure))
            continue
        if (failure.exception is None or not communication(failure)) and _far(owner, failure):
            # a failure (not a communication one) at a time far from that incident's, a
            # traceback cut before its exception included: another run's (logs of several
            # runs given together); the nearest incident in time that is not far from it,
            # else an incident of its own
            near = [i for i in found if not _far(i, failure)]
            if not near:
                found.append(Incident(failure))
                continue
            owner = min(near, key=lambda i: _distance(i, failure))
        if launchers_own(owner.root, owner.own, failure):
            owner.own.append(failure)
            continue
        if _thread_of(owner.root, failure):  # the root's process, told by another thread
            failure.stream, failure.ranks = owner.root.stream, owner.root.ranks
            owner.ranks.append(failure)
            continue
        owner.collateral.append(failure)


def _attach_events(found: list[Incident], events: list[Event], failures: list[Failure]) -> None:
    """Give each event to the incident it followed; NCCL's warnings and an import's warning
    only as the cause of a cut traceback below them."""
    # the death that names a relay's worker is that worker's end: never collateral of itself
    named = {id(e) for i in found if relay(i.root) and (e := _name_relayed(i.root, events))}
    for event in events:
        if id(event) in named:
            continue
        if event.kind == "nccl-note":  # NCCL went on without what it names: no failure
            continue
        if event.kind in ("capture", "nccl-warn"):
            # NCCL's warnings matter only in a log that holds nothing else, or as the cause
            # of a traceback cut after them
            warned_before([i.root for i in found], event, [*failures, *events])
            continue
        if event.kind == "import-warn":  # a warning, or the cause of a cut traceback below it
            symbol_before([i.root for i in found], event, failures)
            continue
        owner = _owner(found, event)
        if launchers_own(owner.root, owner.own, event):
            owner.own.append(event)
            continue
        owner.events.append(event)


def _name_relayed(root: Failure, events: list[Event]) -> Event | None:
    """Give a relay that quotes a worker's error the worker's name, where the log names the
    worker that died next in the same log (vLLM's ``Worker proc VllmWorker-0 died
    unexpectedly``): the error is that worker's, the relay its engine's report of it. The
    death that names it, or None."""
    for event in events:
        if event.kind != "death" or event.source != root.source or event.order < root.order:
            continue
        name = worker_name(event.text)  # the first death after the relay, or none
        if name is None:
            return None
        if not (root.stream or "").endswith(name):
            engine = process_of(root.stream)
            root.stream = name if engine is None else f"{engine}, {name}"
        return event
    return None


def _thread_of(root: Failure, failure: Failure) -> bool:
    """True where ``failure`` is a traceback that Python's ``threading`` said a thread raised
    (``Exception in thread Thread-4 (forward_thread_func):``), naming no process, right next
    to ``root`` in its log (no record between them) with the same error: the root's process
    failing in a thread of its own too (sglang's overlap thread, then its scheduler), one
    process, never another one's failure that followed."""
    if failure.thread is None or failure.ranks or process_of(failure.stream) is not None:
        return False
    near = abs(root.order - failure.order) == 1
    return failure.source == root.source and near and _same(failure, root)


#: The fault handler's words for a process's own crash (``Fatal Python error: Aborted``).
_FAULT = "Fatal Python error"


def _crash_after(root: Failure, failure: Failure) -> bool:
    """True where ``failure`` is the fault handler's dump of a process's crash below the
    root's own dump in the same log, and no times put the two at one moment (or the root
    first): the second process crashed after the first (its peer gone), what followed, never
    a second root."""
    if failure.exception != _FAULT or root.exception != _FAULT:
        return False
    if failure.source != root.source or failure.order < root.order:
        return False
    return root.time is None or failure.time is None or failure.time > root.time


def _window(incident: Incident) -> list[Failure]:
    """The records of ``incident`` that have a time: its root and the ranks that failed with
    it (what followed is judged against these, never against what followed before it)."""
    return [f for f in incident.members if f.time is not None]


def _far(incident: Incident, failure: Failure) -> bool:
    """True when ``failure`` has a time and every rank of ``incident`` with one is more than
    :data:`FOLLOWS_S` from it (:func:`~ppaux.triage.runs.far_apart`, the rule that keeps two
    failures from being one moment; a day more where the times do not compare): it cannot
    have followed from that incident's root."""
    timed = _window(incident)
    if failure.time is None or not timed:
        return False
    return all(far_apart(record, failure, FOLLOWS_S) for record in timed)


def _failed_before(failure: Failure, incident: Incident) -> bool:
    """Whether times that compare put ``failure`` before every rank of ``incident`` with one
    (a communication failure more than :data:`~ppaux.triage.runs.SKEW_S` before): it cannot
    have followed from them, whatever its place in the log."""
    timed, margin = _window(incident), SKEW_S if communication(failure) else 0.0
    return bool(timed) and all(
        (apart := seconds_between(failure, record)) is not None and apart > margin
        for record in timed
    )


def _distance(incident: Incident, failure: Failure) -> float:
    """How far in seconds ``failure``'s time is from the nearest record of ``incident`` with a
    time; infinite where none has one."""
    return min(
        (abs((record.time or 0.0) - (failure.time or 0.0)) for record in _window(incident)),
        default=math.inf,
    )


def _owner(found: list[Incident], record: Failure | Event) -> Incident:
    """The latest incident whose root is known to have come before ``record``; the first if
    none is.

    In the same log, its place says it (a record without a time, such as torch's C++ lines,
    which carry no year, has nothing else); across logs, only times that compare
    (:func:`seconds_between`), so a root is never judged earlier by a host's local time against
    another host's, or against a collector's instant.
    """
    known = []
    for incident in found:
        root = incident.root
        if root.source == record.source and root.order < record.order:
            known.append(incident)
            continue
        apart = seconds_between(root, record)
        if apart is not None and apart >= 0:
            known.append(incident)
    if known:
        return max(known, key=lambda i: order_key(i.root))
    return found[0]
