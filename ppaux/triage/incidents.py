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

from ppaux.patterns import lazy
from ppaux.sglang import search_message
from ppaux.triage.childexits import child_exit
from ppaux.triage.deaths import death_of, launcher_summary, relay, worker_name
from ppaux.triage.frames import frame_owner, in_scheduler_process, in_sglang_server
from ppaux.triage.kinds import COMMUNICATION, COMMUNICATION_INIT, MEMORY, kind_of
from ppaux.triage.logorder import own_log_root
from ppaux.triage.ncclflight import flight_failure
from ppaux.triage.ncclsetup import setup_failure
from ppaux.triage.records import Event, Failure, process_of
from ppaux.triage.runs import SKEW_S, far_apart, seconds_between
from ppaux.triage.sameprocess import launchers_own, without_own_aborts
from ppaux.triage.startup import in_flight, near

__all__ = ["FOLLOWS_S", "SAME_MOMENT_S", "Incident", "communication", "incidents"]

#: How a line's stream names the rank of torch's ``[rankN]:`` prefix (behind the process an
#: envelope names: ``sglang-1, rank 3``).
_TORCH_RANK = lazy(r"(?:^|, )rank \d{1,9}$")
#: A set-up that failed waiting for the other ranks (the store's rendezvous timed out with
#: some clients missing): what a rank dies of when another could not set up.
_WAITING = lazy(
    r"(?:^|\.)DistStoreError$|waiting for clients|\d+/\d+ clients joined|"
    r"[Tt]imed out (?:after \S+ seconds )?waiting"
)
#: Ranks that fail with the same error within this many seconds of the first are one incident.
SAME_MOMENT_S = 5.0
#: A failure (not a communication one) more than this many seconds from every rank of an
#: incident did not follow from that incident's root (a watchdog's timeout is minutes).
FOLLOWS_S = 3600.0


def communication(failure: Failure) -> bool:
    """True when ``failure`` is a communication failure (:mod:`ppaux.triage.kinds`): what a
    rank dies of when a peer died first, or when the network or another node failed."""
    return kind_of(failure) in (COMMUNICATION, COMMUNICATION_INIT)


def _init_roots(ordered: list[Failure]) -> list[Failure]:
    """The communicator set-up failures that no other failure comes before: a rank that could
    not join its process group is where the log's story starts."""
    found: list[Failure] = []
    for failure in ordered:
        if failure.exception is None:
            continue
        kind = kind_of(failure)
        if kind == COMMUNICATION_INIT:
            found.append(failure)
        elif kind == COMMUNICATION:
            break
    # A rank that timed out waiting for the others followed from one that could not set up:
    # it is that one's collateral, whichever the log shows first.
    failed = [f for f in found if not _waiting(f)]
    return failed or found


def _waiting(failure: Failure) -> bool:
    """True for a set-up failure that waited on the other ranks (a rendezvous timed out)."""
    said = [(failure.exception or "", failure.message), *failure.chain]
    return any(
        _WAITING.search(exception) or _WAITING.search(message[:500]) for exception, message in said
    )


def _ranked(failure: Failure) -> bool:
    """True for a complete traceback under torch's rank prefix (``[rank3]:``)."""
    return failure.exception is not None and _TORCH_RANK.search(failure.stream or "") is not None


def _bare_cut(failure: Failure) -> bool:
    """True for a bare traceback (no process that logged it, no scheduler) cut off before its
    exception: it says nothing of its cause."""
    return failure.exception is None and not failure.process and not failure.scheduler


def _own(failure: Failure) -> bool:
    """True for a complete traceback none of whose frames is sglang's: a process's own failure
    (a script's, torch's), not a request that sglang's server refused."""
    return failure.exception is not None and all(
        frame_owner(frame) != "sglang" for frame in failure.frames
    )


def _handled(failure: Failure, ordered: list[Failure]) -> bool:
    """True for a complete traceback after which its program logged on as usual (an INFO
    record right after its exception line: a download retried and done) and that a traceback
    cut off before its exception follows in its log: it was handled, and the later, cut one
    is what failed (its cause not in the log)."""
    return failure.went_on and any(
        f.source == failure.source and f.order > failure.order and f.exception is None
        for f in ordered
    )


def _cut_roots(ordered: list[Failure], deaths: list[Failure | Event]) -> list[Failure]:
    """The tracebacks cut before their exception, as roots, unless a failure whose exception
    the log shows (a communication one, whatever its frames) came before every one of them:
    that failure is then where the log's story starts. Where a process's death (``deaths``)
    came before every one of them, none is a root: they followed from it. A traceback raised
    from a communication failure in flight (its chain's) is that failure, never a root."""
    cut = [f for f in ordered if f.exception is None and not (f.chain and communication(f))]
    # torchrun's summary's other rows follow its first observed failure, a death included
    told = [*deaths, *cut]  # its first observed failure a death or an exit code of its own
    first = {d.source for d in told if isinstance(d, Failure) and d.summary == "root-cause"}
    cut = [f for f in cut if not (f.summary == "failure" and f.source in first)]
    if not cut:
        return []
    for death in deaths:
        if _listed_first(death, cut) or _parents_report(death, cut):
            continue
        if all(_before(death, f) for f in cut):
            return []
    shown = [f for f in ordered if f.exception is not None]
    earliest = min(shown, key=_key, default=None)
    if earliest is not None and all(_before(earliest, f) for f in cut):
        return [earliest]
    return cut


def _parents_report(death: Failure | Event, cut: list[Failure]) -> bool:
    """True where ``death`` is sglang's parent's report of a child's end by a signal of
    sglang's own teardown (not SIGKILL, what the kernel's OOM killer sends) and a scheduler's
    traceback, cut, is at the same moment in the same log: that child's own failure, which the
    report is fallout of (sglang's scheduler logs its exception and signals its
    parent; the parent's SIGCHLD handler then writes its line, in whatever order the two
    reach the log)."""
    if not isinstance(death, Event) or (child := child_exit(death.text)) is None:
        return False
    if "SIGKILL" in child[1]:
        return False
    return any(
        f.scheduler
        and f.source == death.source
        and ((apart := seconds_between(death, f)) is None or abs(apart) <= SAME_MOMENT_S)
        for f in cut
    )


def _listed_first(death: Failure | Event, cut: list[Failure]) -> bool:
    """True where ``death`` is a row of torchrun's failure summary and that summary's first
    observed failure is among ``cut``: the summary lists its other failures first, though
    they came after it."""
    if not isinstance(death, Failure) or death.summary != "failure":
        return False
    return any(f.summary == "root-cause" and f.source == death.source for f in cut)


def _stray(failure: Failure, events: list[Event]) -> bool:
    """True for a fragment cut at both ends (no header, no exception line) that a watchdog's
    timeout in the same log came before."""
    if not failure.fragment or failure.exception is not None or failure.chain:
        return False
    return any(
        e.kind == "watchdog" and e.source == failure.source and e.order < failure.order
        for e in events
    )


def _before(earlier: Failure | Event, later: Failure) -> bool:
    """True when ``earlier`` is known to come before ``later``: in the same log, by its place;
    across logs, by times that compare."""
    if earlier.source == later.source:
        return earlier.order < later.order
    apart = seconds_between(earlier, later)
    return apart is not None and apart > 0


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


def _key(record: Failure | Event) -> tuple[float, int]:
    """Where ``record`` sorts: by its time when that is an instant, else by its place (records
    are numbered log after log, in each log's order)."""
    return (record.time if record.zoned and record.time is not None else math.inf, record.order)


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
    # A bare traceback (no 'X hit an exception', no rank prefix) that went nowhere near a
    # scheduler (an HTTP request refused, a launcher's own error) is no PP failure: neither a
    # root nor what one caused.
    # A traceback that ends in its exception under torch's rank prefix ('[rank1]: ...') is
    # that rank's failure, whatever its frames; where nothing else failed, so is a complete
    # traceback with no frame of sglang's (a script's, torch's own), though not a request
    # that sglang's server refused.
    ordered = [
        f
        for f in failures
        if f.process or f.scheduler or f.fragment or _pp_related(f) or _ranked(f)
    ]
    if all(relay(f) or _bare_cut(f) for f in ordered):
        # Nothing but relays (a relay says another process failed): that process's own
        # complete traceback is what they relay. Nor does a bare traceback cut before its
        # exception hide a complete one: the one that shows its exception is the root.
        kept = {id(f) for f in ordered}
        ordered += [
            f for f in failures if id(f) not in kept and _own(f) and not _handled(f, ordered)
        ]
    ordered.sort(key=_key)
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
    strays = {id(f) for f in ordered_roots if _stray(f, events)}
    cuttable = [f for f in ordered_roots if id(f) not in strays]
    candidates = complete or _init_roots(ordered_roots) or _cut_roots(cuttable, deaths)
    scheduler = [f for f in candidates if f.scheduler or _ranked(f)]
    roots = scheduler or candidates
    found: list[Incident] = []
    for failure in roots:
        joined = False
        for incident in found:
            root = incident.root
            close = not far_apart(root, failure, SAME_MOMENT_S)
            if _same(failure, root) and close:
                incident.ranks.append(failure)
                joined = True
                break
        if not joined:
            found.append(Incident(failure))
    chosen = {id(f) for i in found for f in i.members}
    rest = [f for f in ordered if id(f) not in chosen]
    if not found:
        return [], [f for f in rest if id(f) not in strays], sorted(events, key=_key)
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
        owner.collateral.append(failure)
    # the death that names a relay's worker is that worker's end: never collateral of itself
    named = {id(e) for i in found if relay(i.root) and (e := _name_relayed(i.root, events))}
    for event in events:
        if id(event) in named:
            continue
        if event.kind in ("capture", "nccl-warn"):
            # NCCL's warnings matter only in a log that holds nothing else, or as the cause
            _warned_before(found, event, [*failures, *events])  # a traceback cut after them
            continue
        owner = _owner(found, event)
        if launchers_own(owner.root, owner.own, event):
            owner.own.append(event)
            continue
        owner.events.append(event)
    return found, [], []


def _warned_before(found: list[Incident], event: Event, records: list[Failure | Event]) -> None:
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
    for incident in found:
        root = incident.root
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


def _pp_related(failure: Failure) -> bool:
    """True for a bare traceback that a scheduler raised or may have: cut off before its
    exception, one of sglang's messages, through its scheduler-process code or any of its own
    code but what serves an HTTP request (a layer, a worker thread), or a device that
    ran out of memory (which takes a server down wherever it is raised; a refused request
    never does)."""
    if failure.exception is None or in_scheduler_process(failure.frames):
        return True
    if in_sglang_server(failure.frames):
        return True
    if kind_of(failure) == MEMORY:
        return True
    chain = [(failure.exception, failure.message), *failure.chain]
    return any(search_message(message.split("\n", 1)[0]) for _, message in chain)


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
        return max(known, key=lambda i: _key(i.root))
    return found[0]
