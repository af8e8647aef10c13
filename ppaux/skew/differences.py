"""A fact compared across stages: which stages differ from the reference value, and the
findings that say so (one per differing stage, naming the stages that hold the reference).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from ppaux.report import Finding, Severity, finding
from ppaux.skew.fingerprint import Fingerprint
from ppaux.skew.stage import Stage, reference_value, span

__all__ = ["differences", "simple_findings"]


def _against(
    stage: Stage,
    ref: str,
    holders: list[Stage],
    baseline: Fingerprint | None,
) -> str:
    if baseline is not None:
        return f"the baseline has {ref}"
    labels = [s.label for s in holders]
    plural = "stage" if len(labels) == 1 else "stages"
    return f"{ref} on {len(labels)} other {plural} ({span(labels)})"


def differences(
    stages: Sequence[Stage],
    value: Callable[[Fingerprint], str | None],
    baseline: Fingerprint | None,
) -> Iterable[tuple[Stage, str, str, str]]:
    """(stage, its value, reference, 'what the others have') for each stage that differs."""
    ref = reference_value(stages, value, baseline)
    if ref is None:
        return
    values = [(s, value(s.fingerprint)) for s in stages]
    holders = [s for s, v in values if v == ref]
    for stage, v in values:
        if v is not None and v != ref:
            yield stage, v, ref, _against(stage, ref, holders, baseline)


def simple_findings(
    code: str,
    what: str,
    stages: Sequence[Stage],
    value: Callable[[Fingerprint], str | None],
    baseline: Fingerprint | None,
    severity: Callable[[str, str], Severity | None] | None = None,
    key: str | None = None,
) -> list[Finding]:
    out = []
    for stage, v, ref, others in differences(stages, value, baseline):
        out.append(
            finding(
                code,
                stage.path,
                f"{what} {v} here; {others}",
                key,
                severity=severity(v, ref) if severity else None,
            )
        )
    return out
