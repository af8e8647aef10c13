"""The CI gate: which findings a run reports, how "could not check" counts, and when it fails.

A :class:`Gate` joins the threshold (``--fail-on``), the code selection (``--select`` and
``--ignore``) and ``--strict``. Every command applies the same gate to its report before the
report is shown, so what is printed and what decides the exit code always agree.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ppaux.report.document import FailOn, Report, exit_code
from ppaux.report.extra import Extra
from ppaux.report.findings import Finding, Severity
from ppaux.report.selection import Selection

__all__ = ["Gate", "is_inconclusive"]


def is_inconclusive(finding: Finding) -> bool:
    """True when ``finding``'s rule means "could not check" (see ``Rule.inconclusive``)."""
    from ppaux.report.catalogue import RULES

    rule = RULES.get(finding.code)
    return rule is not None and rule.inconclusive


@dataclass(frozen=True)
class Gate:
    """How a run's report is filtered and judged.

    ``strict`` raises every inconclusive finding (an input without a tensor dict, a stage whose
    transport capability could not be read) to an error, so that it is shown as one and fails
    any threshold but ``never``. Inputs that could not be read at all exit 2 in every mode.
    """

    fail_on: FailOn = FailOn.ERROR
    selection: Selection = dataclasses.field(default_factory=Selection)
    strict: bool = False

    def apply(self, report: Report) -> Report:
        """A copy of ``report`` with the selection applied and, if strict, inconclusive raised."""
        report = self.selection.apply(report)
        if not self.strict:
            return report
        raised = tuple(
            dataclasses.replace(f, severity=Severity.ERROR, extra=_strict(f.extra))
            if is_inconclusive(f) and f.severity is not Severity.ERROR
            else f
            for f in report.findings
        )
        return dataclasses.replace(report, findings=raised)

    def exit_code(self, report: Report) -> int:
        """0, 1 or 2 for a report this gate has already applied to (see :func:`exit_code`)."""
        return exit_code(report, self.fail_on)


def _strict(extra: Extra) -> Extra:
    """``extra`` with ``strict`` set: ``--strict`` raised the finding to an error."""
    raised = extra.copy()
    raised["strict"] = True
    return raised
