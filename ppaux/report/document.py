"""The result of one ppaux command, independent of how it is shown.

Every command (inspect, check-skew, replay, ...) returns a :class:`Report`: findings, inputs
that could not be checked, command-specific data for the JSON document, and tables for the
human view. Formatters in :mod:`ppaux.report.formats` turn a report into text; :func:`exit_code`
turns it into the process exit status.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from ppaux.errors import PathError, path_shown
from ppaux.report.findings import Finding, Severity, suggestion_json
from ppaux.suggestions import Suggestion, Wording, library_words, worded

__all__ = [
    "REPORT_SCHEMA",
    "FailOn",
    "InputProblem",
    "Report",
    "ReportBuilder",
    "Table",
    "count_by_severity",
    "exit_code",
]

#: Version of the JSON report document; bumped on any incompatible change (docs/report-schema.md).
REPORT_SCHEMA = "ppaux.report/1"


class FailOn(str, enum.Enum):
    """The lowest severity that makes a command exit 1."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    NEVER = "never"

    def reached_by(self, severity: Severity) -> bool:
        """True when a finding of ``severity`` reaches this threshold."""
        if self is FailOn.NEVER:
            return False
        return severity.rank >= Severity(self.value).rank


@dataclass(frozen=True)
class InputProblem:
    """An input that could not be checked at all (unreadable, malformed, over a limit)."""

    path: str
    message: str
    #: What would get past it, as data (see :attr:`Finding.suggestions`).
    suggestions: tuple[Suggestion, ...] = ()

    @classmethod
    def of(cls, error: PathError, path: str | None = None) -> InputProblem:
        """The problem ``error`` reports (its path, or ``path`` where given), suggestions kept."""
        return cls(error.path if path is None else path, error.reason, error.suggestions)

    def worded(self, words: Wording = library_words) -> str:
        """'<path>: <message>' (the path quoted where it is not one plain word), then the
        suggestions as ``words`` says them."""
        return worded(f"{path_shown(self.path)}: {self.message}", self.suggestions, words)

    def to_json(self) -> dict[str, Any]:
        """The problem as the report schema's JSON object."""
        out: dict[str, Any] = {"path": self.path, "message": self.message}
        if self.suggestions:
            out["suggestions"] = [suggestion_json(s) for s in self.suggestions]
        return out

    def __str__(self) -> str:
        return self.worded()


@dataclass(frozen=True)
class Table:
    """A titled table for the human view; ``marked`` holds (row, column) cells to highlight."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    marked: frozenset[tuple[int, int]] = frozenset()
    #: Rows the text view draws when fewer than its own cap (None: the cap); the other
    #: formats list every row.
    text_rows: int | None = None


@dataclass
class Report:
    """Everything one command found: findings, unusable inputs, JSON data and human tables."""

    command: str
    findings: list[Finding] = field(default_factory=list)
    problems: list[InputProblem] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    tables: list[Table] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class ReportBuilder:
    """A report while a command gathers it: lists and a dict to add to, then :meth:`build`."""

    command: str
    findings: list[Finding] = field(default_factory=list)
    problems: list[InputProblem] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    tables: list[Table] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def build(self) -> Report:
        """The report of what was gathered so far (later additions do not reach it)."""
        return Report(
            self.command,
            list(self.findings),
            list(self.problems),
            dict(self.data),
            list(self.tables),
            list(self.notes),
        )


def count_by_severity(findings: list[Finding]) -> dict[str, int]:
    """Number of findings per severity, every severity present (zero where none)."""
    counts = {s.value: 0 for s in Severity}
    for f in findings:
        counts[f.severity.value] += 1
    return counts


def exit_code(report: Report, fail_on: FailOn = FailOn.ERROR) -> int:
    """2 when an input could not be checked, else 1 when a finding reaches ``fail_on``, else 0."""
    if report.problems:
        return 2
    if any(fail_on.reached_by(f.severity) for f in report.findings):
        return 1
    return 0
