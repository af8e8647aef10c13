"""What is said of a log whose lines were longer than triage reads.

A line longer than ``Limits.max_log_line`` is read cut: its start (a JSON record's end beside
it). A failure written inside what was left out does not show, so a log that was cut so and
holds no failure read is no proof of a healthy run (PP813); a log with a failure is triaged as
usual, its cut lines said (PP810, information).
"""

from __future__ import annotations

from ppaux.report import Finding, Location, finding
from ppaux.suggestions import limit_note
from ppaux.text import counted
from ppaux.triage.reading import LogReading

__all__ = ["long_line_findings"]


def long_line_findings(reading: LogReading, max_line: int) -> list[Finding]:
    """For ``reading`` when some of its lines were read cut: PP813 when nothing failed in it,
    else PP810 (what was there was triaged)."""
    if not reading.long_lines:
        return []
    first = max(1, reading.first_long_line)
    are, were = ("is", "was") if reading.long_lines == 1 else ("are", "were")
    if reading.failures or reading.more_failures:
        return [
            finding(
                "PP810/long-lines",
                reading.source,
                f"{counted(reading.long_lines, 'line')} of {reading.source} {are} "
                f"longer than {max_line} bytes (the first: line {first}) and {were} read cut "
                "(a JSON record's start and end kept); what was read was triaged "
                + limit_note("max_log_line", max_line),
                extra={"log": reading.source, "long_lines": reading.long_lines, "first": first},
                location=Location(reading.source, first, "-"),
            )
        ]
    return [
        finding(
            "PP813",
            reading.source,
            f"{counted(reading.long_lines, 'line')} of {reading.source} {are} "
            f"longer than {max_line} bytes (the first: line {first}) and {were} read cut; the "
            f"{reading.lines} lines read hold no failure " + limit_note("max_log_line", max_line),
            extra={
                "log": reading.source,
                "long_lines": reading.long_lines,
                "first": first,
                "lines": reading.lines,
            },
            location=Location(reading.source, first, "-"),
        )
    ]
