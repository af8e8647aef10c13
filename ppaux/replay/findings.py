"""The findings of a replay (PP401 - PP409), made from its results.

:func:`payload_findings` reads one payload's first implementation (and the divergences between
the two); :func:`not_reproduced` compares a capture's record with the replay's ending.
"""

from __future__ import annotations

from ppaux.replay.options import ReplayOptions
from ppaux.replay.results import DumpResult, PayloadResult, Recorded, RunResult
from ppaux.replay.vocabulary import Sender, Transport
from ppaux.report import Finding, finding
from ppaux.suggestions import Setting

__all__ = ["WIRE_PHRASE", "not_reproduced", "payload_findings"]

#: How a finding names each transport.
WIRE_PHRASE = {
    Transport.NONE: "dict as sent (no wire)",
    Transport.WIRE: "emulated wire",
    Transport.TORCH_DISTRIBUTED: "torch.distributed wire",
    Transport.SGLANG: "sglang's own wire",
}


def _where(locator: str, key: object) -> str | None:
    if key is None:
        return None
    return f"{locator}[{key!r}]" if locator else str(key)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 160 else text[:157] + "..."


def _stage_finding(
    path: str, primary: RunResult, where: str | None, transport: str
) -> Finding | None:
    """The finding of the stage where the replay stopped (add, the wire, pop, the add back), or
    of a pop that found nothing; None when every stage passed and pop found entries."""
    stage, error = primary.stage, f"{primary.error_type}: {primary.error}"
    if stage == "add":
        return finding(
            "PP402",
            path,
            f"a validating sender refuses this auxiliary output: add raises "
            f"{error}; rank 0 never receives it (the legacy sender, which does not check, "
            "shows what rank 0 would receive)",
            where,
            sglang_error=primary.error,
            suggestions=(Setting("sender", Sender.LEGACY.value),),
        )
    if stage == "wire":
        failure = primary.failure
        side = failure.side if failure is not None else "sender"
        after = (
            " after the metadata was sent, so the receiver waits for data that never comes"
            if failure is not None and failure.metadata_sent and side == "sender"
            else ""
        )
        return finding("PP403", path, f"the {transport} fails on the {side}{after}: {error}", where)
    if stage == "pop":
        return finding(
            "PP401", path, f"pop on rank 0 raises {error}", where, sglang_error=primary.error
        )
    if stage == "readd":
        return finding(
            "PP404",
            path,
            f"the popped output cannot be added back: add raises {error}",
            where,
            sglang_error=primary.error,
        )
    if primary.output is None:
        return finding(
            "PP409",
            path,
            "pop finds no auxiliary entries: rank 0 gets no auxiliary output from this dict",
        )
    return None


def payload_findings(path: str, result: PayloadResult, options: ReplayOptions) -> list[Finding]:
    """The findings of one replayed payload of the dump at ``path``."""
    found: list[Finding] = []
    primary = result.primary
    locator = result.locator
    transport = WIRE_PHRASE[Transport(options.transport)]
    first = _stage_finding(path, primary, _where(locator, primary.culprit), transport)
    if first is not None:
        found.append(first)
    for item in primary.mismatches:
        found.append(
            finding(
                "PP405",
                path,
                f"{item['key']} does not survive the {transport}, pop and add: "
                f"{item['detail']}"
                + (
                    f" (sent {item['sent']}, received {item['received']})"
                    if item["sent"] is not None
                    else ""
                ),
                _where(locator, item["key"]),
            )
        )
    for item in primary.changes:
        found.append(
            finding(
                "PP407",
                path,
                f"{item['key']}: {item['detail']} (sent {item['sent']}, received "
                f"{item['received']})",
                _where(locator, item["key"]),
            )
        )
    for item in result.divergences:
        found.append(
            finding(
                "PP406",
                path,
                f"reference and sglang disagree on {item['field']}: reference "
                f"{_short(item['reference'])}, sglang {_short(item['sglang'])}",
                _where(locator, primary.culprit),
            )
        )
    return found


def not_reproduced(
    path: str, recorded: Recorded, result: DumpResult, options: ReplayOptions
) -> Finding:
    """PP408: the capture recorded one ending and this replay ends with another."""
    was = (
        f"{recorded.exception_type}: {recorded.exception_message}"
        if recorded.exception_type
        else "no error"
    )
    now = (
        f"{result.error_type}: {result.error} at {result.stage}"
        if result.error is not None
        else "no error"
    )
    hint = ""
    suggestions: tuple[Setting, ...] = ()
    if result.stage == "add" and recorded.function == "pop_auxiliary_output_from_pp_tensors":
        hint = (
            "; the recorded error happened on rank 0, so the sender did not validate: replay "
            "with the legacy sender"
        )
        suggestions = (Setting("sender", Sender.LEGACY.value),)
    return finding(
        "PP408",
        path,
        f"the capture recorded {was} in {recorded.function}; this "
        f"replay (sender {options.sender.value}, transport {options.transport.value}) "
        f"ends with {now}{hint}",
        None,
        suggestions=suggestions,
    )
