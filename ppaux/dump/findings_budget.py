"""The findings budget of one file (:class:`Budget`), shared by the checks and ``diff``, and
:func:`at`, which builds a check's finding within it.

:func:`ppaux.dump.checks.check_dump` sets a :class:`Budget` for the dump it checks; every check
builds its findings through :func:`at`, which past the budget of a code only counts them.
``diff`` holds its own :class:`Budget` and asks it directly.
"""

from __future__ import annotations

from contextvars import ContextVar

from ppaux.dump.payload import Payload, key_text
from ppaux.report import DumpExtra, Finding, Severity, finding, omitted_finding

__all__ = ["BUDGET", "OMITTED", "Budget", "at"]


class Budget:
    """Findings of each code built for one file: past ``per_code`` of a code, a finding is only
    counted, never built, and one finding per code stands for the count (the report's cut,
    :func:`ppaux.report.findings.cap_per_code`, words it). A dict of a hundred thousand keys
    that each differ costs a count, not a hundred thousand findings and their texts."""

    def __init__(self, per_code: int) -> None:
        self.per_code = per_code
        self.built: dict[str, int] = {}
        self.omitted: dict[str, int] = {}

    def full(self, code: str) -> bool:
        """Whether the next finding of ``code`` would only be counted."""
        return self.built.get(code, 0) >= self.per_code

    def take(self, code: str) -> bool:
        """Count one finding of ``code``: True when it is to be built."""
        if self.full(code):
            self.omitted[code] = self.omitted.get(code, 0) + 1
            return False
        self.built[code] = self.built.get(code, 0) + 1
        return True

    def counted(self, path: str) -> list[Finding]:
        """One finding per code counted and not built (``extra.omitted``)."""
        return [omitted_finding(code, path, omitted) for code, omitted in self.omitted.items()]


BUDGET: ContextVar[Budget | None] = ContextVar("ppaux_findings_budget", default=None)
#: What :func:`at` gives in place of a finding past the budget: a finding of no rule, told by
#: its identity and dropped by :func:`ppaux.dump.checks.check_dump`.
OMITTED = Finding("", Severity.INFO, "", "")


def at(
    message_id: str,
    path: str,
    message: str,
    payload: Payload,
    key: object,
    *,
    extra: DumpExtra | None = None,
    sglang_error: str | None = None,
    severity: Severity | None = None,
) -> Finding:
    # Findings name the dict key itself; where the dict sits in the file goes to extra.payload.
    # The budget is per code, whichever of the rule's messages this is (``message_id``).
    budget = BUDGET.get()
    if budget is not None and not budget.take(message_id.partition("/")[0]):
        return OMITTED
    data: DumpExtra = {} if extra is None else extra.copy()
    if payload.locator:
        data["payload"] = payload.locator
    return finding(
        message_id,
        path,
        message,
        key_text(key),
        extra=data,
        sglang_error=sglang_error,
        severity=severity,
    )
