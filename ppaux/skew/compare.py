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
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from packaging.version import InvalidVersion, Version

from ppaux.limits import Limits
from ppaux.report import Finding, Report, Severity, cap_per_code, finding
from ppaux.skew.fingerprint import Fingerprint
from ppaux.skew.livepatch import live_findings
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
    reference_value,
    span,
)
from ppaux.text import shown

__all__ = ["BASELINE_LABEL", "IGNORED_ENV", "compare_stages", "env_names_differing"]

#: Column label of the baseline fingerprint.
BASELINE_LABEL = "baseline"

#: Variables that differ between ranks by design; never reported.
IGNORED_ENV = frozenset(
    {"RANK", "LOCAL_RANK", "GROUP_RANK", "ROLE_RANK", "CUDA_VISIBLE_DEVICES", "LOCAL_WORLD_SIZE"}
)
_IGNORED_ENV_PREFIXES = ("TORCHELASTIC_",)


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


def _differences(
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


def _simple(
    code: str,
    what: str,
    stages: Sequence[Stage],
    value: Callable[[Fingerprint], str | None],
    baseline: Fingerprint | None,
    severity: Callable[[str, str], Severity | None] | None = None,
    key: str | None = None,
) -> list[Finding]:
    out = []
    for stage, v, ref, others in _differences(stages, value, baseline):
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


def _release_severity(value: str, ref: str) -> Severity:
    """Error when major.minor differ, warning for a patch release or local build."""
    try:
        a, b = Version(value), Version(ref)
    except (InvalidVersion, ValueError):  # ValueError: a number past Python's 4300 digits
        return Severity.ERROR
    return Severity.ERROR if a.release[:2] != b.release[:2] else Severity.WARNING


# ----------------------------------------------------------------------------------------------
# Capability rules


def _transport_rules(stages: Sequence[Stage], baseline: Fingerprint | None) -> list[Finding]:
    out: list[Finding] = []
    everyone = [s.fingerprint for s in stages] + ([baseline] if baseline is not None else [])
    holders = [s for s in stages if s.fingerprint.sglang.transport == "present"]
    if any(fp.sglang.transport == "present" for fp in everyone):
        for stage in stages:
            if stage.fingerprint.sglang.transport != "absent":
                continue
            if baseline is not None and baseline.sglang.transport == "present":
                where = "the baseline has it"
            else:
                labels = [s.label for s in holders]
                where = f"{span(labels)} {'has' if len(labels) == 1 else 'have'} it"
            version = stage.fingerprint.sglang.version or "?"
            severity = None
            effect = {
                "last": "this last stage never sends the observer's output",
                "first": "this first stage never pops auxiliary keys; they stay in the message",
                "middle": "a middle stage neither sends nor pops auxiliary output, so only the "
                "release skew matters here",
            }.get(stage.role or "", "auxiliary output sent or received here is lost")
            if stage.role == "middle":
                severity = Severity.WARNING
            out.append(
                finding(
                    "PP302",
                    stage.path,
                    f"no auxiliary transport here (sglang {version}) but {where}: {effect}",
                    severity=severity,
                )
            )
    for stage in stages:
        cap = stage.fingerprint.sglang
        if cap.transport != "present":
            continue
        if stage.sends and cap.sender_validates is False:
            missing = [
                k
                for k in ("names", "tensors", "duplicates")
                if not (cap.sender_checks or {}).get(k, False)
            ]
            role = "the last stage" if stage.role == "last" else "a possible sender"
            out.append(
                finding(
                    "PP303",
                    stage.path,
                    f"{role}'s add_auxiliary_output_to_pp_tensors does not check "
                    f"{', '.join(missing)}",
                    "add_auxiliary_output_to_pp_tensors",
                )
            )
        if cap.match == "modified":
            out.append(
                finding(
                    "PP304",
                    stage.path,
                    "add/pop match no known release (sglang "
                    f"{cap.version or '?'}): a patched, forked or newer build",
                )
            )
        if stage.pops and cap.receiver_validates is False:
            out.append(
                finding(
                    "PP305",
                    stage.path,
                    "pop_auxiliary_output_from_pp_tensors passes non-tensor values to the observer",
                    "pop_auxiliary_output_from_pp_tensors",
                )
            )
        calls = cap.scheduler_calls or {}
        unused = [name for name in ("add", "pop") if calls and not calls.get(name, True)]
        if unused:
            out.append(
                finding(
                    "PP323",
                    stage.path,
                    f"scheduler_pp_mixin.py never calls {' or '.join(unused)}",
                )
            )
        if (
            cap.prefix is not None
            and cap.receiver_prefix is not None
            and cap.prefix != cap.receiver_prefix
        ):
            out.append(
                finding(
                    "PP306",
                    stage.path,
                    f"add writes {cap.prefix!r} but pop reads {cap.receiver_prefix!r} in the same "
                    "build",
                )
            )
    out += _simple(
        "PP306",
        "prefix",
        stages,
        lambda fp: (
            repr(fp.sglang.prefix)
            if fp.sglang.transport == "present" and fp.sglang.prefix
            else None
        ),
        baseline,
    )
    out += _simple(
        "PP308",
        "wire code",
        stages,
        lambda fp: fp.sglang.wire_digest[:12] if fp.sglang.wire_digest else None,
        baseline,
    )
    for stage in stages:
        if stage.fingerprint.sglang.live:
            out += live_findings(stage.fingerprint.sglang.live, stage.path)
    return out


def _unknown_rules(stages: Sequence[Stage]) -> list[Finding]:
    out = []
    for stage in stages:
        cap = stage.fingerprint.sglang
        if not cap.found:
            reason = cap.unknown.get("sglang", "sglang was not found")
            out.append(finding("PP319", stage.path, reason))
            continue
        reasons = sorted(set(cap.unknown.values()))
        if reasons:
            out.append(finding("PP319", stage.path, "; ".join(reasons)))
    return out


def _key_profile(fp: Fingerprint) -> tuple[Any, ...] | None:
    cap = fp.sglang
    if cap.logprob_keys is None or cap.receiver_logprob_keys is None:
        return None
    return (cap.logprob_keys, cap.receiver_logprob_keys, cap.receiver_sampling_mask_keys or ())


def _missing_keys(sender: Fingerprint, receiver: Fingerprint) -> tuple[list[str], list[str]]:
    sent = set(sender.sglang.logprob_keys or ())
    always = [k for k in receiver.sglang.receiver_logprob_keys or () if k not in sent]
    masked = [k for k in receiver.sglang.receiver_sampling_mask_keys or () if k not in sent]
    return always, masked


#: Keys named in one message; a fingerprint could list thousands.
_MAX_LISTED_KEYS = 10


def _listed(keys: Sequence[str]) -> str:
    """The first keys quoted (each cut at 60 characters), then how many more."""
    listed = ", ".join(f"'{shown(k, 60)}'" for k in keys[:_MAX_LISTED_KEYS])
    more = len(keys) - _MAX_LISTED_KEYS
    return f"{listed} and {more} more" if more > 0 else listed


def _key_finding(
    receiver: Stage, sender_text: str, always: list[str], masked: list[str]
) -> Finding:
    keys = always or masked
    when = "on logprob batches" if always else "when a sampling mask is requested"
    listed = _listed(keys)
    return finding(
        "PP307",
        receiver.path,
        f"this stage indexes {listed} {when}, which {sender_text} does not send",
        keys[0],
        sglang_error=f"KeyError: {keys[0]!r}",
        extra={"missing_keys": keys},
    )


def _logprob_rules(stages: Sequence[Stage], baseline: Fingerprint | None) -> list[Finding]:
    out: list[Finding] = []
    senders = [s for s in stages if s.sends and _key_profile(s.fingerprint)]
    receivers = [s for s in stages if s.receives and _key_profile(s.fingerprint)]
    # Group by key profile: 1,024 identical stages are one comparison, not a million.
    sender_groups: dict[tuple[Any, ...], list[Stage]] = {}
    for s in senders:
        profile = _key_profile(s.fingerprint)
        assert profile is not None  # senders were chosen for having one
        sender_groups.setdefault(profile, []).append(s)
    for receiver in receivers:
        for group in sender_groups.values():
            others = [s for s in group if s is not receiver]
            if not others:
                continue
            always, masked = _missing_keys(others[0].fingerprint, receiver.fingerprint)
            if always or masked:
                version = others[0].fingerprint.sglang.version or "?"
                text = f"{span([s.label for s in others])} (sglang {version})"
                out.append(_key_finding(receiver, text, always, masked))
    if baseline is not None and _key_profile(baseline) is not None:
        flagged = {f.path for f in out}
        for stage in stages:
            profile = _key_profile(stage.fingerprint)
            if profile is None or profile == _key_profile(baseline) or stage.path in flagged:
                continue
            always, masked = _missing_keys(baseline, stage.fingerprint)
            if not (always or masked):
                always, masked = _missing_keys(stage.fingerprint, baseline)
                if always or masked:
                    keys = always or masked
                    out.append(
                        finding(
                            "PP307",
                            stage.path,
                            f"this stage does not send {_listed(keys)}, which "
                            "a first stage like the baseline indexes",
                            keys[0],
                            sglang_error=f"KeyError: {keys[0]!r}",
                            extra={"missing_keys": keys},
                        )
                    )
                continue
            out.append(_key_finding(stage, "the baseline", always, masked))
    return out


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
        out += _simple(code, name, stages, env_reader(name), baseline, key=name)
    return out


def env_names_differing(stages: Sequence[Stage], baseline: Fingerprint | None) -> list[str]:
    """Names of the variables whose effective value differs somewhere (matrix rows)."""
    return sorted({f.key for f in _env_rules(stages, baseline) if f.key})


def _package_rules(stages: Sequence[Stage], baseline: Fingerprint | None) -> list[Finding]:
    out: list[Finding] = []
    for name in PACKAGE_FACTS:
        out += _simple("PP324", name, stages, package_reader(name), baseline, key=name)
    return out


def _platform_rules(stages: Sequence[Stage], baseline: Fingerprint | None) -> list[Finding]:
    fact = {f.name: f.value for f in FACTS}
    out: list[Finding] = []
    out += _simple("PP301", "sglang", stages, fact["sglang"], baseline)
    out += _simple("PP309", "torch", stages, fact["torch"], baseline, severity=_release_severity)

    def cuda_severity(value: str, ref: str) -> Severity:
        def minor(text: str) -> str:
            return ".".join(text.split(".")[:2])

        return Severity.ERROR if minor(value) != minor(ref) else Severity.WARNING

    out += _simple(
        "PP311",
        "torch's CUDA build",
        stages,
        fact["CUDA (torch)"],
        baseline,
        severity=cuda_severity,
    )
    out += _simple("PP310", "NCCL", stages, fact["NCCL"], baseline)
    out += _simple("PP312", "NVIDIA driver", stages, fact["driver"], baseline)
    out += _simple("PP313", "Python", stages, python_minor, baseline)
    out += _simple("PP318", "ppaux", stages, fact["ppaux"], baseline)
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
        out.append(finding("PP317", f"rank {gone.rank}", gone.message))
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
                "PP317",
                f"{kind} {ident}",
                f"{size_kind} is {size} but no fingerprint has {kind} {ident}",
            )
        )
    if absent > _MAX_ABSENT:
        out.append(
            finding(
                "PP317",
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
    findings += _transport_rules(stages, baseline)
    findings += _logprob_rules(stages, baseline)
    findings += _unknown_rules(stages)
    findings += _env_rules(stages, baseline)
    findings += _package_rules(stages, baseline)
    findings += _rank_rules(stages, missing)
    order = {s.path: i for i, s in enumerate(stages)}
    findings.sort(key=lambda f: (-f.severity.rank, order.get(f.path, len(order)), f.code))
    # Thousands of differing variables are one problem told thousands of times: each code keeps
    # its first findings and counts the rest, as inspect and replay do.
    per_code = Limits().max_findings_per_code
    findings = [_counted(f) for f in cap_per_code(findings, per_code, "max_findings_per_code")]

    notes = [_roles_note(stages)]
    if baseline is not None:
        notes.append(f"compared with the baseline {baseline.source or '(given)'}")
    if len(stages) < 2 and baseline is None:
        notes.append("only one stage: nothing to compare it with (its own checks still ran)")
    report = Report(
        command="check-skew",
        findings=findings,
        data={
            "stages": [s.summary() for s in stages],
            "baseline": None
            if baseline is None
            else Stage(BASELINE_LABEL, baseline.source or BASELINE_LABEL, baseline).summary(),
            "missing_ranks": [m.to_json() for m in missing],
        },
        notes=notes,
    )
    report.tables.append(matrix(stages, baseline, env_names_differing(stages, baseline)))
    return report


def _counted(item: Finding) -> Finding:
    # The summary of a cut, in check-skew's words: check-skew takes no --limit.
    omitted = item.extra.get("omitted")
    if item.key is not None or not isinstance(omitted, int) or isinstance(omitted, bool):
        return item
    message = (
        f"{omitted} more {item.code} findings for this stage are not listed (the report lists "
        f"the first {Limits().max_findings_per_code} of each code)"
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
