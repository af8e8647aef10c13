"""Findings: what a check says about one file, stage or dump, as plain data.

A :class:`Rule` is a catalogue entry (stable code, severity, explanation, causes, fix); a
:class:`Finding` is one occurrence of a rule at a path and, where it applies, a key.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ppaux.report.extra import DumpExtra, Extra
from ppaux.suggestions import (
    Setting,
    Suggestion,
    Wording,
    library_words,
    worded,
)
from ppaux.text import shown

__all__ = [
    "Finding",
    "Location",
    "Rule",
    "Severity",
    "omitted_count",
    "suggestion_json",
]


class Severity(str, enum.Enum):
    """How much a finding matters; ordered error > warning > info."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        """3 for error, 2 for warning, 1 for info (higher is worse)."""
        return {"error": 3, "warning": 2, "info": 1}[self.value]


@dataclass(frozen=True)
class Rule:
    """One catalogue entry. ``sglang_error`` is the verbatim sglang message it predicts, if any."""

    code: str
    name: str
    severity: Severity
    summary: str
    explanation: str
    causes: tuple[str, ...]
    fix: str
    sglang_error: str | None = None
    example: str = ""
    area: str = ""
    #: True when the finding means "could not check" (no verdict was possible); ``--strict``
    #: turns such findings into errors so that a CI gate never passes on them.
    inconclusive: bool = False
    #: The fix of each kind a finding of this rule names (in ``extra.nccl_setup``, else
    #: ``extra.killer``, else ``extra.kind``, else ``extra.no_root``, else
    #: ``extra.collectives``), as (kind, fix) pairs: a finding of a kind listed here carries
    #: that fix; ``fix`` covers every kind.
    kind_fixes: tuple[tuple[str, str], ...] = ()
    #: True when the finding says the check itself did not run to its end or checked nothing
    #: (the target ended, hung, or produced nothing to check): ``--select`` and ``--ignore``
    #: never drop it, so a narrowed selection cannot pass a check that checked nothing.
    always_reported: bool = False

    def fix_for(self, *kinds: object) -> str:
        """The fix for a finding of ``kinds`` (its ``extra.nccl_setup``, ``killer``, ``kind``,
        ``no_root``): the first listed kind's own, else ``fix``."""
        fixes = dict(self.kind_fixes)
        return next((fixes[k] for k in kinds if isinstance(k, str) and k in fixes), self.fix)


@dataclass(frozen=True)
class Location:
    """Where in source code, or in a log, a finding points: the ``file``, its ``line`` (from 1)
    and the ``function`` there (``"-"`` for a log's line, ``"?"`` where none was said);
    ``decompressed``: the line is one of the text a compressed log (gzip, bzip2, xz, zstd)
    inflates to, never a line of its bytes: a format that points at a file's line points at the
    file alone."""

    file: str
    line: int
    function: str = "?"
    decompressed: bool = False

    @classmethod
    def of(cls, value: object) -> Location | None:
        """The location a record gave as ``{"file", "line", "function"}`` (a capture file's
        culprit, the check-observer child's records); None where it names no file or no line
        number, so that no format writes half of one."""
        if not isinstance(value, Mapping):
            return None
        file, line, function = value.get("file"), value.get("line"), value.get("function")
        if not isinstance(file, str) or type(line) is not int:
            return None
        return cls(file, line, function if isinstance(function, str) else "?")

    def to_json(self) -> dict[str, Any]:
        """The location as the report schema's JSON object."""
        json: dict[str, Any] = {"file": self.file, "line": self.line, "function": self.function}
        if self.decompressed:  # a line of a compressed log's text, not of its bytes
            json["decompressed"] = True
        return json


@dataclass(frozen=True)
class Finding:
    """One problem found at ``path`` (a file, stage or dump) and, if it is about one, ``key``."""

    code: str
    severity: Severity
    message: str
    path: str
    key: str | None = None
    sglang_error: str | None = None
    hint: str = ""
    #: What the check knows beside the message, as data (:mod:`ppaux.report.extra`).
    extra: Extra = field(default_factory=lambda: DumpExtra(), compare=False, hash=False)
    #: Where in source code (or in a log) the problem was made, when that is known (a
    #: capture's culprit, a log's line). Formats that annotate code use it.
    location: Location | None = field(default=None, compare=False, hash=False)
    #: What would get past the problem, as data (a setting to give, a limit to raise); each
    #: front end words them (:meth:`worded`): the library as keyword arguments, the command
    #: line as flags. The message itself never names them.
    suggestions: tuple[Suggestion, ...] = field(default=(), compare=False, hash=False)
    #: Which of its rule's messages this is, apart from the words: ``code/name`` (``PP319/
    #: not-found``) where the rule has several, else the code itself (the rule's one message).
    #: Stable across releases whatever the wording; every finding has one and the JSON formats
    #: carry it.
    message_id: str = field(default="", compare=False, hash=False)

    def __post_init__(self) -> None:
        if not self.message_id:
            object.__setattr__(self, "message_id", self.code)

    def causes(self, rule: Rule) -> tuple[str, ...]:
        """The likely causes to show with this finding: its own (``extra.causes``, where the
        check knows which message and side it is about), else its rule's."""
        own = self.extra.get("causes")
        if isinstance(own, list) and own and all(isinstance(c, str) for c in own):
            return tuple(own)
        return rule.causes

    def worded(self, words: Wording = library_words) -> str:
        """The fix text followed by the suggestions as ``words`` says them."""
        return worded(self.hint, self.suggestions, words)

    def __str__(self) -> str:
        where = self.path if self.key is None else f"{self.path} [{self.key}]"
        fix = self.worded()
        # The library's rendering: every string shown escaped, as every format shows it.
        return shown(
            f"{self.code} {self.severity.value} {where}: {self.message}"
            + (f" (fix: {fix})" if fix else ""),
            None,
        )

    def to_json(self) -> dict[str, Any]:
        """The finding as the report schema's JSON object."""
        out: dict[str, Any] = {
            "code": self.code,
            "severity": self.severity.value,
            "message": self.message,
            "path": self.path,
            "key": self.key,
            "sglang_error": self.sglang_error,
            "hint": self.hint,
            "message_id": self.message_id,
        }
        if self.extra:
            out["extra"] = self.extra
        if self.location is not None:
            out["location"] = self.location.to_json()
        if self.suggestions:
            out["suggestions"] = [suggestion_json(s) for s in self.suggestions]
        return out


def suggestion_json(suggestion: Suggestion) -> dict[str, Any]:
    """A suggestion as the report schema's JSON object: ``{"setting": NAME, "value": V}`` (V
    null where the user chooses, with ``what`` describing it) or ``{"limit": NAME, "value": N}``."""
    if isinstance(suggestion, Setting):
        out: dict[str, Any] = {"setting": suggestion.name, "value": suggestion.value}
        if suggestion.what:
            out["what"] = suggestion.what
        return out
    return {"limit": suggestion.name, "value": suggestion.value}


def omitted_count(item: Finding) -> int:
    """How many findings not listed ``item`` stands for (its ``extra.omitted``); 0 for a
    finding that stands only for itself."""
    value = item.extra.get("omitted")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
