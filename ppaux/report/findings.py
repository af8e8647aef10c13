"""Findings: what a check says about one file, stage or dump, as plain data.

A :class:`Rule` is a catalogue entry (stable code, severity, explanation, causes, fix); a
:class:`Finding` is one occurrence of a rule at a path and, where it applies, a key.
"""

from __future__ import annotations

from typing import Any

import enum
from dataclasses import dataclass, field

__all__ = ["Severity", "Rule", "Finding"]


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
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

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
        }
        if self.extra:
            out["extra"] = self.extra
        return out
