"""Findings counted per rule code (``--statistics``): which rules fire, and how often."""

from __future__ import annotations

from dataclasses import dataclass

from ppaux.report.document import Report
from ppaux.report.findings import Severity, omitted_count

__all__ = ["CodeCount", "count_codes"]


@dataclass(frozen=True)
class CodeCount:
    """How many findings of one rule code a report holds, and the worst severity among them."""

    code: str
    name: str
    severity: Severity
    count: int

    def to_json(self) -> dict[str, object]:
        """The count as a JSON object: code, name, severity, count."""
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity.value,
            "count": self.count,
        }


def count_codes(report: Report) -> list[CodeCount]:
    """One :class:`CodeCount` per code present, most findings first, then by code."""
    from ppaux.report.catalogue import RULES

    counts: dict[str, int] = {}
    worst: dict[str, Severity] = {}
    for finding in report.findings:
        # A finding that stands for findings the report does not list counts as those.
        counts[finding.code] = counts.get(finding.code, 0) + (omitted_count(finding) or 1)
        seen = worst.get(finding.code)
        if seen is None or finding.severity.rank > seen.rank:
            worst[finding.code] = finding.severity
    rows = [
        CodeCount(code, RULES[code].name if code in RULES else "", worst[code], count)
        for code, count in counts.items()
    ]
    return sorted(rows, key=lambda row: (-row.count, row.code))
