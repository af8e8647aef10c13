"""What an sglang tree can do on the pipeline-parallel auxiliary path: :class:`Capability`,
the verdict :func:`ppaux.sglang_source.analysis.analyse` reads from its source, and the
:class:`SourceFile` records of the files read for it. Plain frozen data, written to and read
back from a fingerprint's JSON.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from ppaux.sglang import Presence, TransportMatch, WireMatch
from ppaux.suggestions import Suggestion

__all__ = ["Capability", "SourceFile"]


@dataclass(frozen=True)
class SourceFile:
    """One file the analysis read: ``status`` is ok, absent, unreadable or unparsable;
    ``suggestions`` say what would let it be read (a limit to raise), as data, for this run
    only (not written to a fingerprint's JSON)."""

    role: str
    path: str
    status: str
    sha256: str | None = None
    reason: str | None = None
    suggestions: tuple[Suggestion, ...] = field(default=(), compare=False)

    def to_json(self) -> dict[str, Any]:
        """The file as a JSON object."""
        return {
            "role": self.role,
            "path": self.path,
            "status": self.status,
            "sha256": self.sha256,
            "reason": self.reason,
        }


#: The fields that say what was found and where, in the order reports list them.
_IDENTITY = (
    "found",
    "origin",
    "location",
    "version",
    "transport",
    "match",
    "match_family",
    "prefix",
    "receiver_prefix",
)


@dataclass(frozen=True)
class Capability:
    """The verdicts about one sglang tree. ``None`` in a fact means unknown; see ``unknown``.

    ``transport`` is present, absent or unknown. ``match`` says whether the transport is a
    release's: ``release`` (the file's bytes are), ``functions`` (the file differs but add, pop
    and the Protocols are a release's), ``modified``, ``absent`` or ``unknown``; ``match_family``
    names the releases it matches. ``wire`` is release, modified, absent or unknown. Each is a
    member of its enum in :mod:`ppaux.sglang.verdicts` (given as its word, it is made one).
    """

    found: bool
    origin: str | None = None
    location: str | None = None
    version: str | None = None
    transport: Presence = Presence.UNKNOWN
    match: TransportMatch = TransportMatch.UNKNOWN
    match_family: str | None = None
    prefix: str | None = None
    receiver_prefix: str | None = None
    sender_checks: dict[str, bool] | None = None
    receiver_checks: dict[str, bool] | None = None
    scheduler_calls: dict[str, bool] | None = None
    logprob_keys: tuple[str, ...] | None = None
    receiver_logprob_keys: tuple[str, ...] | None = None
    receiver_sampling_mask_keys: tuple[str, ...] | None = None
    output_keys: tuple[str, ...] | None = None
    optional_output_keys: tuple[str, ...] | None = None
    wire: WireMatch = WireMatch.UNKNOWN
    wire_digest: str | None = None
    non_tensor_values: str = "unknown"
    digests: dict[str, str] = field(default_factory=dict)
    files: tuple[SourceFile, ...] = ()
    unknown: dict[str, str] = field(default_factory=dict)
    live: dict[str, str] | None = None

    def __post_init__(self) -> None:
        # A verdict given as its word ("present") is the member of that word.
        object.__setattr__(self, "transport", Presence(self.transport))
        object.__setattr__(self, "match", TransportMatch(self.match))
        object.__setattr__(self, "wire", WireMatch(self.wire))

    @property
    def sender_validates(self) -> bool | None:
        """True when add refuses bad names, non-tensors and duplicates; None when unknown."""
        if self.sender_checks is None:
            return None
        return all(self.sender_checks.get(k, False) for k in ("names", "tensors", "duplicates"))

    @property
    def receiver_validates(self) -> bool | None:
        """True when pop refuses non-tensor values; None when unknown."""
        if self.receiver_checks is None:
            return None
        return bool(self.receiver_checks.get("tensors", False))

    def _identity(self) -> dict[str, Any]:
        """What was found and where, first in both :meth:`verdicts` and :meth:`to_json`."""
        return {name: getattr(self, name) for name in _IDENTITY}

    def verdicts(self) -> dict[str, Any]:
        """The verdicts without the evidence (digests, files, key lists), for reports."""
        return {
            **self._identity(),
            "sender_validates": self.sender_validates,
            "sender_checks": self.sender_checks,
            "receiver_validates": self.receiver_validates,
            "receiver_checks": self.receiver_checks,
            "scheduler_calls": self.scheduler_calls,
            "logprob_key_count": None if self.logprob_keys is None else len(self.logprob_keys),
            "wire": self.wire,
            "non_tensor_values": self.non_tensor_values,
            "unknown": dict(self.unknown),
            "live": self.live,
        }

    def to_json(self) -> dict[str, Any]:
        """The verdicts as the fingerprint's ``sglang`` object (docs/check-skew.md)."""

        def keys(value: tuple[str, ...] | None) -> list[str] | None:
            return None if value is None else list(value)

        return {
            **self._identity(),
            "sender_checks": self.sender_checks,
            "receiver_checks": self.receiver_checks,
            "scheduler_calls": self.scheduler_calls,
            "logprob_keys": keys(self.logprob_keys),
            "receiver_logprob_keys": keys(self.receiver_logprob_keys),
            "receiver_sampling_mask_keys": keys(self.receiver_sampling_mask_keys),
            "output_keys": keys(self.output_keys),
            "optional_output_keys": keys(self.optional_output_keys),
            "wire": self.wire,
            "wire_digest": self.wire_digest,
            "non_tensor_values": self.non_tensor_values,
            "digests": dict(self.digests),
            "files": [f.to_json() for f in self.files],
            "unknown": dict(self.unknown),
            "live": self.live,
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Capability:
        """Rebuild from :meth:`to_json` output that :mod:`ppaux.skew.fingerprint` has validated."""

        def keys(value: Iterable[str] | None) -> tuple[str, ...] | None:
            return None if value is None else tuple(value)

        return cls(
            found=doc["found"],
            origin=doc.get("origin"),
            location=doc.get("location"),
            version=doc.get("version"),
            transport=doc.get("transport", "unknown"),
            match=doc.get("match", "unknown"),
            match_family=doc.get("match_family"),
            prefix=doc.get("prefix"),
            receiver_prefix=doc.get("receiver_prefix"),
            sender_checks=doc.get("sender_checks"),
            receiver_checks=doc.get("receiver_checks"),
            scheduler_calls=doc.get("scheduler_calls"),
            logprob_keys=keys(doc.get("logprob_keys")),
            receiver_logprob_keys=keys(doc.get("receiver_logprob_keys")),
            receiver_sampling_mask_keys=keys(doc.get("receiver_sampling_mask_keys")),
            output_keys=keys(doc.get("output_keys")),
            optional_output_keys=keys(doc.get("optional_output_keys")),
            wire=doc.get("wire", "unknown"),
            wire_digest=doc.get("wire_digest"),
            non_tensor_values=doc.get("non_tensor_values", "unknown"),
            digests=dict(doc.get("digests") or {}),
            files=tuple(
                SourceFile(
                    role=f["role"],
                    path=f["path"],
                    status=f["status"],
                    sha256=f.get("sha256"),
                    reason=f.get("reason"),
                )
                for f in doc.get("files") or ()
            ),
            unknown=dict(doc.get("unknown") or {}),
            live=doc.get("live"),
        )

    def with_live(self, live: dict[str, str] | None) -> Capability:
        """A copy carrying the verdict of :func:`ppaux.skew.livepatch.live_state`."""
        return replace(self, live=live)
