"""The findings budget of one dump's checks, and :func:`at`, which builds a finding within it.

:func:`ppaux.dump.checks.check_dump` sets a :class:`Budget` for the dump it checks; every check
builds its findings through :func:`at`, which past the budget of a code only counts them.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from ppaux.dump.payload import Payload, key_text
from ppaux.report import Finding, finding

__all__ = ["BUDGET", "OMITTED", "Budget", "at"]


class Budget:
    """Findings of each code built for one dump: past ``per_code``, a finding is only counted,
    never built (the report's cut, :func:`ppaux.report.findings.cap_per_code`, words the
    count)."""

    def __init__(self, per_code: int) -> None:
        self.per_code = per_code
        self.built: dict[str, int] = {}
        self.omitted: dict[str, int] = {}

    def take(self, code: str) -> bool:
        n = self.built.get(code, 0)
        if n < self.per_code:
            self.built[code] = n + 1
            return True
        self.omitted[code] = self.omitted.get(code, 0) + 1
        return False


BUDGET: ContextVar[Budget | None] = ContextVar("ppaux_findings_budget", default=None)
#: What :func:`at` gives in place of a finding past the budget; dropped by
#: :func:`ppaux.dump.checks.check_dump`.
OMITTED: Any = object()


def at(code: str, path: str, message: str, payload: Payload, key: Any, **kw: Any) -> Finding:
    # Findings name the dict key itself; where the dict sits in the file goes to extra.payload.
    budget = BUDGET.get()
    if budget is not None and not budget.take(code):
        return OMITTED  # type: ignore[no-any-return]
    extra = dict(kw.pop("extra", None) or {})
    if payload.locator:
        extra["payload"] = payload.locator
    return finding(code, path, message, key_text(key), extra=extra, **kw)
