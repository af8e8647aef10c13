"""What a replay found, as frozen types: one :class:`RunResult` per implementation and payload,
one :class:`PayloadResult` per tensor dict, one :class:`DumpResult` per file.

``to_json()`` gives each as the plain data ``ppaux replay --format json`` prints under
``results`` (see ``docs/report-schema.md``): the same keys, in the same order. The descriptions
of values (``sent``, ``received``, ``output``) and the items of ``mismatches``, ``changes`` and
``divergences`` stay plain dicts: they are made by :mod:`ppaux.replay.roundtrip`, partly in the
receiving process of a two-process wire, and printed as they are.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    from ppaux.replay.protocol import WireFailure
    from ppaux.replay.wire import WireStats

__all__ = [
    "DumpResult",
    "PayloadResult",
    "Recorded",
    "Refusal",
    "ReplayData",
    "ReplaySettings",
    "RunResult",
    "worst",
]

#: Outcomes from best to worst.
OUTCOMES = ("ok", "error", "diverged")


class ReplaySettings(TypedDict):
    """How the dumps were replayed: ``data.replay`` of a replay's report."""

    device: str
    sender: str
    transport: str
    impl: str
    all_gather: int
    #: Each implementation replayed: what it is and the sglang releases it stands for.
    implementations: dict[str, dict[str, Any]]
    #: The sglang the sglang transport ran (None for the others).
    sglang_runtime: dict[str, Any] | None


class ReplayData(TypedDict):
    """A replay's report data (``Report.data``): the settings, and one result per dump
    (:meth:`DumpResult.to_json`)."""

    replay: ReplaySettings
    results: list[dict[str, Any]]


def worst(outcomes: Iterable[str]) -> str:
    """The worst of ``outcomes`` ('ok' for none)."""
    return max(outcomes, key=OUTCOMES.index, default="ok")


@dataclass(frozen=True)
class Refusal:
    """What a validating sender's ``add`` would have raised on a dict that reached rank 0 anyway
    (the ``none`` transport replays the dict as recorded)."""

    error_type: str
    error: str
    culprit: str | None

    def to_json(self) -> dict[str, Any]:
        """The refusal as plain data."""
        return {"error_type": self.error_type, "error": self.error, "culprit": self.culprit}


@dataclass(frozen=True)
class RunResult:
    """One implementation's replay of one payload: send, wire, pop, add back, compare.

    ``stage`` is where it failed ('add', 'wire', 'pop', 'readd') or None; ``error_type`` and
    ``error`` (verbatim) what was raised there; ``culprit`` the key it is about. ``stats`` and
    ``failure`` are the wire's (both None for the ``none`` transport).
    """

    impl: str
    outcome: str = "ok"
    stage: str | None = None
    error_type: str | None = None
    error: str | None = None
    culprit: str | None = None
    sent: list[dict[str, Any]] | None = None
    received: list[dict[str, Any]] | None = None
    output: list[dict[str, Any]] | None = None
    remaining_keys: list[str] | None = None
    stats: WireStats | None = None
    failure: WireFailure | None = None
    mismatches: list[dict[str, Any]] = field(default_factory=list)
    changes: list[dict[str, Any]] = field(default_factory=list)
    sender_refused: Refusal | None = None

    def wire_json(self) -> dict[str, Any] | None:
        """The ``wire`` entry: where the wire failed, or what crossed it, or None."""
        if self.failure is not None:
            return {"side": self.failure.side, "metadata_sent": self.failure.metadata_sent}
        return self.stats.to_json() if self.stats is not None else None

    def to_json(self) -> dict[str, Any]:
        """The run as plain data."""
        return {
            "impl": self.impl,
            "outcome": self.outcome,
            "stage": self.stage,
            "error_type": self.error_type,
            "error": self.error,
            "culprit": self.culprit,
            "sent": self.sent,
            "received": self.received,
            "output": self.output,
            "remaining_keys": self.remaining_keys,
            "wire": self.wire_json(),
            "mismatches": self.mismatches,
            "changes": self.changes,
            "sender_refused": (
                self.sender_refused.to_json() if self.sender_refused is not None else None
            ),
        }


@dataclass(frozen=True)
class PayloadResult:
    """One tensor dict of a dump, replayed with one or both implementations.

    ``outcome``, ``stage``, ``error_type`` and ``error`` are the first implementation's (the
    outcome is 'diverged' when the two disagree or the round trip changed a value);
    ``divergences`` lists every compared field on which they disagree.
    """

    locator: str
    role: str
    outcome: str
    stage: str | None
    error_type: str | None
    error: str | None
    runs: dict[str, RunResult]
    divergences: list[dict[str, Any]] = field(default_factory=list)

    @property
    def primary(self) -> RunResult:
        """The first implementation's run (the one the outcome and findings follow)."""
        return next(iter(self.runs.values()))

    def to_json(self) -> dict[str, Any]:
        """The payload's result as plain data."""
        return {
            "locator": self.locator,
            "role": self.role,
            "outcome": self.outcome,
            "stage": self.stage,
            "error_type": self.error_type,
            "error": self.error,
            "runs": {name: run.to_json() for name, run in self.runs.items()},
            "divergences": self.divergences,
        }


@dataclass(frozen=True)
class Recorded:
    """What a ppaux capture recorded: the function and the exception it raised, if any."""

    function: str | None
    exception_type: str | None
    exception_message: str | None

    def to_json(self) -> dict[str, Any]:
        """The record as plain data."""
        return {
            "function": self.function,
            "exception_type": self.exception_type,
            "exception_message": self.exception_message,
        }


@dataclass(frozen=True)
class DumpResult:
    """One dump replayed: the worst outcome of its payloads and the first error among them.

    ``recorded`` and ``reproduced`` are set for a ppaux capture: what it recorded, and whether
    this replay ended with the very exception type and message.
    """

    path: str
    outcome: str
    error: str | None
    error_type: str | None
    stage: str | None
    payloads: tuple[PayloadResult, ...]
    recorded: Recorded | None = None
    reproduced: bool | None = None
    #: The sender this dump was replayed with, where not the run's: a capture of rank 0's
    #: failing pop is sent as rank 0 received it (see ``ReplayOptions.sender_as_recorded``).
    sender: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The dump's result as plain data."""
        return {
            **({"sender": self.sender} if self.sender is not None else {}),
            "path": self.path,
            "outcome": self.outcome,
            "error": self.error,
            "error_type": self.error_type,
            "stage": self.stage,
            "payloads": [payload.to_json() for payload in self.payloads],
            "recorded": self.recorded.to_json() if self.recorded is not None else None,
            "reproduced": self.reproduced,
        }
