"""Compare the fingerprints of a deployment's stages: can they talk, and what else differs?

:func:`compare` takes fingerprints (from files, or gathered over torch.distributed) and returns a
:class:`~ppaux.report.document.Report`: one finding per stage and difference (codes PP3xx, see
``ppaux explain``), a matrix of stages against facts with the differing cells marked, and each
stage's summary and capability verdicts under ``stages`` in the JSON document.

A value is compared with a reference: the baseline's (``--baseline``) when there is one, else the
value most stages have (ties go to the earliest stage in pipeline order). Unknown values are not
differences. Where the fingerprints say which stage is first and last (``--pp-rank`` and
``--pp-size``), key sets and checks are judged by role: the last stage sends, the first
receives; otherwise every stage is treated as both.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence

from packaging.version import InvalidVersion, Version

from ppaux.limits import Limits
from ppaux.report import Finding, FindingsBudget, InputProblem, Report, Severity, finding
from ppaux.skew.capability_rules import logprob_rules, transport_rules, unknown_rules
from ppaux.skew.differences import simple_findings
from ppaux.skew.fingerprint import Fingerprint
from ppaux.skew.stage import (
    FACTS,
    MUST_AGREE_ENV,
    PACKAGE_FACTS,
    MissingRank,
    Stage,
    env_reader,
    make_stages,
    package_reader,
    python_minor,
    span,
)

__all__ = ["BASELINE_LABEL", "IGNORED_ENV", "compare_stages", "env_names_differing"]

#: Column label of the baseline fingerprint.
BASELINE_LABEL = "baseline"

#: Variables that differ between ranks by design; never reported.
IGNORED_ENV = frozenset(
    {"RANK", "LOCAL_RANK", "GROUP_RANK", "ROLE_RANK", "CUDA_VISIBLE_DEVICES", "LOCAL_WORLD_SIZE"}
)
_IGNORED_ENV_PREFIXES = ("TORCHELASTIC_",)


def _release_severity(value: str, ref: str) -> Severity:
    """Error when major.minor differ, warning for a patch release or local build."""
    try:
        a, b = Version(value), Version(ref)
    except (InvalidVersion, ValueError):  # ValueError: a number past Python's 4300 digits
        return Severity.ERROR
    return Severity.ERROR if a.release[:2] != b.release[:2] else Severity.WARNING


# ----------------------------------------------------------------------------------------------
# Environment, packages, ranks


def _env_rules(stages: Sequence[Stage], baseline: Fingerprint | None) -> list[Finding]:
    out: list[Finding] = []
    everyone = [s.fingerprint for s in stages] + ([baseline] if baseline is not None else [])
    names = sorted({n for fp in everyone for n in fp.environment} | set(MUST_AGREE_ENV))
    for name in names:
        if name in IGNORED_ENV or name.startswith(_IGNORED_ENV_PREFIXES):
            continue
        if any(fp.environment.get(name) == "<redacted>" for fp in everyone):
            continue  # secrets are not compared
        code = "PP314" if name in MUST_AGREE_ENV else "PP315"
        out += simple_findings(code, name, stages, env_reader(name), baseline, key=name)
    return out


def env_names_differing(stages: Sequence[Stage], baseline: Fingerprint | None) -> list[str]:
    """Names of the variables whose effective value differs somewhere (matrix rows)."""
    return sorted({f.key for f in _env_rules(stages, baseline) if f.key})


def _package_rules(stages: Sequence[Stage], baseline: Fingerprint | None) -> list[Finding]:
    out: list[Finding] = []
    for name in PACKAGE_FACTS:
        out += simple_findings("PP324", name, stages, package_reader(name), baseline, key=name)
    return out


def _platform_rules(stages: Sequence[Stage], baseline: Fingerprint | None) -> list[Finding]:
    fact = {f.name: f.value for f in FACTS}
    out: list[Finding] = []
    out += simple_findings("PP301", "sglang", stages, fact["sglang"], baseline)
    out += simple_findings(
        "PP309", "torch", stages, fact["torch"], baseline, severity=_release_severity
    )

    def cuda_severity(value: str, ref: str) -> Severity:
        def minor(text: str) -> str:
            return ".".join(text.split(".")[:2])

        return Severity.ERROR if minor(value) != minor(ref) else Severity.WARNING

    out += simple_findings(
        "PP311",
        "torch's CUDA build",
        stages,
        fact["CUDA (torch)"],
        baseline,
        severity=cuda_severity,
    )
    out += simple_findings("PP310", "NCCL", stages, fact["NCCL"], baseline)
    out += simple_findings("PP312", "NVIDIA driver", stages, fact["driver"], baseline)
    out += simple_findings("PP313", "Python", stages, python_minor, baseline)
    out += simple_findings("PP318", "ppaux", stages, fact["ppaux"], baseline)
    return out


#: Ranks without a fingerprint listed one by one; the rest are counted in one more finding.
_MAX_ABSENT = 64


def _rank_rules(stages: Sequence[Stage], missing: Sequence[MissingRank]) -> list[Finding]:
    out: list[Finding] = []
    fps = [s.fingerprint for s in stages]
    # Global ranks identify processes; pipeline ranks repeat under tensor parallelism.
    use_global = any(fp.rank.rank is not None for fp in fps)
    kind = "rank" if use_global else "pp rank"
    by_rank: dict[int, list[Stage]] = {}
    for stage in stages:
        r = stage.fingerprint.rank
        ident = r.rank if use_global else r.pp_rank
        if ident is not None:
            by_rank.setdefault(ident, []).append(stage)
    for ident, group in sorted(by_rank.items()):
        for stage in group[1:]:
            others = span([s.path for s in group if s is not stage])
            out.append(finding("PP316", stage.path, f"{kind} {ident} is also claimed by {others}"))
    for gone in missing:
        out.append(finding("PP317/gone", f"rank {gone.rank}", gone.message))
    sizes = [fp.rank.world_size if use_global else fp.rank.pp_size for fp in fps]
    size = max((s for s in sizes if s is not None), default=None)
    if size is None or not by_rank:
        return out
    reported = {gone.rank for gone in missing} if use_global else set()
    size_kind = "world size" if use_global else "pp size"
    # The size comes from a file: the ranks it names are counted, never enumerated, so a
    # world size of 10**30 costs no more than one of 8.
    present = {i for i in set(by_rank) | reported if 0 <= i < size}
    absent = size - len(present)
    listed = itertools.islice((i for i in itertools.count() if i not in present), _MAX_ABSENT)
    for ident in listed:
        if ident >= size:
            break
        out.append(
            finding(
                "PP317/absent",
                f"{kind} {ident}",
                f"{size_kind} is {size} but no fingerprint has {kind} {ident}",
            )
        )
    if absent > _MAX_ABSENT:
        out.append(
            finding(
                "PP317/omitted",
                f"{absent - _MAX_ABSENT} more {kind}s",
                f"{size_kind} is {size} but no fingerprint has {absent - _MAX_ABSENT} more "
                f"{kind}s past the {_MAX_ABSENT} listed",
            )
        )
    return out


# ----------------------------------------------------------------------------------------------


def compare_stages(
    fingerprints: Sequence[Fingerprint],
    paths: Sequence[str] | None = None,
    *,
    baseline: Fingerprint | None = None,
    missing: Sequence[MissingRank] = (),
) -> Report:
    """Compare stages; ``paths`` name them in findings (default: each fingerprint's source).

    ``baseline`` is a golden fingerprint every stage must match; ``missing`` lists ranks that
    never reported in distributed mode.
    """
    from ppaux.skew.matrix import matrix  # the table builder reuses this module's references

    if paths is None:
        paths = [fp.source or f"rank {fp.rank.rank} ({fp.host})" for fp in fingerprints]
    stages = make_stages(fingerprints, paths)
    findings: list[Finding] = []
    findings += _platform_rules(stages, baseline)
    findings += transport_rules(stages, baseline)
    findings += logprob_rules(stages, baseline)
    findings += unknown_rules(stages)
    findings += _env_rules(stages, baseline)
    findings += _package_rules(stages, baseline)
    findings += _rank_rules(stages, missing)
    order = {s.path: i for i, s in enumerate(stages)}
    findings.sort(key=lambda f: (-f.severity.rank, order.get(f.path, len(order)), f.code))
    # Thousands of differing variables are one problem told thousands of times: each code keeps
    # its first findings and counts the rest, as inspect and replay do.
    findings = [_counted(f) for f in FindingsBudget(Limits()).cap(findings)]

    notes = [_roles_note(stages)]
    if baseline is not None:
        notes.append(f"compared with the baseline {baseline.source or '(given)'}")
    if len(stages) < 2 and baseline is None:
        notes.append("only one stage: nothing to compare it with (its own checks still ran)")
    # Nothing of the transport was compared: not a pass, each input not checked.
    unchecked = bool(stages) and not any(s.fingerprint.sglang.found for s in stages)
    return Report(
        command="check-skew",
        findings=tuple(findings),
        data={
            "stages": [s.summary() for s in stages],
            "baseline": None
            if baseline is None
            else Stage(BASELINE_LABEL, baseline.source or BASELINE_LABEL, baseline).summary(),
            "missing_ranks": [m.to_json() for m in missing],
        },
        tables=(matrix(stages, baseline, env_names_differing(stages, baseline)),),
        notes=tuple(notes),
        problems=tuple(InputProblem(s.path, _NO_SGLANG) for s in stages) if unchecked else (),
    )


_NO_SGLANG = (
    "holds none of sglang's facts (taken by a Python without sglang), nor does any other "
    "fingerprint: the stages' transports could not be compared; take each fingerprint with "
    "the Python that runs sglang"
)


def _counted(item: Finding) -> Finding:
    # The summary of a cut, in check-skew's words: check-skew takes no --limit.
    omitted = item.extra.get("omitted")
    if item.key is not None or not isinstance(omitted, int) or isinstance(omitted, bool):
        return item
    message = (
        f"{omitted} more {item.code} findings for this stage are not listed (the report lists "
        f"the first {FindingsBudget(Limits()).per_code} of each code)"
    )
    return dataclasses.replace(item, message=message)


def _roles_note(stages: Sequence[Stage]) -> str:
    known = [s for s in stages if s.role is not None]
    if not known:
        return (
            "roles unknown (a fingerprint taken with its stage's rank and the pipeline's size "
            "says which stage is first and last): every stage was checked as a sender and as a "
            "receiver"
        )
    firsts = [s.label for s in known if s.role in ("first", "only")]
    lasts = [s.label for s in known if s.role in ("last", "only")]
    return (
        f"first stage (receives): {span(firsts) or 'none'}; "
        f"last stage (sends): {span(lasts) or 'none'}"
    )
