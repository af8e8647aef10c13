"""Which findings a run reports: rule codes and code prefixes, as ``--select`` and ``--ignore``
take them.

A code matches a pattern when the code starts with it, so ``PP1`` stands for every payload
rule and ``PP101`` for that rule alone. When a code matches both lists, the longer (more
specific) pattern decides, as in ruff: ``--ignore PP1 --select PP101`` keeps PP101 and drops
the other PP1xx codes. An exact tie goes to ``ignore``. ``extend`` patterns (``--extend-select``)
are selected on top of ``select``, which they leave as it is: with an empty ``select`` every code
stays selected, and an extended pattern still outweighs a shorter ``ignore`` pattern.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from ppaux.errors import PpauxError
from ppaux.report.document import Report

__all__ = ["Selection", "UnknownCodeError", "parse_codes"]


class UnknownCodeError(PpauxError, ValueError):
    """A pattern that is not a prefix of any rule code; ``str()`` says which and where to look."""

    def __init__(self, pattern: str) -> None:
        super().__init__(pattern)
        self.pattern = pattern

    def __str__(self) -> str:
        return f"{self.pattern!r} matches no rule code; 'ppaux rules' lists them"


def parse_codes(values: Iterable[str], known: Iterable[str]) -> tuple[str, ...]:
    """Normalise patterns (comma-separated allowed, case-insensitive) and check each one.

    Every pattern must be a prefix of at least one code in ``known``; the first that is not
    raises :class:`UnknownCodeError`. Duplicates are dropped; the order is kept.
    """
    codes = tuple(known)
    out: list[str] = []
    for value in values:
        for part in value.split(","):
            pattern = part.strip().upper()
            if not pattern:
                continue
            if not any(code.startswith(pattern) for code in codes):
                raise UnknownCodeError(part.strip())
            if pattern not in out:
                out.append(pattern)
    return tuple(out)


@dataclass(frozen=True)
class Selection:
    """Patterns to keep (``select``; empty keeps every code), patterns to drop (``ignore``) and
    patterns kept in addition to ``select`` (``extend``)."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    extend: tuple[str, ...] = ()

    def includes(self, code: str) -> bool:
        """True when a finding with ``code`` is reported."""
        if self.select:
            selected = max((len(p) for p in self.select if code.startswith(p)), default=-1)
        else:
            selected = 0  # no select list: everything is selected, as unspecifically as can be
        extended = max((len(p) for p in self.extend if code.startswith(p)), default=-1)
        selected = max(selected, extended)
        ignored = max((len(p) for p in self.ignore if code.startswith(p)), default=-1)
        return selected >= 0 and selected > ignored

    def apply(self, report: Report) -> Report:
        """A copy of ``report`` keeping only the findings this selection includes, and every
        finding whose rule is ``always_reported``."""
        if not self.select and not self.ignore and not self.extend:
            return report
        from ppaux.report.catalogue import RULES

        # A finding that says the check checked nothing (or stopped early) is never dropped.
        kept = tuple(
            f
            for f in report.findings
            if self.includes(f.code) or (f.code in RULES and RULES[f.code].always_reported)
        )
        return dataclasses.replace(report, findings=kept)
