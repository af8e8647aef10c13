"""``--statistics``: the per-code counts as text columns or JSON (``ppaux.statistics/1``)."""

from __future__ import annotations

import json

from ppaux import _version
from ppaux.report.document import Report
from ppaux.report.statistics import count_codes

__all__ = ["STATISTICS_SCHEMA", "statistics_json", "statistics_text"]

#: Version of the JSON statistics document; bumped on any incompatible change.
STATISTICS_SCHEMA = "ppaux.statistics/1"


def statistics_text(report: Report) -> str:
    """One line per code: count, code, severity, name; then the totals."""
    rows = count_codes(report)
    lines = []
    if rows:
        width = max(len(str(row.count)) for row in rows)
        lines = [
            f"{row.count:>{width}}  {row.code}  {row.severity.value:<7}  {row.name}".rstrip()
            for row in rows
        ]
    total = sum(row.count for row in rows)
    summary = f"{total} finding{'s' if total != 1 else ''} in {len(rows)} code"
    summary += "s" if len(rows) != 1 else ""
    if report.problems:
        summary += f"; {len(report.problems)} input{'s' if len(report.problems) != 1 else ''} "
        summary += "not checked"
    return "\n".join([*lines, summary]) + "\n"


def statistics_json(report: Report) -> str:
    """The counts as one JSON document: schema, tool, command, statistics, problems."""
    doc = {
        "schema": STATISTICS_SCHEMA,
        "tool": {"name": "ppaux", "version": _version.__version__},
        "command": report.command,
        "statistics": [row.to_json() for row in count_codes(report)],
        "problems": len(report.problems),
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
