"""A compressed log's places said as lines of the text it inflates to: ``run.log.gz
(decompressed):123``, in a finding's words and in its location (``Location.decompressed``), in
the incidents' table, so
that no format points at line 123 of the gzip bytes (GitHub's annotation and SARIF's region
name the file alone, the line in their text)."""

from __future__ import annotations

import re
from dataclasses import replace

from ppaux.report import Finding, Table
from ppaux.triage.logreading import LogReading

__all__ = ["decompressed_places", "decompressed_table"]


def _places(readings: list[LogReading]) -> tuple[set[str], re.Pattern[str] | None]:
    """The names of the logs read through a decompressor, and a pattern of a place in one."""
    names = sorted({r.source for r in readings if r.compression is not None}, key=len)
    if not names:
        return set(), None
    # the longest name first: one log's name may begin another's
    alternatives = "|".join(re.escape(n) for n in reversed(names))
    return set(names), re.compile(f"({alternatives}):(?=\\d)")


def decompressed_table(table: Table, readings: list[LogReading]) -> Table:
    """``table``, each place in a compressed log said as a line of its decompressed text."""
    _, place = _places(readings)
    if place is None:
        return table
    rows = tuple(tuple(place.sub(r"\1 (decompressed):", c) for c in row) for row in table.rows)
    return replace(table, rows=rows)


def decompressed_places(findings: list[Finding], readings: list[LogReading]) -> list[Finding]:
    """``findings``, each place in a log read through a decompressor (gzip, bzip2, xz, zstd)
    said as a line of its decompressed text."""
    names, place = _places(readings)
    if place is None:
        return findings
    marked = []
    for found in findings:
        location = found.location
        if location is not None and location.file in names:
            location = replace(location, decompressed=True)
        message = place.sub(r"\1 (decompressed):", found.message)
        marked.append(replace(found, message=message, location=location))
    return marked
