"""The findings budget of the dump being checked (:data:`BUDGET`, a
:class:`~ppaux.report.FindingsBudget`), and :func:`at`, which builds a check's finding within it.

:func:`ppaux.dump.checks.check_dump` sets a budget for the dump it checks; every check builds
its findings through :func:`at`, which past the budget of a code only counts them. ``diff``
holds its own budget and asks it directly.
"""

from __future__ import annotations

from contextvars import ContextVar

from ppaux.dump.payload import Payload, key_text
from ppaux.report import DumpExtra, Finding, FindingsBudget, Severity, finding

__all__ = ["BUDGET", "OMITTED", "at"]


BUDGET: ContextVar[FindingsBudget | None] = ContextVar("ppaux_findings_budget", default=None)
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
