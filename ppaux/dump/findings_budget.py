""":func:`at`: a check's finding on an entry of a tensor dict, built within the dump's
findings budget (a :class:`~ppaux.report.FindingsBudget`).

:func:`ppaux.dump.checks.check_dump` makes one budget for the dump it checks and hands it to
every check, which builds its findings through :func:`at`: past the budget of a code a finding
is only counted, and :func:`at` gives none. ``diff`` holds its own budget and asks it directly.
"""

from __future__ import annotations

from ppaux.dump.payload import Payload, key_text
from ppaux.report import DumpExtra, Finding, FindingsBudget, Severity, finding

__all__ = ["at"]


def at(
    budget: FindingsBudget,
    message_id: str,
    path: str,
    message: str,
    payload: Payload,
    key: object,
    *,
    extra: DumpExtra | None = None,
    sglang_error: str | None = None,
    severity: Severity | None = None,
) -> list[Finding]:
    """The finding ``message_id`` on ``key`` of ``payload``, or none where ``budget`` has
    listed enough of its code (it counts this one)."""
    # Findings name the dict key itself; where the dict sits in the file goes to extra.payload.
    # The budget is per code, whichever of the rule's messages this is (``message_id``).
    if not budget.take(message_id.partition("/")[0]):
        return []
    data: DumpExtra = {} if extra is None else extra.copy()
    if payload.locator:
        data["payload"] = payload.locator
    return [
        finding(
            message_id,
            path,
            message,
            key_text(key),
            extra=data,
            sglang_error=sglang_error,
            severity=severity,
        )
    ]
