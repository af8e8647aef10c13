"""The report's two tables: the logs read (format, lines, records) and the incidents found
(first failing ranks, time, place, collateral)."""

from __future__ import annotations

from ppaux.report import Table
from ppaux.text import cut
from ppaux.triage.incidents import Incident
from ppaux.triage.lineshapes import Launcher
from ppaux.triage.reading import LogReading
from ppaux.triage.records import Failure
from ppaux.triage.roots import place_of, when_of

__all__ = ["incidents_table", "logs_table"]


def logs_table(readings: list[LogReading]) -> Table:
    rows = tuple(
        (
            r.source,
            r.envelope.value + ("" if r.launcher is Launcher.NONE else f" + {r.launcher.value}"),
            str(r.lines),
            str(len(r.failures) + r.more_failures),
            str(len(r.events) + r.more_events),
        )
        for r in readings
    )
    return Table("logs", ("log", "format", "lines", "tracebacks", "other records"), rows)


def incidents_table(found: list[Incident]) -> Table:
    """One row per incident. The time column is 'local time' when every root's time is
    sglang's own (no zone); where zoned and local times mix, each local one says so."""
    local = [i.root.time_text is not None and not i.root.zoned for i in found]
    timed = [i.root.time_text is not None for i in found]
    all_local = any(local) and local == timed

    def when(root: Failure) -> str:
        if all_local and root.time_text is not None:
            return cut(root.time_text)
        return when_of(root, short=True)

    rows = tuple(
        (
            str(number),
            ", ".join(dict.fromkeys(cut(m.who) for m in incident.members)),
            when(incident.root),
            place_of(incident.root),
            str(len(incident.collateral) + len(incident.events)),
        )
        for number, incident in enumerate(found, 1)
    )
    columns = ("#", "first failing ranks", "local time" if all_local else "time", "log")
    return Table("incidents", (*columns, "collateral"), rows)
