"""``replay``: run the PP auxiliary transport on recorded payloads and report what happens.

For each tensor dict in each dump (or the dict and output of a ppaux capture):

1. the dict is read with the safe reader and its tensors are rebuilt with torch on the chosen
   device (:mod:`ppaux.replay.materialize`); values the reader left as placeholders stay
   non-tensors;
2. the last stage's send is emulated (:func:`ppaux.replay.roundtrip.sender_dict`): a validating
sender
   runs ``add`` on the auxiliary values and may refuse them; a legacy sender writes them as
   they are;
3. the dict crosses the wire: not at all (``none``), through the in-process emulation of
   sglang's ``send_tensor_dict``/``recv_tensor_dict`` (``wire``, :mod:`ppaux.replay.wire`), or
   through
   a real two-process torch.distributed group (``torch-distributed``,
   :mod:`ppaux.replay.distributed`);
4. rank 0 pops with a reference observer, then the popped output is added into a fresh dict and
   compared bit for bit with what was sent (:mod:`ppaux.replay.roundtrip`).

Steps 2 - 4 run with ppaux's reference transport, sglang's own module, or both (every
disagreement is reported). The result is a :class:`~ppaux.report.document.Report`: one result per
dump
(``outcome`` 'ok', 'error' or 'diverged', ``error`` the verbatim message or None), findings
PP401 - PP409, a summary table and per-payload tables.

This module does not import torch at import time; :func:`replay_paths` does.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ppaux.errors import DumpError, PpauxError
from ppaux.limits import Limits
from ppaux.report import Finding, InputProblem, Report, Table, cap_per_code, finding
from ppaux.sglang import OUTPUT_PREFIX

__all__ = [
    "Impl",
    "ReplayConfigError",
    "ReplayOptions",
    "Sender",
    "Transport",
    "replay_paths",
]

#: Beyond this many dumps the human view keeps only the summary table.
DETAIL_TABLES_UP_TO = 20


class Sender(str, enum.Enum):
    """How the last stage puts the auxiliary output into the dict it sends."""

    VALIDATING = "validating"
    LEGACY = "legacy"


class Transport(str, enum.Enum):
    """How the dict travels from the last stage to rank 0."""

    NONE = "none"
    WIRE = "wire"
    TORCH_DISTRIBUTED = "torch-distributed"
    SGLANG = "sglang"


class Impl(str, enum.Enum):
    """Whose ``add``/``pop`` run: ppaux's reference transport, sglang's own module, or both."""

    REFERENCE = "reference"
    SGLANG = "sglang"
    BOTH = "both"


class ReplayConfigError(PpauxError, ValueError):
    """A replay setting that cannot be used here: ``option`` names the setting, ``value`` what
    was given, ``reason`` why; ``str()`` is '<value>: <reason>'."""

    def __init__(self, option: str, value: str, reason: str) -> None:
        super().__init__(f"{value}: {reason}")
        self.option = option
        self.value = value
        self.reason = reason


@dataclass(frozen=True)
class ReplayOptions:
    """Settings of one replay run (the CLI's flags)."""

    device: str = "cpu"
    sender: Sender = Sender.VALIDATING
    transport: Transport = Transport.NONE
    impl: Impl = Impl.REFERENCE
    #: Where sglang's transport is read from (a directory or a wheel); None: the installed one.
    #: With the ``sglang`` transport, a directory put first on the import path.
    sglang_path: str | None = None
    #: Size of the emulated attention-TP all-gather group on the wire (1: none).
    all_gather: int = 1
    #: Seconds the torch-distributed transport waits for its peer.
    timeout_s: float = 60.0
    limits: Limits = field(default_factory=Limits)


@dataclass
class _Setup:
    """What a run resolved once: the device, the implementations, the distributed wire."""

    options: ReplayOptions
    device: Any
    impls: dict[str, Any]
    impl_info: dict[str, dict[str, Any]]
    wire: Any = None


def _setup(options: ReplayOptions) -> _Setup:
    from ppaux.replay import transport
    from ppaux.replay.materialize import DeviceError, resolve_device

    if options.all_gather < 1:
        raise ReplayConfigError("all-gather", str(options.all_gather), "must be 1 or more")
    if (
        options.sglang_path is not None
        and options.impl is Impl.REFERENCE
        and options.transport is not Transport.SGLANG
    ):
        raise ReplayConfigError(
            "sglang-path",
            options.sglang_path,
            "only used with --impl sglang, --impl both or --transport sglang",
        )
    try:
        device = resolve_device(options.device)
    except DeviceError as exc:
        raise ReplayConfigError("device", exc.value, exc.reason) from None
    impls: dict[str, Any] = {}
    info: dict[str, dict[str, Any]] = {}
    if options.impl in (Impl.REFERENCE, Impl.BOTH):
        impls["reference"] = transport
        info["reference"] = {
            "origin": "ppaux.transport",
            "version": None,
            "sha256": None,
            "stock_releases": [],
        }
    if options.impl in (Impl.SGLANG, Impl.BOTH):
        from ppaux.sglang import SglangNotFound, load_transport_module

        try:
            module = load_transport_module(options.sglang_path)
        except SglangNotFound as exc:
            if options.sglang_path is not None:
                raise ReplayConfigError("sglang-path", options.sglang_path, exc.reason) from None
            raise ReplayConfigError(
                "impl",
                options.impl.value,
                f"sglang is {exc.reason}; give --sglang-path with an unpacked tree or a wheel",
            ) from None
        source = module.__ppaux_source__
        impls["sglang"] = module
        info["sglang"] = {
            "origin": source.origin,
            "version": source.version,
            "sha256": source.sha256,
            "stock_releases": list(source.stock_releases),
        }
    from ppaux.replay.distributed import WireSetupError
    from ppaux.replay.protocol import open_wire

    try:
        wire = open_wire(
            options.transport,
            device=device,
            all_gather=options.all_gather,
            timeout_s=options.timeout_s,
            sglang_path=options.sglang_path,
            implementations=impls,
        )
    except WireSetupError as exc:
        raise ReplayConfigError("transport", options.transport.value, str(exc)) from None
    return _Setup(options, device, impls, info, wire)


def _runtime_info(setup: _Setup) -> dict[str, Any] | None:
    """For the ``sglang`` transport: which sglang ran, from which file, what was emulated."""
    if setup.options.transport is not Transport.SGLANG:
        return None
    import sys

    package = sys.modules.get("sglang")
    return {
        "version": getattr(package, "__version__", None),
        "file": setup.wire.sglang_file,
        "all_gather_emulated": setup.options.all_gather > 1,
    }


def replay_paths(
    paths: Iterable[str],
    options: ReplayOptions = ReplayOptions(),
    *,
    progress: Callable[[int, int], None] | None = None,
) -> Report:
    """Replay every dump under ``paths`` (files and directories); one result per dump.

    Raises :class:`ReplayConfigError` for settings that cannot work here (CUDA asked for and
    absent, sglang not found, ...) before any dump is read. Unreadable dumps become problems;
    the others still run. ``progress(done, total)`` is called after each dump. Raises
    :class:`~ppaux.errors.TorchMissingError` where torch is not installed.
    """
    from ppaux.dump import collect_dumps
    from ppaux.torch_probe import require_torch

    require_torch("replay")

    files, problems = collect_dumps(paths, options.limits)
    setup = _setup(options)
    report = Report(command="replay", problems=list(problems))
    results: list[dict[str, Any]] = []
    try:
        for index, path in enumerate(files, 1):
            try:
                result, findings = _replay_file(path, setup)
            except DumpError as exc:
                report.problems.append(InputProblem(exc.path, exc.reason))
            else:
                results.append(result)
                report.findings += findings
            if progress is not None:
                progress(index, len(files))
    finally:
        if setup.wire is not None:
            setup.wire.close()
    report.data["replay"] = {
        "device": str(setup.device),
        "sender": options.sender.value,
        "transport": options.transport.value,
        "impl": options.impl.value,
        "all_gather": options.all_gather,
        "implementations": setup.impl_info,
        "sglang_runtime": _runtime_info(setup),
    }
    report.data["results"] = results
    report.tables.append(_summary_table(results, options, str(setup.device)))
    if len(results) <= DETAIL_TABLES_UP_TO:
        for result in results:
            report.tables += _detail_tables(result)
    return report


# ----------------------------------------------------------------------------------------------
# One dump


def _replay_file(path: str, setup: _Setup) -> tuple[dict[str, Any], list[Finding]]:
    from ppaux.dump import find_payloads, read_dump, walk
    from ppaux.replay.materialize import Materializer

    dump = read_dump(path, setup.options.limits)
    for _ in walk(dump.root, setup.options.limits, path):
        pass  # a hostile structure fails here, as one clear error, before anything is built
    payloads = find_payloads(dump, setup.options.limits)
    if not payloads:
        raise DumpError(path, "no tensor dict to replay")
    capture = dump.capture
    units: list[tuple[Any, Any]] = []
    if capture is not None:
        tensors = next((p for p in payloads if p.role == "capture"), None)
        output = next((p for p in payloads if p.role == "output"), None)
        if tensors is None:
            raise DumpError(path, "capture without a tensor dict to replay")
        units.append((tensors, output))
    else:
        units = [(payload, None) for payload in payloads]
    with Materializer(dump, setup.device, setup.options.limits) as build:
        real = [
            (
                payload,
                build.value(payload.mapping, payload.locator),
                build.value(output.mapping, output.locator) if output is not None else None,
            )
            for payload, output in units
        ]
    results = []
    findings: list[Finding] = []
    for payload, mapping, output in real:
        result = _replay_payload(path, payload.locator, payload.role, mapping, output, setup)
        results.append(result)
        findings += _payload_findings(path, result, setup)
    outcome = _worst(r["outcome"] for r in results)
    first = next((r for r in results if r["error"] is not None), None)
    dump_result: dict[str, Any] = {
        "path": path,
        "outcome": outcome,
        "error": first["error"] if first else None,
        "error_type": first["error_type"] if first else None,
        "stage": first["stage"] if first else None,
        "payloads": results,
        "recorded": None,
        "reproduced": None,
    }
    if capture is not None:
        meta = capture["meta"]
        recorded = {
            name: meta.get(name)
            if isinstance(meta.get(name), (str, type(None)))
            else repr(meta.get(name))
            for name in ("function", "exception_type", "exception_message")
        }
        dump_result["recorded"] = recorded
        dump_result["reproduced"] = (
            recorded["exception_type"] == dump_result["error_type"]
            and recorded["exception_message"] == dump_result["error"]
        )
        if not dump_result["reproduced"]:
            findings.append(_not_reproduced(path, recorded, dump_result, setup.options))
    limits = setup.options.limits
    findings = cap_per_code(findings, limits.max_findings_per_code, "max_findings_per_code")
    once = _OnceText()
    findings = [once.finding(f) for f in findings]
    return once.value(dump_result), findings


class _OnceText:
    """Gives each long string of one file's replay report whole the first time it appears and
    cut every later time: a 16 KiB key quoted by a thousand payloads' results must not make a
    report of gigabytes. The replay and its comparisons ran on the whole strings."""

    #: Strings up to this length are always given whole.
    SHORT = 200

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def text(self, text: str) -> str:
        if len(text) <= self.SHORT:
            return text
        if text not in self.seen:
            self.seen.add(text)
            return text
        return f"{text[: self.SHORT]}... ({len(text)} characters, given whole above)"

    def value(self, value: Any) -> Any:
        """``value`` (plain dicts, lists and scalars) with its repeated long strings cut."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self.value(v) for v in value)
        return value

    def finding(self, item: Finding) -> Finding:
        return dataclasses.replace(
            item,
            message=self.text(item.message),
            key=self.text(item.key) if item.key is not None else None,
            sglang_error=self.text(item.sglang_error) if item.sglang_error is not None else None,
        )


def _worst(outcomes: Iterable[str]) -> str:
    rank = {"ok": 0, "error": 1, "diverged": 2}
    return max(outcomes, key=rank.__getitem__, default="ok")


def _replay_payload(
    path: str,
    locator: str,
    role: str,
    mapping: dict[str, Any],
    output: dict[str, Any] | None,
    setup: _Setup,
) -> dict[str, Any]:
    runs = {
        name: _run(mapping, output, module, name, setup) for name, module in setup.impls.items()
    }
    names = list(runs)
    primary = runs[names[0]]
    divergences = _divergences(runs["reference"], runs["sglang"]) if len(runs) == 2 else []
    mismatched = bool(primary["mismatches"])
    outcome = "diverged" if divergences or mismatched else primary["outcome"]
    return {
        "locator": locator,
        "role": role,
        "outcome": outcome,
        "stage": primary["stage"],
        "error_type": primary["error_type"],
        "error": primary["error"],
        "runs": runs,
        "divergences": divergences,
    }


def _run(
    mapping: dict[str, Any], output: dict[str, Any] | None, module: Any, name: str, setup: _Setup
) -> dict[str, Any]:
    """One implementation's replay of one payload: send, wire, pop, add back, compare."""
    from ppaux.replay import roundtrip

    options = setup.options
    add = module.add_auxiliary_output_to_pp_tensors
    run: dict[str, Any] = {
        "impl": name,
        "outcome": "ok",
        "stage": None,
        "error_type": None,
        "error": None,
        "culprit": None,
        "sent": None,
        "received": None,
        "output": None,
        "remaining_keys": None,
        "wire": None,
        "mismatches": [],
        "changes": [],
    }
    run["sender_refused"] = None
    try:
        validating = options.sender is Sender.VALIDATING
        sent = roundtrip.sender_dict(mapping, output, validating=validating, add=add)
    except roundtrip.SenderRefused as exc:
        culprit = f"{OUTPUT_PREFIX}{exc.name}" if exc.name is not None else None
        if options.transport is Transport.NONE and output is None:
            # No wire: pop runs on the dict as recorded, as rank 0 received it; what a stock
            # sender would have refused is reported beside that outcome, not instead of it.
            run["sender_refused"] = {
                "error_type": exc.error_type,
                "error": exc.message,
                "culprit": culprit,
            }
            sent = roundtrip.sender_dict(mapping, output, validating=False, add=add)
        else:
            run.update(
                outcome="error",
                stage="add",
                error_type=exc.error_type,
                error=exc.message,
                culprit=culprit,
            )
            source = (
                output
                if output is not None
                else {k[len(OUTPUT_PREFIX) :]: v for k, v in roundtrip.aux_entries(mapping).items()}
            )
            run["sent"] = [
                dict(roundtrip.describe(v), key=f"{OUTPUT_PREFIX}{n}") for n, v in source.items()
            ]
            return run
    sent_aux = roundtrip.aux_entries(sent)
    run["sent"] = [dict(roundtrip.describe(v), key=k) for k, v in sent_aux.items()]
    exchange = setup.wire.exchange(sent, name)
    failure = exchange.failure
    if failure is not None or exchange.reception is None:
        assert failure is not None
        run.update(
            outcome="error",
            stage="wire",
            error_type=failure.error_type,
            error=failure.message,
            culprit=failure.key,
        )
        run["wire"] = {"side": failure.side, "metadata_sent": failure.metadata_sent}
        return run
    if exchange.stats is not None:
        run["wire"] = exchange.stats.to_json()
    info = exchange.reception
    readded = exchange.readded
    run.update(
        outcome=info.outcome,
        stage=info.stage,
        error_type=info.error_type,
        error=info.error,
        culprit=info.culprit,
        received=info.received,
        output=info.output,
        remaining_keys=info.remaining_keys,
    )
    if readded is not None:
        run["mismatches"], run["changes"] = roundtrip.compare(sent_aux, readded)
    return run


_COMPARED = (
    "outcome",
    "stage",
    "error_type",
    "error",
    "received",
    "output",
    "remaining_keys",
    "mismatches",
)


def _divergences(reference: dict[str, Any], sglang: dict[str, Any]) -> list[dict[str, Any]]:
    """Every field on which the two implementations' runs disagree."""
    return [
        {"field": name, "reference": reference[name], "sglang": sglang[name]}
        for name in _COMPARED
        if reference[name] != sglang[name]
    ]


# ----------------------------------------------------------------------------------------------
# Findings


def _where(locator: str, key: Any) -> str | None:
    if key is None:
        return None
    return f"{locator}[{key!r}]" if locator else str(key)


def _payload_findings(path: str, result: dict[str, Any], setup: _Setup) -> list[Finding]:
    found: list[Finding] = []
    runs = result["runs"]
    primary = next(iter(runs.values()))
    locator = result["locator"]
    where = _where(locator, primary["culprit"])
    stage, error = primary["stage"], f"{primary['error_type']}: {primary['error']}"
    transport = _WIRE_PHRASE[setup.options.transport]
    refused = primary.get("sender_refused")
    if refused is not None:
        found.append(
            finding(
                "PP402",
                path,
                f"a validating sender would refuse this auxiliary output: add raises "
                f"{refused['error_type']}: {refused['error']}; rank 0 gets this dict only from a "
                "sender that does not check",
                _where(locator, refused["culprit"]),
                sglang_error=refused["error"],
            )
        )
    if stage == "add":
        found.append(
            finding(
                "PP402",
                path,
                f"a validating sender refuses this auxiliary output: add raises "
                f"{error}; rank 0 never receives it (--sender legacy replays a sender that does "
                "not "
                "check)",
                where,
                sglang_error=primary["error"],
            )
        )
    elif stage == "wire":
        side = (primary["wire"] or {}).get("side", "sender")
        after = (
            " after the metadata was sent, so the receiver waits for data that never comes"
            if (primary["wire"] or {}).get("metadata_sent") and side == "sender"
            else ""
        )
        found.append(
            finding("PP403", path, f"the {transport} fails on the {side}{after}: {error}", where)
        )
    elif stage == "pop":
        found.append(
            finding(
                "PP401", path, f"pop on rank 0 raises {error}", where, sglang_error=primary["error"]
            )
        )
    elif stage == "readd":
        found.append(
            finding(
                "PP404",
                path,
                f"the popped output cannot be added back: add raises {error}",
                where,
                sglang_error=primary["error"],
            )
        )
    elif primary["output"] is None:
        found.append(
            finding(
                "PP409",
                path,
                "pop finds no auxiliary entries: rank 0 gets no auxiliary output from this dict",
            )
        )
    for item in primary["mismatches"]:
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
    for item in primary["changes"]:
        found.append(
            finding(
                "PP407",
                path,
                f"{item['key']}: {item['detail']} (sent {item['sent']}, received "
                f"{item['received']})",
                _where(locator, item["key"]),
            )
        )
    for item in result["divergences"]:
        found.append(
            finding(
                "PP406",
                path,
                f"reference and sglang disagree on {item['field']}: reference "
                f"{_short(item['reference'])}, sglang {_short(item['sglang'])}",
                _where(locator, primary["culprit"]),
            )
        )
    return found


_WIRE_PHRASE = {
    Transport.NONE: "dict as sent (no wire)",
    Transport.WIRE: "emulated wire",
    Transport.TORCH_DISTRIBUTED: "torch.distributed wire",
    Transport.SGLANG: "sglang's own wire",
}


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 160 else text[:157] + "..."


def _not_reproduced(
    path: str, recorded: dict[str, Any], result: dict[str, Any], options: ReplayOptions
) -> Finding:
    was = (
        f"{recorded['exception_type']}: {recorded['exception_message']}"
        if recorded["exception_type"]
        else "no error"
    )
    now = (
        f"{result['error_type']}: {result['error']} at {result['stage']}"
        if result["error"] is not None
        else "no error"
    )
    hint = ""
    if result["stage"] == "add" and recorded["function"] == "pop_auxiliary_output_from_pp_tensors":
        hint = (
            "; the recorded error happened on rank 0, so the sender did not validate: replay "
            "with --sender legacy"
        )
    return finding(
        "PP408",
        path,
        f"the capture recorded {was} in {recorded['function']}; this "
        f"replay (sender {options.sender.value}, transport {options.transport.value}) "
        f"ends with {now}{hint}",
        None,
    )


# ----------------------------------------------------------------------------------------------
# Tables


def _summary_table(results: list[dict[str, Any]], options: ReplayOptions, device: str) -> Table:
    rows: list[tuple[str, ...]] = []
    marked: set[tuple[int, int]] = set()
    for result in results:
        for payload in result["payloads"]:
            run = next(iter(payload["runs"].values()))
            name = result["path"] + (payload["locator"] or "")
            if payload["outcome"] != "ok":
                marked.add((len(rows), 1))
            if payload["error"] is not None:
                what = f"{payload['error_type']}: {payload['error']}"
            elif payload["outcome"] == "diverged":
                what = _diverged_phrase(payload)
            elif run["output"] is None:
                what = "no auxiliary output"
            else:
                what = (
                    "output "
                    + ", ".join(f"{o['name'] or repr(o['name'])}" for o in run["output"])
                    + ", bit-identical"
                )
            row: tuple[str, ...] = (name, payload["outcome"], payload["stage"] or "-", what)
            if options.transport is not Transport.NONE:
                rate = (run["wire"] or {}).get("throughput_mib_s")
                row += (f"{rate:g} MiB/s" if rate else "-",)
            rows.append(row)
    title = (
        f"replay: {len(results)} dump(s) on {device}, sender {options.sender.value}, "
        f"transport {options.transport.value}, impl {options.impl.value}"
    )
    columns: tuple[str, ...] = ("dump", "outcome", "stage", "error / output")
    if options.transport is not Transport.NONE:
        columns += ("wire",)
    return Table(title, columns, tuple(rows), frozenset(marked))


def _diverged_phrase(payload: dict[str, Any]) -> str:
    if payload["divergences"]:
        fields = ", ".join(d["field"] for d in payload["divergences"])
        return f"implementations disagree on {fields}"
    run = next(iter(payload["runs"].values()))
    keys = ", ".join(
        f"{m['key'].removeprefix(OUTPUT_PREFIX)} ({m['what']})" for m in run["mismatches"]
    )
    return f"round trip differs: {keys}"


def _detail_tables(result: dict[str, Any]) -> list[Table]:
    from ppaux.replay.roundtrip import summary

    tables = []
    for payload in result["payloads"]:
        run = next(iter(payload["runs"].values()))
        received = {entry["key"]: entry for entry in run["received"] or ()}
        trouble = {m["key"]: m for m in run["mismatches"]}
        changed: dict[str, list[str]] = {}
        for change in run["changes"]:
            changed.setdefault(change["key"], []).append(change["what"])
        rows: list[tuple[str, ...]] = []
        marked: set[tuple[int, int]] = set()
        for entry in run["sent"] or ():
            key = entry["key"]
            name = key[len(OUTPUT_PREFIX) :]
            got = received.get(key)
            if key in trouble:
                verdict = f"differs: {trouble[key]['detail']}"
                marked.add((len(rows), 3))
            elif run["mismatches"] or run["output"] is None or payload["outcome"] == "error":
                verdict = "-"
            else:
                verdict = "bit-identical"
                if key in changed:
                    verdict += f" ({', '.join(changed[key])} changed)"
            if run["culprit"] == key:
                marked.add((len(rows), 0))
            rows.append(
                (
                    repr(name) if name == "" else name,
                    summary(entry),
                    summary(got) if got is not None else "-",
                    verdict,
                )
            )
        state = payload["outcome"]
        if payload["error"] is not None:
            state += f" at {payload['stage']}: {payload['error_type']}: {payload['error']}"
        title = f"{result['path']}{payload['locator'] or ''} ({run['impl']}): {state}"
        tables.append(
            Table(
                title,
                ("aux name", "sent", "received", "round trip"),
                tuple(rows),
                frozenset(marked),
            )
        )
    return tables
