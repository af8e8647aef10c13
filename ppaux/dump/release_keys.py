"""The keys of an output message held against what one sglang release's first stage indexes.

``inspect --release X`` asks this of every output message in a dump: the release's facts come
from :mod:`ppaux.sglang`'s table, the findings (PP321, PP322) from the rule catalogue.
"""

from __future__ import annotations

from ppaux.errors import SettingError
from ppaux.report import Finding, Severity, finding
from ppaux.sglang import (
    MSG_TYPE_KEY,
    OUTPUT_PREFIX,
    known_release,
    release,
    release_versions,
    unknown_release,
)

__all__ = ["release_key_findings"]


def release_key_findings(path: str, keys: list[str], version: str) -> list[Finding]:
    """Check an output message's top-level ``keys`` against what ``version`` (``0.5.23``) expects.

    The first PP stage of that release indexes ``next_token_ids`` on every output message and
    its logprob keys on logprob batches (a message that carries any logprob key); a missing one
    predicts ``KeyError``. Keys of a sampling mask are indexed only when the message carries a
    mask. Logprob keys that this release never sends but another one does mean the last stage
    runs another release. Raises :class:`~ppaux.errors.SettingError` for a release the table
    lacks.
    """
    if not known_release(version):
        raise SettingError(
            "release", version, "not in the release table", text=unknown_release(version)
        )
    expected = release(version)
    present = [k for k in keys if isinstance(k, str)]
    have = set(present)
    if have <= {MSG_TYPE_KEY} or any(k in have for k in ("hidden_states", "residual")):
        # Not an output message (empty, or a proxy message): the receiver does not index it.
        return []
    every_release = [release(v) for v in release_versions()]
    findings: list[Finding] = []
    every_logprob_key = {k for r in every_release for k in r.logprob_keys}
    logprob_batch = bool(have & every_logprob_key)
    needed = [(k, Severity.ERROR, "on every output message") for k in expected.output_keys]
    if logprob_batch:
        needed += [
            (k, Severity.ERROR, "on logprob batches") for k in expected.receiver_logprob_keys
        ]
        if "sampling_mask_token_ids" in have:
            needed += [
                (k, Severity.ERROR, "when the message carries a sampling mask")
                for k in expected.receiver_sampling_mask_keys
            ]
    for key, severity, when in needed:
        if key in have:
            continue
        findings.append(
            finding(
                "PP321",
                path,
                f"sglang {expected.version}'s first stage indexes {key!r} {when}; this message "
                f"lacks it",
                key,
                severity=severity,
                sglang_error=f"KeyError: {key!r}",
            )
        )
    known_here = {
        *expected.output_keys,
        *expected.optional_output_keys,
        *expected.logprob_keys,
        MSG_TYPE_KEY,
    }
    for key in present:
        if key in known_here or key.startswith(OUTPUT_PREFIX):
            continue
        senders = [r.version for r in every_release if key in r.logprob_keys]
        if senders:
            findings.append(
                finding(
                    "PP322",
                    path,
                    f"{key!r} is sent by sglang {_version_span(senders)}, not by "
                    f"{expected.version}: the last stage runs another release",
                    key,
                )
            )
    return findings


def _version_span(versions: list[str]) -> str:
    return versions[0] if len(versions) == 1 else f"{versions[0]}-{versions[-1]}"
