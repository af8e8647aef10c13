"""The result of one ppaux command, independent of how it is shown.

Every command (inspect, check-skew, replay, ...) returns a :class:`Report`: findings, inputs
that could not be checked, command-specific data for the JSON document, and tables for the
human view. Formatters in :mod:`ppaux.report.formats` turn a report into text; :func:`exit_code`
turns it into the process exit status.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

from ppaux.errors import PathError, path_shown
from ppaux.report.findings import Finding, Severity, suggestion_json
from ppaux.suggestions import Suggestion, Wording, library_words, worded
from ppaux.text import shown

__all__ = [
    "REPORT_SCHEMA",
    "FailOn",
    "InputProblem",
    "Report",
    "ReportBuilder",
    "ReportData",
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
        suggestions as ``words`` says them, all shown escaped (:func:`ppaux.text.shown`)."""
        return shown(
            worded(f"{path_shown(self.path)}: {self.message}", self.suggestions, words), None
        )

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


class ReportData(dict[str, Any]):
    """A report's command-specific JSON data, read-only: its entries are fixed when the report
    is built (a copy of the mapping it was given), so no reader of a report changes what
    another reader sees. A dict (``json.dumps`` writes it as one) whose every method that would
    change it raises :class:`TypeError`."""

    __slots__ = ()

    def _read_only(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("a report's data is read-only: make a new report (dataclasses.replace)")

    __setitem__ = __delitem__ = __ior__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only

    def __reduce__(self) -> tuple[type[ReportData], tuple[dict[str, Any]]]:
        # Copied and pickled from a plain dict: unpickling a dict's items sets each one.
        return ReportData, (dict(self),)


@dataclass(frozen=True)
class Report:
    """Everything one command found: findings, unusable inputs, JSON data and human tables.

    Frozen once built: each sequence is a tuple and ``data`` a :class:`ReportData`, whatever
    sequences and mapping it was given. A command gathers its report in a
    :class:`ReportBuilder`; a step after it (the gate, a selection, a format) makes a new one
    with :func:`dataclasses.replace`."""

    command: str
    findings: tuple[Finding, ...] = ()
    problems: tuple[InputProblem, ...] = ()
    data: Mapping[str, Any] = field(default_factory=ReportData)
    tables: tuple[Table, ...] = ()
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("findings", "problems", "tables", "notes"):
            value = getattr(self, name)
            if not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))
        if not isinstance(self.data, ReportData):
            object.__setattr__(self, "data", ReportData(self.data))


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
        """The frozen report of what was gathered so far (later additions do not reach it)."""
        return Report(
            self.command,
            tuple(self.findings),
            tuple(self.problems),
            ReportData(self.data),
            tuple(self.tables),
            tuple(self.notes),
        )


def count_by_severity(findings: Iterable[Finding]) -> dict[str, int]:
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
