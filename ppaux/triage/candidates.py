"""Which failures of a log may be an incident's root: complete tracebacks first, then a
communicator's set-up that nothing precedes, then tracebacks cut before their exception (unless
a process's death or a complete failure came before them all); and which bare tracebacks are a
pipeline's failure at all (:func:`pp_related`).
"""

from __future__ import annotations

import math

from ppaux.patterns import lazy
from ppaux.sglang import search_message
from ppaux.triage.childexits import child_exit
from ppaux.triage.deaths import launcher_cleanup
from ppaux.triage.frames import frame_owner, in_scheduler_process, in_sglang_server
from ppaux.triage.kinds import COMMUNICATION, COMMUNICATION_INIT, MEMORY, kind_of
from ppaux.triage.records import Event, Failure
from ppaux.triage.runs import seconds_between

__all__ = [
    "SAME_MOMENT_S",
    "bare_cut",
    "communication",
    "cut_roots",
    "handled",
    "init_roots",
    "order_key",
    "own",
    "pp_related",
    "ranked",
    "stray",
]

#: How a line's stream names the rank of torch's ``[rankN]:`` prefix (behind the process an
#: envelope names: ``sglang-1, rank 3``), or of a launcher's label before each line a rank
#: prints (a trainer's ``rank:  3 | ``, torchrun's ``[default3]:``, Slurm's ``3: ``).
_RANK_STREAM = lazy(r"(?:^|, )(?:rank|local rank|task) \d{1,9}$")
#: A set-up that failed waiting for the other ranks (the store's rendezvous timed out with
#: some clients missing): what a rank dies of when another could not set up.
_WAITING = lazy(
    r"(?:^|\.)DistStoreError$|waiting for clients|\d+/\d+ clients joined|"
    r"[Tt]imed out (?:after \S+ seconds )?waiting"
)
#: Ranks that fail with the same error within this many seconds of the first are one incident.
SAME_MOMENT_S = 5.0


def communication(failure: Failure) -> bool:
    """True when ``failure`` is a communication failure (:mod:`ppaux.triage.kinds`): what a
    rank dies of when a peer died first, or when the network or another node failed."""
    return kind_of(failure) in (COMMUNICATION, COMMUNICATION_INIT)


def order_key(record: Failure | Event) -> tuple[float, int]:
    """Where ``record`` sorts: by its time when that is an instant, else by its place (records
    are numbered log after log, in each log's order)."""
    return (record.time if record.zoned and record.time is not None else math.inf, record.order)


def init_roots(ordered: list[Failure]) -> list[Failure]:
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


def ranked(failure: Failure) -> bool:
    """True for a complete traceback under torch's rank prefix (``[rank3]:``) or a launcher's
    label of a rank."""
    return failure.exception is not None and _RANK_STREAM.search(failure.stream or "") is not None


def bare_cut(failure: Failure) -> bool:
    """True for a bare traceback (no process that logged it, no scheduler) cut off before its
    exception: it says nothing of its cause."""
    return failure.exception is None and not failure.process and not failure.scheduler


def own(failure: Failure) -> bool:
    """True for a complete traceback none of whose frames is sglang's: a process's own failure
    (a script's, torch's), not a request that sglang's server refused."""
    return failure.exception is not None and all(
        frame_owner(frame) != "sglang" for frame in failure.frames
    )


def handled(failure: Failure, ordered: list[Failure]) -> bool:
    """True for a complete traceback after which its program logged on as usual (an INFO
    record right after its exception line: a download retried and done) and that a traceback
    cut off before its exception follows in its log: it was handled, and the later, cut one
    is what failed (its cause not in the log)."""
    return failure.went_on and any(
        f.source == failure.source and f.order > failure.order and f.exception is None
        for f in ordered
    )


def cut_roots(ordered: list[Failure], deaths: list[Failure | Event]) -> list[Failure]:
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
        if isinstance(death, Event) and launcher_cleanup(death.text):
            continue  # a launcher's cleanup, written before the child's own traceback reached it
        if all(_before(death, f) for f in cut):
            return []
    shown = [f for f in ordered if f.exception is not None]
    earliest = min(shown, key=order_key, default=None)
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


def stray(failure: Failure, events: list[Event]) -> bool:
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


def pp_related(failure: Failure) -> bool:
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
