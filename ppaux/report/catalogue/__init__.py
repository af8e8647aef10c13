"""The catalogue of rules: every finding code ppaux can emit, with its explanation and fix.

Each area keeps its rules in a module of its own (``dump``, ``security``, ...); this package
joins them and offers :func:`finding` to build a :class:`~ppaux.report.findings.Finding` from a
code.
"""

from __future__ import annotations

from collections.abc import Mapping

from ppaux.errors import PpauxError
from ppaux.report.extra import Extra
from ppaux.report.findings import Finding, Location, Rule, Severity
from ppaux.suggestions import Suggestion

from . import capture, diff, dump, observer, replay, security, skew, triage

__all__ = ["RULES", "UnknownRuleError", "finding", "get_rule", "omitted_finding"]

_AREAS = (capture, diff, dump, observer, replay, security, skew, triage)


def _collect() -> dict[str, Rule]:
    rules: dict[str, Rule] = {}
    for area in _AREAS:
        for rule in area.RULES:
            if rule.code in rules:
                raise RuntimeError(f"duplicate rule code {rule.code}")  # a bug in ppaux itself
            rules[rule.code] = rule
    return dict(sorted(rules.items()))


#: Every rule, by code, in code order.
RULES: dict[str, Rule] = _collect()


class UnknownRuleError(PpauxError, KeyError):
    """Raised for a code that is not in the catalogue."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code

    def __str__(self) -> str:
        return f"unknown rule code {self.code!r}; 'ppaux rules' lists them"


def get_rule(code: str) -> Rule:
    """Return the rule for ``code`` (case-insensitive) or raise :class:`UnknownRuleError`."""
    try:
        return RULES[code.strip().upper()]
    except KeyError:
        raise UnknownRuleError(code) from None


#: Where a finding's ``extra`` names the kind whose fix it takes, first listed first.
_KIND_KEYS = ("nccl_setup", "killer", "kind", "no_root", "collectives")


def _kinds(extra: Mapping[str, object]) -> list[object]:
    """The kinds ``extra`` names, first listed first (:data:`_KIND_KEYS`); a death another
    process relays with its exception (``extra.relayed``) is 'relayed', before its
    ``no_root``; a root whose error is MPI's (``extra.collectives`` 'mpi') is 'mpi', first."""
    kinds: list[object] = [extra.get(k) for k in _KIND_KEYS]
    if extra.get("collectives") == "mpi":  # an MPI call's error: MPI's fix, before its kind's
        kinds.insert(0, "mpi")
    if extra.get("relayed") is True:
        kinds.insert(_KIND_KEYS.index("no_root"), "relayed")
    return kinds


def finding(
    message_id: str,
    path: str,
    message: str,
    key: str | None = None,
    *,
    severity: Severity | None = None,
    sglang_error: str | None = None,
    extra: Extra | None = None,
    location: Location | None = None,
    suggestions: tuple[Suggestion, ...] = (),
) -> Finding:
    """Build a finding of the message ``message_id``: a rule's code (``PP101``) where the rule
    has one message, ``code/name`` (``PP319/not-found``) naming which one where it has several.
    Severity, predicted error and hint come from the rule (the hint of the kind ``extra`` names,
    where the rule has one per kind)."""
    code = message_id.partition("/")[0]
    rule = RULES[code]
    return Finding(
        code=code,
        severity=severity or rule.severity,
        message=message,
        path=path,
        key=key,
        sglang_error=sglang_error if sglang_error is not None else rule.sglang_error,
        hint=rule.fix_for(*_kinds(extra or {})),
        extra=extra or {},
        location=location,
        suggestions=suggestions,
        message_id=message_id,
    )


def omitted_finding(code: str, path: str, omitted: int) -> Finding:
    """The finding that stands for ``omitted`` findings of ``code`` in the file ``path``,
    counted and not built (message ``code/omitted``, ``extra.omitted``); the report's cut,
    :meth:`~ppaux.report.FindingsBudget.cap`, words it again with its bound."""
    return finding(
        f"{code}/omitted",
        path,
        f"{omitted} more {code} findings in this file are not listed",
        extra={"omitted": omitted},
    )
