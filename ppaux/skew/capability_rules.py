"""The rules on what each stage's sglang can do: its auxiliary transport (PP302 - PP308,
PP323), the logprob keys one stage sends and the next indexes (PP307), and facts the analysis
could not establish (PP319). :func:`ppaux.skew.compare.compare_stages` runs them with the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ppaux.report import Finding, Severity, finding
from ppaux.sglang import Presence, TransportMatch
from ppaux.sglang_source import INVALID_PYTHON
from ppaux.skew.differences import simple_findings
from ppaux.skew.fingerprint import Fingerprint
from ppaux.skew.livepatch import live_findings
from ppaux.skew.stage import Stage, span
from ppaux.text import cut

__all__ = ["logprob_rules", "transport_rules", "unknown_rules"]


def transport_rules(stages: Sequence[Stage], baseline: Fingerprint | None) -> list[Finding]:
    """PP302 - PP308 and PP323: the auxiliary transport across stages and in each build."""
    out = _absent_transport(stages, baseline)
    for stage in stages:
        if stage.fingerprint.sglang.transport is Presence.PRESENT:
            out += _own_build(stage)
    out += simple_findings(
        "PP306",
        "prefix",
        stages,
        lambda fp: (
            repr(fp.sglang.prefix)
            if fp.sglang.transport is Presence.PRESENT and fp.sglang.prefix
            else None
        ),
        baseline,
    )
    out += simple_findings(
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


_ABSENT_EFFECT = {
    "last": "this last stage never sends the observer's output",
    "first": "this first stage never pops auxiliary keys; they stay in the message",
    "middle": "a middle stage neither sends nor pops auxiliary output, so only the "
    "release skew matters here",
}


def _absent_transport(stages: Sequence[Stage], baseline: Fingerprint | None) -> list[Finding]:
    """PP302 for each stage without the transport when another stage (or the baseline) has it."""
    everyone = [s.fingerprint for s in stages] + ([baseline] if baseline is not None else [])
    if not any(fp.sglang.transport is Presence.PRESENT for fp in everyone):
        return []
    holders = [s.label for s in stages if s.fingerprint.sglang.transport is Presence.PRESENT]
    if baseline is not None and baseline.sglang.transport is Presence.PRESENT:
        where = "the baseline has it"
    else:
        where = f"{span(holders)} {'has' if len(holders) == 1 else 'have'} it"
    out: list[Finding] = []
    for stage in stages:
        if stage.fingerprint.sglang.transport is not Presence.ABSENT:
            continue
        version = stage.fingerprint.sglang.version or "?"
        effect = _ABSENT_EFFECT.get(
            stage.role or "", "auxiliary output sent or received here is lost"
        )
        out.append(
            finding(
                "PP302",
                stage.path,
                f"no auxiliary transport here (sglang {version}) but {where}: {effect}",
                severity=Severity.WARNING if stage.role == "middle" else None,
            )
        )
    return out


def _own_build(stage: Stage) -> list[Finding]:
    """PP303 - PP306 and PP323: what one stage's own transport and scheduler do."""
    cap = stage.fingerprint.sglang
    out: list[Finding] = []
    if stage.sends and cap.sender_validates is False:
        checks = cap.sender_checks or {}
        missing = [k for k in ("names", "tensors", "duplicates") if not checks.get(k, False)]
        role = "the last stage" if stage.role == "last" else "a possible sender"
        out.append(
            finding(
                "PP303",
                stage.path,
                f"{role}'s add_auxiliary_output_to_pp_tensors does not check {', '.join(missing)}",
                "add_auxiliary_output_to_pp_tensors",
            )
        )
    if cap.match is TransportMatch.MODIFIED:
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
            finding("PP323", stage.path, f"scheduler_pp_mixin.py never calls {' or '.join(unused)}")
        )
    if cap.prefix is not None and cap.receiver_prefix is not None:
        if cap.prefix != cap.receiver_prefix:
            out.append(
                finding(
                    "PP306/add-pop-mismatch",
                    stage.path,
                    f"add writes {cap.prefix!r} but pop reads {cap.receiver_prefix!r} in the "
                    "same build",
                )
            )
    return out


def unknown_rules(stages: Sequence[Stage]) -> list[Finding]:
    out = []
    for stage in stages:
        cap = stage.fingerprint.sglang
        if not cap.found:
            reason = cap.unknown.get("sglang", "sglang was not found")
            out.append(finding("PP319/not-found", stage.path, reason))
            continue
        invalid = [
            f"{file.path}: {file.reason}"
            for file in cap.files
            if file.status == "unparsable" and (file.reason or "").startswith(INVALID_PYTHON)
        ]
        for reason in invalid:
            out.append(finding("PP325", stage.path, reason))
        # What is unknown only because such a file is said once, by PP325.
        reasons = sorted(set(cap.unknown.values()) - set(invalid))
        if reasons:
            out.append(finding("PP319/unknown", stage.path, "; ".join(reasons)))
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
    listed = ", ".join(f"'{cut(k, 60)}'" for k in keys[:_MAX_LISTED_KEYS])
    more = len(keys) - _MAX_LISTED_KEYS
    return f"{listed} and {more} more" if more > 0 else listed


def _key_finding(
    receiver: Stage, sender_text: str, always: list[str], masked: list[str]
) -> Finding:
    keys = always or masked
    when = "on logprob batches" if always else "when a sampling mask is requested"
    listed = _listed(keys)
    return finding(
        "PP307/not-sent",
        receiver.path,
        f"this stage indexes {listed} {when}, which {sender_text} does not send",
        keys[0],
        sglang_error=f"KeyError: {keys[0]!r}",
        extra={"missing_keys": keys},
    )


def logprob_rules(stages: Sequence[Stage], baseline: Fingerprint | None) -> list[Finding]:
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
                            "PP307/baseline-indexes",
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
