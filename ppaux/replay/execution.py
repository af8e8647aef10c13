"""Replaying one dump: read it, rebuild its tensor dicts, and for each implementation send, cross
the wire, pop and add back (:func:`replay_file`).

Each step's outcome is a frozen result (:mod:`ppaux.replay.results`); the findings are made from
them by :mod:`ppaux.replay.findings`. The wire is whatever :class:`~ppaux.replay.protocol.Wire`
the setup opened: nothing here depends on which transport it is.
"""

from __future__ import annotations

import dataclasses
import types
from typing import TYPE_CHECKING, Any, cast

from ppaux.errors import DumpError
from ppaux.limits import Limits
from ppaux.replay.findings import not_reproduced, payload_findings
from ppaux.replay.results import DumpResult, PayloadResult, Recorded, RunResult, worst
from ppaux.replay.setup import Setup
from ppaux.replay.vocabulary import Sender
from ppaux.report import Finding, FindingsBudget, finding
from ppaux.sglang import OUTPUT_PREFIX
from ppaux.torch_probe import import_torch

if TYPE_CHECKING:
    from ppaux.dump import Dump
    from ppaux.replay.options import ReplayOptions

__all__ = [
    "NothingToReplay",
    "OnceText",
    "divergences",
    "replay_file",
    "replay_payload",
    "run_impl",
]


class NothingToReplay(DumpError):
    """A dump that holds no tensor dict: not an unusable input, but judged as inspect judges it
    (``findings``: PP114, and any security finding)."""

    def __init__(self, path: str, findings: list[Finding]) -> None:
        super().__init__(path, "no tensor dict to replay")
        self.findings = findings


def replay_file(path: str, setup: Setup) -> tuple[DumpResult, list[Finding]]:
    """Replay every tensor dict of the dump at ``path`` (for a capture: its dict and output).

    Raises :class:`~ppaux.errors.DumpError` for a dump that cannot be read or holds nothing to
    replay.
    """
    from ppaux.dump import find_payloads, read_dump, walk

    dump = read_dump(path, setup.options.limits)
    # In inspect's order: too many tensor dicts or tensors are refused by the search for them,
    # before a walk of everything the file holds.
    payloads = find_payloads(dump, setup.options.limits)
    for _ in walk(dump.root, setup.options.limits, path):
        pass  # a hostile structure fails here, as one clear error, before anything is built
    judged = _judged(dump, payloads, setup.options.limits)
    if not payloads:
        raise NothingToReplay(path, judged)
    capture = dump.capture
    as_recorded = setup.options.sender_as_recorded and _received_dirty_at_pop(capture)
    if as_recorded:
        # rank 0 popped what the last stage sent unchecked: send it that way again.
        setup = cast(
            "Setup", _OtherOptions(setup, dataclasses.replace(setup.options, sender=Sender.LEGACY))
        )
    # torch is imported here, once a dump has something to rebuild (the reader needs none).
    import_torch()
    from ppaux.replay.materialize import Materializer

    with Materializer(dump, setup.device, setup.options.limits) as build:
        real = [
            (
                payload,
                build.value(payload.mapping, payload.locator),
                build.value(output.mapping, output.locator) if output is not None else None,
            )
            for payload, output in _units(path, capture, payloads)
        ]
    results, findings = _replay_all(path, real, setup, judged)
    first = next((r for r in results if r.error is not None), None)
    dump_result = DumpResult(
        path=path,
        outcome=worst(r.outcome for r in results),
        error=first.error if first else None,
        error_type=first.error_type if first else None,
        stage=first.stage if first else None,
        payloads=tuple(results),
    )
    if capture is not None:
        dump_result, more = _against_capture(path, capture, dump_result, real, setup, as_recorded)
        findings += more
    limits = setup.options.limits
    findings = FindingsBudget(limits).cap(findings)
    once = OnceText()
    findings = [once.finding(f) for f in findings]
    cut: DumpResult = once.value(dump_result)
    return cut, findings


def _judged(dump: Dump, payloads: list[Any], limits: Limits) -> list[Finding]:
    """The findings inspect gives the file whatever the replay gives: a global outside torch's
    allowlist is PP201 (a hostile file is never clean), a file without a tensor dict is PP114,
    not an input that could not be used; a file not as torch.save writes it is PP118."""
    from ppaux.dump import check_dump

    return [
        f
        for f in check_dump(dump, [], limits, default_reader=False)
        if f.code.startswith("PP2") or f.code == "PP118" or (f.code == "PP114" and not payloads)
    ]


def _units(path: str, capture: object, payloads: list[Any]) -> list[tuple[Any, Any]]:
    """What is replayed: each tensor dict alone, or a capture's dict with its output."""
    if capture is None:
        return [(payload, None) for payload in payloads]
    tensors = next((p for p in payloads if p.role == "capture"), None)
    output = next((p for p in payloads if p.role == "output"), None)
    if tensors is None:
        raise DumpError(path, "capture without a tensor dict to replay")
    return [(tensors, output)]


def _replay_all(
    path: str, real: list[tuple[Any, Any, Any]], setup: Setup, judged: list[Finding]
) -> tuple[list[PayloadResult], list[Finding]]:
    """Each rebuilt tensor dict replayed, with its findings after ``judged``.

    A thousand payloads may each format the same 16 KiB key or message anew: equal long strings
    are held once, and past max_findings_per_code findings of a code are counted, not kept (one
    finding per code words the count, as the cut did when they were kept)."""
    results: list[PayloadResult] = []
    findings: list[Finding] = list(judged)
    shared = _Shared()
    budget = FindingsBudget(setup.options.limits)
    for item in judged:
        budget.spend(item.code)
    for payload, mapping, output in real:
        result = shared.result(
            replay_payload(payload.locator, payload.role, mapping, output, setup)
        )
        results.append(result)
        for item in payload_findings(path, result, setup.options):
            if budget.take(item.code):
                findings.append(shared.finding(item))
    findings += budget.counted(path)
    return results, findings


def _against_capture(
    path: str,
    capture: dict[str, Any],
    dump_result: DumpResult,
    real: list[tuple[Any, Any, Any]],
    setup: Setup,
    as_recorded: bool,
) -> tuple[DumpResult, list[Finding]]:
    """The replay of a capture held against what the capture recorded: whether it reproduced
    the recorded error, and the findings that follow."""
    meta = capture["meta"]
    recorded = Recorded(
        *(
            meta.get(name)
            if isinstance(meta.get(name), (str, type(None)))
            else repr(meta.get(name))
            for name in ("function", "exception_type", "exception_message")
        )
    )
    dump_result = dataclasses.replace(
        dump_result,
        recorded=recorded,
        reproduced=(
            recorded.exception_type == dump_result.error_type
            and recorded.exception_message == dump_result.error
        ),
        sender=setup.options.sender.value if as_recorded else None,
    )
    if not dump_result.reproduced:
        return dump_result, [not_reproduced(path, recorded, dump_result, setup.options)]
    if as_recorded:
        return dump_result, validating_sender_findings(path, real, setup)
    return dump_result, []


class _OtherOptions:
    """``setup`` with other options (a setup may be prepared lazily: it is not copied)."""

    def __init__(self, setup: Setup, options: ReplayOptions) -> None:
        self.options = options
        self._setup = setup

    def __getattr__(self, name: str) -> Any:
        return getattr(self._setup, name)


def _received_dirty_at_pop(capture: dict[Any, Any] | None) -> bool:
    """Whether ``capture`` records rank 0's pop raising (not a rewrite, not a checkpoint)."""
    if capture is None or not isinstance(capture.get("meta"), dict):
        return False
    meta = capture["meta"]
    return (
        meta.get("function") == "pop_auxiliary_output_from_pp_tensors"
        and meta.get("exception_type") is not None
        and meta.get("rewritten_by") is None
    )


def validating_sender_findings(
    path: str, real: list[tuple[Any, Any, Any]], setup: Setup
) -> list[Finding]:
    """PP410 for each replayed dict a validating sender's add would have refused."""
    from ppaux.replay import roundtrip

    add = next(iter(setup.impls.values())).add_auxiliary_output_to_pp_tensors
    found = []
    for payload, mapping, output in real:
        try:
            roundtrip.sender_dict(mapping, output, validating=True, add=add)
        except roundtrip.SenderRefused as exc:
            found.append(
                finding(
                    "PP410",
                    path,
                    f"{payload.locator}: replayed as rank 0 received it, from a sender that "
                    "does not validate; a validating sender would have refused it at add "
                    f"({exc.error_type}: {exc.message}): the last stage did not run the "
                    "release's sender; compare the stages with 'ppaux check-skew'",
                )
            )
    return found


#: Values :meth:`OnceText.value` hands back as they are.
_PLAIN = frozenset({int, float, bool})


class OnceText:
    """Gives each long string of one file's replay report whole the first time it appears and
    cut every later time: a 16 KiB key quoted by a thousand payloads' results must not make a
    report of gigabytes. The replay and its comparisons ran on the whole strings."""

    #: Strings up to this length are always given whole.
    SHORT = 200

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def text(self, text: str) -> str:
        """``text`` whole the first time, cut (saying so) every later time."""
        if len(text) <= self.SHORT:
            return text
        if text not in self.seen:
            self.seen.add(text)
            return text
        return f"{text[: self.SHORT]}... ({len(text)} characters, given whole above)"

    def value(self, value: object) -> Any:
        """``value`` (results, plain dicts, lists and scalars) with its repeated long strings
        cut, field by field in the order the report prints them."""
        if value is None or value.__class__ in _PLAIN:
            return value  # most fields: nothing to cut, and no dataclass to look into
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self.value(v) for v in value)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            changes = {
                f.name: self.value(getattr(value, f.name)) for f in dataclasses.fields(value)
            }
            return dataclasses.replace(value, **changes)
        return value

    def finding(self, item: Finding) -> Finding:
        """``item`` with its message, key and sglang error cut the same way."""
        return dataclasses.replace(
            item,
            message=self.text(item.message),
            key=self.text(item.key) if item.key is not None else None,
            sglang_error=self.text(item.sglang_error) if item.sglang_error is not None else None,
        )


class _Shared(OnceText):
    """Equal long strings of one file's replay held as one object (the values unchanged): the
    error, culprit and keys of each run, and findings. Only the fields that quote a key or a
    message are looked at, so a payload of a hundred thousand entries costs one pass over its
    key lists, not a copy of its results."""

    def __init__(self) -> None:
        super().__init__()
        self.held: dict[str, str] = {}

    def text(self, text: str) -> str:
        """The string equal to ``text`` held first (``text`` itself the first time)."""
        if len(text) <= self.SHORT:
            return text
        return self.held.setdefault(text, text)

    def _maybe(self, text: str | None) -> str | None:
        return None if text is None else self.text(text)

    def _entries(self, entries: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        if entries is None:
            return None
        short = self.SHORT
        return [
            e
            if not isinstance(e.get("key"), str) or len(e["key"]) <= short
            else {**e, "key": self.text(e["key"])}
            for e in entries
        ]

    def result(self, result: PayloadResult) -> PayloadResult:
        """``result`` with the long strings of its runs held once."""
        runs = {
            name: dataclasses.replace(
                run,
                error=self._maybe(run.error),
                culprit=self._maybe(run.culprit),
                sent=self._entries(run.sent),
                received=self._entries(run.received),
                output=self._entries(run.output),
                remaining_keys=(
                    None
                    if run.remaining_keys is None
                    else [self.text(k) if isinstance(k, str) else k for k in run.remaining_keys]
                ),
            )
            for name, run in result.runs.items()
        }
        return dataclasses.replace(result, error=self._maybe(result.error), runs=runs)


def replay_payload(
    locator: str,
    role: str,
    mapping: dict[str, Any],
    output: dict[str, Any] | None,
    setup: Setup,
) -> PayloadResult:
    """Replay one tensor dict with every implementation of the setup and compare them."""
    runs = {
        name: run_impl(mapping, output, module, name, setup) for name, module in setup.impls.items()
    }
    primary = next(iter(runs.values()))
    found = divergences(runs["reference"], runs["sglang"]) if len(runs) == 2 else []
    outcome = "diverged" if found or primary.mismatches else primary.outcome
    return PayloadResult(
        locator=locator,
        role=role,
        outcome=outcome,
        stage=primary.stage,
        error_type=primary.error_type,
        error=primary.error,
        runs=runs,
        divergences=found,
    )


def run_impl(
    mapping: dict[str, Any],
    output: dict[str, Any] | None,
    module: types.ModuleType,
    name: str,
    setup: Setup,
) -> RunResult:
    """One implementation's replay of one payload: send, wire, pop, add back, compare."""
    from ppaux.replay import roundtrip

    options = setup.options
    add = module.add_auxiliary_output_to_pp_tensors
    try:
        validating = options.sender == Sender.VALIDATING
        sent = roundtrip.sender_dict(mapping, output, validating=validating, add=add)
    except roundtrip.SenderRefused as exc:
        # A validating sender stops the message on the last stage, whatever the transport:
        # rank 0 never receives it, so nothing is popped (--sender legacy replays a sender
        # that does not check, as the captured run's may have been).
        culprit = f"{OUTPUT_PREFIX}{exc.name}" if exc.name is not None else None
        source = (
            output
            if output is not None
            else {k[len(OUTPUT_PREFIX) :]: v for k, v in roundtrip.aux_entries(mapping).items()}
        )
        return RunResult(
            impl=name,
            outcome="error",
            stage="add",
            error_type=exc.error_type,
            error=exc.message,
            culprit=culprit,
            sent=[
                dict(roundtrip.describe(v), key=f"{OUTPUT_PREFIX}{n}") for n, v in source.items()
            ],
        )
    sent_aux = roundtrip.aux_entries(sent)
    described = [dict(roundtrip.describe(v), key=k) for k, v in sent_aux.items()]
    exchange = setup.wire.exchange(sent, name)
    if exchange.failure is not None or exchange.reception is None:
        failure = exchange.failure
        assert failure is not None  # a wire that delivered nothing says why
        return RunResult(
            impl=name,
            outcome="error",
            stage="wire",
            error_type=failure.error_type,
            error=failure.message,
            culprit=failure.key,
            sent=described,
            failure=failure,
        )
    info = exchange.reception
    mismatches: list[dict[str, Any]] = []
    changes: list[dict[str, Any]] = []
    if exchange.readded is not None:
        mismatches, changes = roundtrip.compare(sent_aux, exchange.readded)
    return RunResult(
        impl=name,
        outcome=info.outcome,
        stage=info.stage,
        error_type=info.error_type,
        error=info.error,
        culprit=info.culprit,
        sent=described,
        received=info.received,
        output=info.output,
        remaining_keys=info.remaining_keys,
        stats=exchange.stats,
        mismatches=mismatches,
        changes=changes,
    )


#: The fields on which the two implementations' runs are compared.
COMPARED = (
    "outcome",
    "stage",
    "error_type",
    "error",
    "received",
    "output",
    "remaining_keys",
    "mismatches",
)


def divergences(reference: RunResult, sglang: RunResult) -> list[dict[str, Any]]:
    """Every compared field on which the two implementations' runs disagree."""
    return [
        {"field": name, "reference": getattr(reference, name), "sglang": getattr(sglang, name)}
        for name in COMPARED
        if getattr(reference, name) != getattr(sglang, name)
    ]
