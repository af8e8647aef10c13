"""Whether the logs of one incident are of one run: what ties them (a host, pod, container or
address their records name, sglang's ``dist_init_addr``: one model served twice is no tie), and
whether their times say they cannot be.

Logs given together are read as one deployment's: ranks that failed with the same error at the
same moment are one incident, whichever log each is in. Times that do not compare exactly (a
host's local time, zone unknown, against another log's) still tell apart moments more than
:data:`ZONES_APART_S` apart, further than any two zones differ: such failures are never one
moment (:func:`far_apart`). Where an incident's ranks come from logs that nothing ties together
(:func:`untied_logs`), the report says that they were read as one, and how to read them
otherwise.
"""

from __future__ import annotations

from ppaux.patterns import lazy
from ppaux.triage.logreading import LogReading
from ppaux.triage.records import Event, Failure, process_of

__all__ = [
    "SKEW_S",
    "ZONES_APART_S",
    "far_apart",
    "log_names",
    "one_run_note",
    "seconds_between",
    "untied_logs",
]

#: How much earlier than a root a communication failure (a peer's closed connection, an aborted
#: communicator: what a rank dies of after another failed) may be stamped and still be its
#: collateral: a collector's ingest times lag the lines by its batching (a second or two), and
#: hosts' clocks drift; a failure stamped earlier still failed before the root.
SKEW_S = 3.0

#: The most two local times of one instant differ by: UTC-12 to UTC+14, and a margin.
ZONES_APART_S = 27 * 3600.0
#: What names a rank or a task, not a host: ``rank 3``, ``task 0``, ``PP1 TP0``.
_RANKISH = lazy(r"^(?:rank|task|local_rank) \d{1,9}$|^(?:(?:DP|PP|TP|EP)\d{1,6} ?)+$")
#: What an event names where its line names no process.
_NOBODY = frozenset({"a process", "the parent process"})
#: Settings of sglang's server arguments that name one deployment.
_IDENTITY_SETTINGS = ("dist_init_addr",)
#: Logs listed by name in the note; the rest are counted.
_NAMED_LOGS = 4


def far_apart(a: Failure, b: Failure, moment_s: float) -> bool:
    """True when ``a`` and ``b`` cannot be one moment: their times differ by more than
    ``moment_s`` where they compare, or by more than :data:`ZONES_APART_S` where they do not
    (another log's local time, or a local time against an instant)."""
    if a.time is None or b.time is None:
        return False
    apart = abs(a.time - b.time)
    comparable = a.zoned == b.zoned and (a.zoned or a.source == b.source)
    return apart > (moment_s if comparable else ZONES_APART_S + moment_s)


def seconds_between(earlier: Failure | Event, later: Failure | Event) -> float | None:
    """``later``'s time less ``earlier``'s, where the two compare: both with a zone (instants),
    or both without one and from the same log (one host's clock); None otherwise."""
    if earlier.time is None or later.time is None or earlier.zoned != later.zoned:
        return None
    if not earlier.zoned and earlier.source != later.source:
        return None
    return later.time - earlier.time


def _names(stream: str | None) -> set[str]:
    """The hosts, pods, containers and addresses a record's stream names (not its ranks)."""
    named = process_of(stream)
    if named is None:
        return set()
    return {part.strip() for part in named.split(",") if not _RANKISH.match(part.strip())}


def log_names(readings: list[LogReading], records: list[Failure | Event]) -> dict[str, set[str]]:
    """Per log, what names its run: the hosts, pods, containers and addresses its records'
    streams name, and sglang's ``dist_init_addr`` in its server arguments. Read once
    for every incident (:func:`untied_logs`)."""
    names: dict[str, set[str]] = {
        r.source: {
            f"{key}={r.server_args[key]}" for key in _IDENTITY_SETTINGS if r.server_args.get(key)
        }
        for r in readings
    }
    for record in records:
        found = names.setdefault(record.source, set())
        if isinstance(record, Failure):
            found |= _names(record.stream)
        elif record.who not in _NOBODY:  # an event's process, as its line names it
            found |= _names(record.who)
    return names


def untied_logs(members: list[Failure], names: dict[str, set[str]]) -> list[str]:
    """The logs of ``members`` (an incident's ranks) when they are several and nothing ties
    them all into one run: no name (:func:`log_names`) is shared along a chain from each to
    the others. An empty list where they are one log or tied."""
    logs = list(dict.fromkeys(m.source for m in members))
    if len(logs) < 2:
        return []
    reached = {logs[0]}
    known = set(names.get(logs[0], ()))
    grew = True
    while grew:
        grew = False
        for log in logs:
            if log not in reached and names.get(log, set()) & known:
                reached.add(log)
                known |= names[log]
                grew = True
    return [] if len(reached) == len(logs) else logs


def one_run_note(number: int, logs: list[str], processes: int) -> str:
    """The note that incident ``number``'s ``processes`` in ``logs`` were read as one run."""
    named = ", ".join(logs[:_NAMED_LOGS]) + (
        f" and {len(logs) - _NAMED_LOGS} more" if len(logs) > _NAMED_LOGS else ""
    )
    return (
        f"incident {number}: {processes} processes in {len(logs)} logs ({named}) were read as "
        "one run, as logs given together are: they failed with the same error at what may be "
        "the same moment, but nothing in the logs ties them to one run (no host, pod, "
        "container, address or dist_init_addr in common). Where they are of different runs, "
        "triage each run's logs on their own"
    )
