"""The JSON report document (schema ``ppaux.report/1``, described in docs/report-schema.md)."""

from __future__ import annotations

from typing import Any

from ppaux import _version
from ppaux.report.document import REPORT_SCHEMA, Report, count_by_severity
from ppaux.report.formats import strict_json

__all__ = ["document", "render"]


def document(report: Report) -> dict[str, Any]:
    """The report as a JSON-able dict: schema, tool, command, findings, problems, summary, the
    notes (when there are any: what the text format prints after the findings), data."""
    doc: dict[str, Any] = {
        "schema": REPORT_SCHEMA,
        "tool": {"name": "ppaux", "version": _version.__version__},
        "command": report.command,
        "findings": [f.to_json() for f in report.findings],
        "problems": [p.to_json() for p in report.problems],
        "summary": {**count_by_severity(report.findings), "problems": len(report.problems)},
    }
    if report.notes:
        doc["notes"] = list(report.notes)
    for name, value in report.data.items():
        doc.setdefault(name, value)
    return doc


def render(report: Report) -> str:
    """One JSON document, indented, ending in a newline."""
    return strict_json.dumps(document(report))
