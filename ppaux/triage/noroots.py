"""PP809: the plain statement that the logs hold no root, and why: a process that died of what
the log does not say, NCCL's warnings that its communicator's set-up failed, communication
failures only (the cause is on the network or another node), signals only, or tracebacks cut
off."""

from __future__ import annotations

from ppaux.report import Finding, Severity, finding
from ppaux.text import counted, cut
from ppaux.triage.deaths import (
    crashed,
    dead_one,
    death_of,
    exited,
    hint_of,
    launcher_summary,
    relayed,
    slurm_ended,
    summary_name,
)
from ppaux.triage.hangs import hang_words, pyspy_process
from ppaux.triage.incidents import communication
from ppaux.triage.kerneldeaths import bare_kill
from ppaux.triage.kinds import local_note
from ppaux.triage.ncclflight import flight_failure, ib_device
from ppaux.triage.ncclsetup import setup_cause, setup_failure, setup_words
from ppaux.triage.records import Event, Failure
from ppaux.triage.roots import location_of, place_of, unseen
from ppaux.triage.runtimedeaths import killer

__all__ = ["no_root_finding"]


def _summary(record: Failure | Event) -> str | None:
    """How a launcher's summary of a child that failed (torchrun's ``ChildFailedError``)
    reports it, where the log holds nothing of the child's own; None for another record."""
    if isinstance(record, Event) or record.exception is None or not launcher_summary(record):
        return None
    return f"reports that a process it started failed ({summary_name(record)})"


def _deaths(loose: list[Failure | Event]) -> list[tuple[Failure | Event, str]]:
    """Each record of a death in ``loose`` and how it died, the one to name first first."""
    died = [(r, how) for r in loose if (how := death_of(r)) is not None]
    # A launcher's summary of a child that failed says a death only where nothing else does.
    died = died or [(r, how) for r in loose if (how := _summary(r)) is not None]
    # A launcher that killed its children did so after one of them ended: that one's record
    # (its return code) is the death to name first, wherever the log puts it.
    died.sort(key=lambda pair: "killed by its launcher" in pair[1])
    return died


#: Lines of a Ray actor's error that its details take below its exception line (class_name,
#: actor_id, pid, name, namespace, ip, then why the actor is dead).
_DETAIL_LINES = 10


#: The most lines between two records torch's watchdog writes of one event.
_WATCHDOG_LINES = 3


def _without_details(loose: list[Failure | Event]) -> list[Failure | Event]:
    """``loose`` without the records that are details of the one above them: Ray's words of
    why an actor is dead (:func:`_detail`), and the later records of one watchdog event (a
    rank's ``Some NCCL operations have failed or timed out``, then its ``Process group
    watchdog thread terminated with exception: ... Watchdog caught collective operation
    timeout``, then c10's ``Exception raised from checkTimeout`` block: one timeout, not
    three). The records are taken in their order once (no record against every other)."""
    later: set[int] = set()
    above: dict[str, Failure | Event] = {}
    for record in sorted(loose, key=lambda r: r.order):
        last, above[record.source] = above.get(record.source), record
        if (
            isinstance(record, Event)
            and isinstance(last, Event)
            and record.kind == last.kind == "watchdog"
            and record.who in (last.who, *_NAMELESS)
            and 0 < record.line - last.line <= _WATCHDOG_LINES
        ):
            later.add(id(record))
    quit_at: dict[str, int] = {}  # where each log's first SIGQUIT line is
    for record in loose:
        if isinstance(record, Event) and record.kind == "sigquit":
            quit_at[record.source] = min(record.order, quit_at.get(record.source, record.order))
    return [
        r
        for r in loose
        if id(r) not in later and not _detail(r, loose) and not _own_kill(r, quit_at)
    ]


def _own_kill(record: Failure | Event, quit_at: dict[str, int]) -> bool:
    """The shell's bare ``Killed`` after sglang's SIGQUIT line in the same log: sglang's parent
    kills its own process tree (SIGKILL, itself included) when a child sends it SIGQUIT, so the
    shell reports that kill, no death of its own (``quit_at``: each log's first SIGQUIT)."""
    if not isinstance(record, Event) or record.kind != "death" or not bare_kill(record.text):
        return False
    return record.order > quit_at.get(record.source, record.order)


def _detail(record: Failure | Event, loose: list[Failure | Event]) -> bool:
    """Whether ``record`` is Ray's words of why an actor is dead (``The actor is dead because
    its worker process has died``) that its error (``RayActorError``, ``ActorDiedError``)
    holds: the next record of its log, its details' lines below the error's own. One death,
    not a second."""
    if not isinstance(record, Event) or record.kind != "death":
        return False
    before = [
        r for r in loose if r.source == record.source and r.order < record.order and r is not record
    ]
    if not before:
        return False
    error = max(before, key=lambda r: r.order)
    if not isinstance(error, Failure):
        return False
    if not (error.exception or "").endswith(("RayActorError", "ActorDiedError")):
        return False
    below = error.message.count("\n") + 2 * len(error.frames) + len(error.chain) * 4
    return 0 < record.line - error.line <= _DETAIL_LINES + below


def _collectives(
    ascend: bool, cause: str, failures: list[Failure], events: list[Event], warned: list[Event]
) -> str | None:
    """The communication library the logs' failures are of: HCCL on Ascend's NPUs, NCCL where
    they hold communication failures or NCCL's words; None where they hold neither (a
    process's death alone)."""
    if ascend:
        return "hccl"
    if cause in ("network-or-other-node", "nccl-setup", "not-in-these-logs") or warned:
        return "nccl"
    if any(e.kind in ("nccl-warn", "watchdog", "store") for e in events):
        return "nccl"
    said = " ".join(f"{f.exception} {f.message[:2000]}" for f in failures[:50])
    return "nccl" if "nccl" in said.lower() else None


def _died_message(died: list[tuple[Failure | Event, str]], count: int) -> str:
    """PP809's words for a log whose processes died of what it does not say."""
    dead, how = died[0]
    others = count - len(died)
    ended = "what ended it is not in this log"
    if slurm_ended(how):
        ended = "Slurm ended it, as the line says"
    elif killer(how) == "outside-stop":
        ended = "a signal from outside the job ended it, as the line says; who sent it is not"
    message = (
        f"no root in this log: {cut(dead_one(dead))} {how} ({place_of(dead)}); {ended}: "
        f"{hint_of(how)}" + (f"; {counted(others, 'more record')} followed" if others > 0 else "")
    )
    if len(died) > 1:  # every process the log reports dead, not the first alone
        names = list(dict.fromkeys(cut(dead_one(r)) for r, _ in died[1:]))
        listed = ", ".join(names[:12]) + (" ..." if len(names) > 12 else "")
        message += f"; {counted(len(died) - 1, 'more record')} of a death: {listed}"
    return message


def _only_communication(failures: list[Failure], events: list[Event]) -> bool:
    """Whether the records are communication failures and their echoes alone (the parent's
    SIGQUIT follows any scheduler's failure, communication ones included: it does not make
    them anything else), with at least one that is not a signal."""
    signals = [e for e in events if e.kind == "sigquit"]
    return (
        all(communication(f) for f in failures)
        and all(e.kind in ("watchdog", "store", "sigquit", "nccl-warn") for e in events)
        and bool(failures or len(signals) < len(events))
    )


def _communication_message(
    failures: list[Failure],
    events: list[Event],
    named: tuple[list[str], list[str]],
    where: str,
) -> tuple[str, list[Event]]:
    """PP809's words for communication failures only, and NCCL's warnings among them;
    ``named``: the ranks of the failures' prefixes, and every rank the records name."""
    ranks, every_rank = named
    count = len(failures) + len(events)
    signals = [e for e in events if e.kind == "sigquit"]
    on = f" on {', '.join(ranks[:12])}{' ...' if len(ranks) > 12 else ''}" if ranks else ""
    warned = [e for e in events if e.kind == "nccl-warn"]
    failed = counted(count - len(signals) - len(warned), "communication failure")
    if len(warned) == count:
        failed = f"only NCCL's warnings ({counted(count, 'line')})"
    elif warned:
        failed += f" and NCCL's warnings ({counted(len(warned), 'line')})"
    if device := next((d for e in warned if (d := ib_device(e.text))), None):
        failed += f" (they name the InfiniBand device {device})"
    # NCCL's words that most often mean this host's own set-up say so first, as explain does
    local = next((n for f in failures if (n := local_note(f.error)) is not None), None)
    cause = (
        f"the cause is most often this host's own set-up, else the network or another node "
        f"({local})"
        if local is not None
        else "the cause is on the network or another node"
    )
    message = (
        f"no root in this log: {cause}; "
        f"{failed}{on} ({where}) and nothing else"
        + (
            f" the log shows; of its exception group, {hidden}: one of them may be the root"
            if (hidden := next((h for f in failures if (h := unseen(f))), ""))
            else ""
        )
        + (f" but the parent's SIGQUIT ({len(signals)} lines)" if signals else "")
        + _ranks_seen(every_rank, ranks)
    )
    return message, warned


def _down(failures: list[Failure], setup: bool, events: list[Event]) -> bool:
    """Whether processes failed: the deployment is down even though its root is elsewhere, and
    a gate must not read that as a pass. A watchdog that saw a collective time out takes its
    process down: that rank died too, though the log shows no traceback of it; so does
    sglang's watchdog that found a hang (a py-spy dump is a look, no end); so does NCCL's
    warning of a transfer that failed in flight (its communicator is in error)."""
    return (
        bool(failures)
        or setup
        or any(e.kind in ("watchdog", "death") for e in events)
        or any(e.kind == "nccl-warn" and flight_failure(e.text) is not None for e in events)
        or any(e.kind == "hang" and pyspy_process(e.text) is None for e in events)
    )


def _hang_message(hangs: list[Event], signals: list[Event]) -> str:
    """PP809's words for a log that shows processes hung (sglang's watchdog's records, a py-spy
    dump of an sglang process) and no failure."""
    who = list(dict.fromkeys(cut(e.who) for e in hangs))
    listed = ", ".join(who[:12]) + (" ..." if len(who) > 12 else "")
    first = hangs[0]
    said = hang_words(first.text) or "hung"
    return (
        f"no root in this log: it shows a hang, not a failure: {listed} ("
        f"{counted(len(hangs), 'record')}; the first: {cut(first.who)} {said}, at "
        f"{place_of(first)})"
        + (f", then the parent's SIGQUIT ({counted(len(signals), 'line')})" if signals else "")
        + ": what each process waited on (a collective, a send another stage never received, "
        "a lock) is in its stacks; the process that did not reach it is the cause"
    )


def _signals_message(count: int, where: str, warned: list[Event]) -> str:
    """PP809's words for a log of the parent's SIGQUIT alone, with NCCL's warnings or not."""
    if not warned:
        return (
            "no root in this log: it holds only signals (SIGQUIT from a failing child, "
            f"{where}); the failing process's own output is not in it"
        )
    nccl = warned[0]
    return (
        f"no root in this log: it holds the parent's SIGQUIT ({counted(count, 'line')}, "
        f"{where}: a child process failed) and NCCL's warnings ({counted(len(warned), 'line')}"
        f", the first from {cut(nccl.who)} at {place_of(nccl)}: a connection between "
        "ranks broke), and no failure of any process: the failing child's own output (its "
        "traceback) is not in it. Collect every rank's own log, on every node, with "
        "NCCL_DEBUG=INFO set for the next run to name the connection that broke"
    )


def _ranks_seen(every_rank: list[str], said: list[str]) -> str:
    """The ranks the records name (a watchdog's ``[Rank N]`` records too), where the message
    does not list them yet: all that can be known of which ranks reported, as no such log says
    the job's world size (the ranks that did not report cannot be told)."""
    if len(every_rank) < 2 or set(every_rank) <= set(said):
        return ""
    ordered = sorted(every_rank, key=lambda r: (len(r), r))  # 'rank 2' before 'rank 10'
    listed = ", ".join(ordered[:12]) + (" ..." if len(ordered) > 12 else "")
    return (
        f"; the ranks its records name: {listed}; the log does not say the world size, so "
        "which ranks did not report (the one that failed first may be among them) cannot be "
        "told"
    )


#: Events that name the rank whose record they are, and who such an event names when its
#: line names none.
_RANKED = frozenset({"watchdog", "store"})
_NAMELESS = frozenset({"a process"})


def _setup(events: list[Event]) -> tuple[Event, str, str] | None:
    """The first of NCCL's warnings in ``events`` that says its communicator's set-up failed,
    with which failure and what it says (:func:`~ppaux.triage.ncclsetup.setup_failure`)."""
    for event in events:
        if event.kind == "nccl-warn" and (found := setup_failure(event.text)) is not None:
            return event, *found
    return None


def _flight(events: list[Event], cause: str) -> str | None:
    """The transfer the first of NCCL's warnings in ``events`` says failed in flight
    (:func:`~ppaux.triage.ncclflight.flight_failure`), where the log holds communication
    failures only (``cause``); else None."""
    if cause != "network-or-other-node":
        return None
    for event in events:
        if event.kind == "nccl-warn" and (found := flight_failure(event.text)) is not None:
            return found[0]
    return None


def no_root_finding(
    loose: list[Failure | Event], warned: list[Event] | None = None, ascend: bool = False
) -> Finding:
    """PP809: the logs hold no root. Said plainly, with why: a process that died of what the
    log does not say (a signal, a Ray worker gone), communication failures only (the cause is on
    the network or another node), signals only, or tracebacks cut off. ``warned``: NCCL's
    warnings beside sglang's own lines, said where the logs hold only signals besides (and
    the InfiniBand device they name). ``ascend``: the logs are of Ascend's NPUs (HCCL's)."""
    warned = warned or []
    loose = _without_details(loose)
    first = loose[0]
    count = len(loose)
    failures = [r for r in loose if isinstance(r, Failure)]
    events = [r for r in loose if isinstance(r, Event)]
    signals = [e for e in events if e.kind == "sigquit"]
    hangs = [e for e in events if e.kind == "hang"]
    # the ranks that failed: a traceback's prefix (said in the message), and in the data the
    # rank a watchdog's or a store's record names too (torch's ``[rank5]:`` wherever it is)
    ranks = sorted({cut(f.who) for f in failures if f.ranks})
    named = {cut(e.who) for e in events if e.kind in _RANKED and e.who not in _NAMELESS}
    every_rank = sorted(set(ranks) | named)
    where = f"{'' if count == 1 else 'the first: '}{cut(first.who)} at {place_of(first)}"
    died = _deaths(loose)
    setup = _setup(events) if _only_communication(failures, events) else None
    if died:
        first = died[0][0]
        cause = "process-died"
        message = _died_message(died, count)
    elif setup is not None:
        first, name, said = setup
        cause = "nccl-setup"
        message = (
            f"no root in this log beyond NCCL's warning that {setup_words(name, said)}; "
            f"{cut(first.who)} at {place_of(first)}"
            + (f"; {counted(count - 1, 'more record')} besides" if count > 1 else "")
            + f"): the cause is {setup_cause(name)}, not a collective in flight"
        )
    elif _only_communication(failures, events):
        cause = "network-or-other-node"
        message, warned = _communication_message(failures, events, (ranks, every_rank), where)
    elif hangs and not failures and len(hangs) + len(signals) == count:
        cause = "hang"
        message = _hang_message(hangs, signals)
    elif not failures and len(signals) == count:
        cause = "signals-only"
        message = _signals_message(count, where, warned)
    else:
        cause = "not-in-these-logs"
        message = (
            f"no root in these logs: {counted(count, 'record')} of communication failures or "
            f"SIGQUIT ({where}), and no failure that caused "
            f"{'it' if count == 1 else 'them'} in these logs"
        )
    return finding(
        "PP809",
        first.source,
        message,
        severity=Severity.ERROR if _down(failures, bool(setup), events) else None,
        extra={
            "root": False,
            "no_root": cause,
            "ranks": every_rank[:50],
            "records": [f"{r.source}:{r.line}" for r in loose[:50]],
            "nccl_warnings": len(warned),
            "crashed": bool(died) and crashed(died[0][1]),
            # it ended with an exit status of its own: an error it reported, not a kill
            "exited": bool(died) and exited(died[0][1]),
            "relayed": bool(died) and relayed(died[0][1]),
            # NCCL's communicator set-up failed, or a transfer in flight (their own steps)
            "nccl_setup": setup[1] if setup is not None else _flight(events, cause),
            "ib_device": next((d for e in warned + events if (d := ib_device(e.text))), None),
            "killer": next((killer(how) for _, how in died if killer(how)), None),
            # communication failures alone, whose words most often mean this host's set-up
            "host": cause == "network-or-other-node"
            and any(local_note(f.error) is not None for f in failures),
            # the communication library: HCCL on Ascend's NPUs (its own fix), else NCCL
            "collectives": _collectives(ascend, cause, failures, events, warned),
        },
        location=location_of(first),
    )
