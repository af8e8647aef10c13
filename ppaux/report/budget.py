"""The one way a report caps the findings of one code: :class:`FindingsBudget`.

A hostile file can hold a million bad keys; a report listing each would be gigabytes. Each
code keeps its first ``max_findings_per_code`` findings (a field of :class:`~ppaux.limits.
Limits`, raisable with ``--limit``) and one more finding of that code counts the rest
(``extra.omitted``), keeping the code, severity and exit status of what it stands for, so
``--select``, ``--ignore`` and the gate treat it as they would treat the findings it replaces.
A check may ask the budget before it builds a finding (:meth:`FindingsBudget.take`: past the
bound a finding costs a count, not its text), and a report cuts what it gathered
(:meth:`FindingsBudget.cap`). The same budget cuts the lists a report's findings are made of
(:meth:`FindingsBudget.first`: the incidents a triage lists, the collateral records of one).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeVar

from ppaux.limits import Limits
from ppaux.report.catalogue import omitted_finding
from ppaux.report.findings import Finding, omitted_count
from ppaux.suggestions import RaiseLimit, limit_note

__all__ = ["FindingsBudget"]

#: The field of :class:`~ppaux.limits.Limits` the budget spends.
_LIMIT = "max_findings_per_code"
#: The fields of :class:`~ppaux.limits.Limits` that bound a list a report's findings are made
#: of: the incidents of a triage, the collateral records of one incident.
ListLimit = Literal["max_incidents", "max_collateral"]
_T = TypeVar("_T")


class FindingsBudget:
    """Findings of each code, at most ``limits.max_findings_per_code`` of each listed."""

    def __init__(self, limits: Limits) -> None:
        self.per_code = limits.max_findings_per_code
        #: The bound of each list a report's findings are made of (:meth:`first`).
        self.lists: dict[ListLimit, int] = {
            "max_incidents": limits.max_incidents,
            "max_collateral": limits.max_collateral,
        }
        self.built: dict[str, int] = {}
        self.omitted: dict[str, int] = {}

    def full(self, code: str) -> bool:
        """Whether the next finding of ``code`` would only be counted."""
        return self.built.get(code, 0) >= self.per_code

    def take(self, code: str) -> bool:
        """Count one finding of ``code``: True when it is to be built, False when it is only
        counted (:meth:`counted` says the count)."""
        if self.full(code):
            self.omitted[code] = self.omitted.get(code, 0) + 1
            return False
        self.spend(code)
        return True

    def spend(self, code: str) -> None:
        """Count one finding of ``code`` built whatever the budget says (a finding another
        step made), so that fewer of the code are built after it."""
        self.built[code] = self.built.get(code, 0) + 1

    def first(self, items: Sequence[_T], limit: ListLimit) -> list[_T]:
        """The first of ``items`` a report lists, at most ``limit`` (its bound:
        :meth:`bound`); the report counts the rest in one finding of its own words."""
        return list(items[: self.lists[limit]])

    def bound(self, limit: ListLimit) -> int:
        """How many items of a list :meth:`first` keeps (``limit``'s value)."""
        return self.lists[limit]

    def counted(self, path: str) -> list[Finding]:
        """One finding per code counted and not built (``extra.omitted``), in ``path``."""
        return [omitted_finding(code, path, omitted) for code, omitted in self.omitted.items()]

    def cap(self, findings: list[Finding], within: str = "in this file") -> list[Finding]:
        """``findings`` with at most ``per_code`` of each code kept (the first ones, in order);
        the rest of a code become one more finding of that code, whose ``extra.omitted`` counts
        them (``within``: what they were found in, as its message says it).

        A finding that already carries ``extra.omitted`` (counted by :meth:`take`, or an
        earlier cut) stands for that many findings not listed, and joins its code's count.
        """
        per_code = self.per_code
        listed: dict[str, int] = {}
        unlisted: dict[str, int] = {}
        for item in findings:
            omitted = omitted_count(item)
            if omitted:
                unlisted[item.code] = unlisted.get(item.code, 0) + omitted
            else:
                listed[item.code] = listed.get(item.code, 0) + 1
        if not unlisted and all(n <= per_code for n in listed.values()):
            return findings
        kept: list[Finding] = []
        seen: dict[str, int] = {}
        first: dict[str, Finding] = {}
        for item in findings:
            first.setdefault(item.code, item)
            if omitted_count(item):
                continue
            seen[item.code] = seen.get(item.code, 0) + 1
            if seen[item.code] <= per_code:
                kept.append(item)
        for code, item in first.items():
            omitted = unlisted.get(code, 0) + max(0, listed.get(code, 0) - per_code)
            if omitted > 0:
                shown = min(per_code, listed.get(code, 0))
                kept.append(_counting(item, omitted, (shown, per_code), within))
        return kept


def _counting(item: Finding, omitted: int, bound: tuple[int, int], within: str) -> Finding:
    """The finding of ``item``'s code that counts ``omitted`` more not listed; ``bound``: how
    many of the code are listed, and the budget's bound."""
    shown, per_code = bound
    return Finding(
        code=item.code,
        severity=item.severity,
        message=(
            f"{omitted} more {item.code} findings {within} are not listed; the report lists "
            f"the first {shown} {limit_note(_LIMIT, per_code)}"
        ),
        path=item.path,
        sglang_error=item.sglang_error,
        hint=item.hint,
        extra={"omitted": omitted},
        suggestions=(RaiseLimit(_LIMIT, per_code),),
        message_id=f"{item.code}/omitted",
    )
