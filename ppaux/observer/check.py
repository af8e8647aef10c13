"""``check-observer``: drive a sampling observer, send each output down both paths, compare.

:func:`check_observer` loads the target (its code runs), drives it for ``steps`` forwards at
each batch size, and for every output runs the single-stage path and the PP path
(:mod:`ppaux.observer.paths`) through the chosen wire and implementation. It reports, as
findings PP701 - PP714: every error sglang raises (verbatim, with the side and the entry at
fault), every error the target's own methods raise, every difference between the two paths
(the rebuilt output's fields and tensors, what ``consume`` recorded on the requests), and
outputs whose memory a later step overwrites. Imports torch when called.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ppaux.errors import PpauxError, SettingError, setting
from ppaux.observer.compare import Difference, differences, leaves, snapshot
from ppaux.observer.drive import HookFailure, Step, drive_step
from ppaux.observer.paths import Fault, Machinery, hook_fault, pp_path, single_stage_path
from ppaux.observer.standins import (
    CommittedTokens,
    StandInBatch,
    StandInRequest,
    StandInSamplingInfo,
    build_commits,
    copy_tensor,
    sampling_info_fields,
)
from ppaux.observer.target import LoadedObserver, TargetError, load_observer, observer_from
from ppaux.replay import timeout_fault
from ppaux.report import Finding, Report, Table, finding
from ppaux.sglang import ADD_BAD_NAME

__all__ = [
    "MAX_BATCH_SIZE",
    "MAX_LOGITS",
    "MAX_STEPS",
    "MAX_VOCAB_SIZE",
    "ObserverConfigError",
    "ObserverOptions",
    "check_loaded",
    "check_observer",
    "observer_report",
]

TRANSPORTS = ("none", "wire", "torch-distributed", "sglang")
IMPLS = ("reference", "sglang")
SENDERS = ("validating", "legacy")

#: sglang's messages, by the rule that reports each (the side is the function that raises it).
_SGLANG_RULES = {
    "auxiliary output does not support pipeline-parallel transport": "PP701",
    "sampling observer does not support pipeline-parallel transport": "PP702",
    "auxiliary PP output must contain at least one tensor": "PP703",
    "auxiliary PP tensor names must be non-empty strings": "PP704",
    "received a non-tensor auxiliary PP output": "PP706",
    "sampling observer did not reconstruct its PP output": "PP707",
}


#: The largest batch, the most steps and the largest vocabulary a check drives: enough for any
#: real deployment's shapes, small enough that a typing slip cannot ask for gigabytes of logits.
MAX_BATCH_SIZE = 4096
MAX_STEPS = 1000
MAX_VOCAB_SIZE = 1 << 22
#: The most logits elements (batch times vocabulary) of one step: 64 MiB of float32.
MAX_LOGITS = 1 << 24


class ObserverConfigError(SettingError):
    """A setting that cannot be used here: ``option`` (the field of :class:`ObserverOptions`
    that holds it), the ``value`` given and ``reason``."""


@dataclass(frozen=True)
class ObserverOptions:
    """Settings of one check (the CLI's flags)."""

    transport: str = "wire"
    impl: str = "reference"
    sender: str = "validating"
    batch_sizes: tuple[int, ...] = (1, 4)
    steps: int = 3
    vocab_size: int = 32
    device: str = "cpu"
    sglang_path: str | None = None
    timeout_s: float = 60.0


def _value(option: Any) -> str:
    return str(getattr(option, "value", option))


@dataclass
class _Run:
    """What one check resolved and found."""

    target: str
    options: ObserverOptions
    machinery: Machinery
    sampling_info: Callable[[int, int, Any], Any]
    device: Any
    sglang_parts: bool
    findings: list[Finding] = field(default_factory=list)
    rows: list[tuple[str, ...]] = field(default_factory=list)
    marked: set[tuple[int, int]] = field(default_factory=set)
    results: list[dict[str, Any]] = field(default_factory=list)
    seen: set[tuple[str, str]] = field(default_factory=set)
    counts: dict[tuple[str, str], int] = field(default_factory=dict)
    #: The objects whose code a finding points at: 'observer', 'rank0', 'output'.
    subjects: dict[str, Any] = field(default_factory=dict)


def _validate(options: ObserverOptions) -> None:
    for option, value, allowed in (
        ("transport", _value(options.transport), TRANSPORTS),
        ("impl", _value(options.impl), IMPLS),
        ("sender", _value(options.sender), SENDERS),
    ):
        if value not in allowed:
            raise ObserverConfigError(option, value, f"not one of {', '.join(allowed)}")
    if not options.batch_sizes or any(size < 1 for size in options.batch_sizes):
        raise ObserverConfigError(
            "batch_sizes", ",".join(map(str, options.batch_sizes)), "must be 1 or more"
        )
    if any(size > MAX_BATCH_SIZE for size in options.batch_sizes):
        raise ObserverConfigError(
            "batch_sizes",
            ",".join(map(str, options.batch_sizes)),
            f"must be at most {MAX_BATCH_SIZE}",
        )
    if not 1 <= options.steps <= MAX_STEPS:
        raise ObserverConfigError("steps", str(options.steps), f"must be 1 to {MAX_STEPS}")
    if not 2 <= options.vocab_size <= MAX_VOCAB_SIZE:
        raise ObserverConfigError(
            "vocab_size", str(options.vocab_size), f"must be 2 to {MAX_VOCAB_SIZE}"
        )
    if max(options.batch_sizes) * options.vocab_size > MAX_LOGITS:
        raise ObserverConfigError(
            "vocab_size",
            str(options.vocab_size),
            f"with a batch of {max(options.batch_sizes)} makes logits of more than "
            f"{MAX_LOGITS} elements; give a smaller vocabulary or batch",
        )
    fault = timeout_fault(options.timeout_s)
    if fault is not None:
        raise ObserverConfigError("timeout_s", str(options.timeout_s), fault)


@contextlib.contextmanager
def _machinery(
    options: ObserverOptions, given_wire: Any = None
) -> Iterator[tuple[Machinery, Any, Any, bool]]:
    from ppaux.replay import (
        DeviceError,
        WireSetupError,
        load_implementation,
        open_wire,
        resolve_device,
    )

    try:
        device = resolve_device(options.device)
    except DeviceError as exc:
        raise ObserverConfigError("device", exc.value, exc.reason) from None
    impl = _value(options.impl)
    transport = _value(options.transport)
    try:
        module = load_implementation(impl, options.sglang_path if transport != "sglang" else None)
    except PpauxError as exc:
        reason = getattr(exc, "reason", str(exc))
        where = getattr(exc, "where", None)
        if options.sglang_path is not None and where not in (None, "sglang"):
            # The path given is at fault: name it, as replay does.
            raise ObserverConfigError("sglang_path", str(where), reason) from None
        way_out = (
            f"; give {setting('sglang_path')} an unpacked tree or a wheel"
            if options.sglang_path is None
            else ""
        )
        raise ObserverConfigError("impl", impl, f"sglang is {reason}{way_out}") from None
    try:
        wire = given_wire or open_wire(
            transport,
            device=device,
            timeout_s=options.timeout_s,
            sglang_path=options.sglang_path,
            implementations={impl: module},
        )
    except WireSetupError as exc:
        raise ObserverConfigError("transport", transport, str(exc)) from None
    sglang_parts = transport == "sglang"
    starting = _start_receiver(wire) if given_wire is None else None
    try:
        consume: Callable[[Any, Any, list[int]], None]
        if sglang_parts:
            import warnings

            with warnings.catch_warnings():
                # sglang's imports warn about missing GPUs and kernels; they are not findings.
                warnings.simplefilter("ignore")
                from sglang.srt.managers.scheduler_components.batch_result_processor import (
                    SchedulerBatchResultProcessor,
                )

                # The copy the scheduler hands copy_to_host (GenerationBatchResult's): defined in
                # this module in 0.5.19, imported into it from sglang.srt.utils.common in 0.5.23.
                from sglang.srt.managers.utils import _async_d2h as async_d2h
                from sglang.srt.sampling.sampling_batch_info import SamplingBatchInfo

            consume = SchedulerBatchResultProcessor.consume_auxiliary_output
            copier: Callable[[Any], Any] = async_d2h

            def info(batch_size: int, vocab_size: int, where: Any) -> Any:
                return SamplingBatchInfo(**sampling_info_fields(batch_size, vocab_size, where))

        else:

            def consume(batch: Any, host: Any, starts: list[int]) -> None:
                host.consume(batch, build_commits(batch.reqs, starts, CommittedTokens))

            copier = copy_tensor

            def info(batch_size: int, vocab_size: int, where: Any) -> Any:
                return StandInSamplingInfo(**sampling_info_fields(batch_size, vocab_size, where))

    except BaseException:
        # sglang's classes could not be imported: stop the receiver before saying so.
        if starting is not None:
            starting()
        wire.close()
        raise
    if starting is not None:
        failure = starting()
        if failure is not None:
            wire.close()
            raise ObserverConfigError("transport", transport, failure)
    machinery = Machinery(
        add=module.add_auxiliary_output_to_pp_tensors,
        pop=module.pop_auxiliary_output_from_pp_tensors,
        wire=wire,
        validating=_value(options.sender) == "validating",
        copy_tensor=copier,
        consume=consume,
        make_batch=lambda reqs: StandInBatch(reqs, device=str(device)),
    )
    try:
        yield machinery, info, device, sglang_parts
    finally:
        if given_wire is None:
            wire.close()


def _start_receiver(wire: Any) -> Callable[[], str | None] | None:
    """Join a two-process wire's receiver now, in a thread, so that its start-up (torch and,
    for ``sglang``, sglang's runtime, imported in the other process; the ``sglang`` wire starts
    that process as soon as it is opened, before this process imports sglang) overlaps with
    this process's own imports; returns the call that waits for it (the failure's text, or
    None). In-process wires have nothing to start (None)."""
    if getattr(wire, "transport", None) not in ("torch-distributed", "sglang"):
        return None
    import threading

    failed: list[str] = []

    def start() -> None:
        try:
            wire.raw([])  # an empty exchange: the receiver is up and joined once it returns
        except Exception as exc:  # reported when the check waits for it
            lines = str(exc).strip().splitlines()
            failed.append(lines[0] if lines else type(exc).__name__)

    thread = threading.Thread(target=start, name="ppaux-receiver-start", daemon=True)
    thread.start()

    def wait() -> str | None:
        thread.join()
        return failed[0] if failed else None

    return wait


def check_observer(
    target: str,
    options: ObserverOptions = ObserverOptions(),
    *,
    outputs: str | None = None,
    wire: Any = None,
) -> Report:
    """Check the observer named by ``target`` (``module:attr`` or ``file.py:attr``).

    The target's code runs. ``outputs`` (``module:attr``, a zero-argument callable) gives the
    outputs to send instead of driving the observer; ``wire`` is an open wire to share (see
    :func:`check_loaded`). Raises :class:`TargetError` for a target
    that cannot be used and :class:`ObserverConfigError` for a setting that cannot work here;
    everything the target does wrong while it runs is a finding.
    """
    from ppaux.observer.target import load_outputs
    from ppaux.torch_probe import require_torch

    require_torch("check-observer")
    _validate(options)
    loaded = load_observer(target)
    given = load_outputs(outputs) if outputs is not None else None
    return check_loaded(loaded, options, given, wire=wire)


def check_loaded(
    loaded: LoadedObserver,
    options: ObserverOptions,
    outputs: Sequence[Any] | None = None,
    *,
    wire: Any = None,
) -> Report:
    """The check of an observer already loaded (:func:`check_observer` and ``assert_pp_safe``).

    ``wire`` is an open :class:`~ppaux.replay.Wire` of ``options.transport`` to send through
    (left open, so that several checks share one receiving process); None opens one and closes
    it at the end.
    """
    _validate(options)
    if wire is not None and getattr(wire, "transport", None) != _value(options.transport):
        raise ObserverConfigError(
            "transport", _value(options.transport), f"the wire given is {wire.transport!r}"
        )
    with _machinery(options, wire) as (machinery, info, device, sglang_parts):
        run = _Run(loaded.target, options, machinery, info, device, sglang_parts)
        if outputs is not None:
            _check_given(run, loaded, list(outputs))
        else:
            for batch_size in options.batch_sizes:
                _check_batch_size(run, loaded, batch_size)
    return _report(run, loaded, outputs is not None)


def observer_report(
    observer: Any, options: ObserverOptions, outputs: Sequence[Any] | None
) -> Report:
    """The check of an observer object (instance, class or factory) in hand."""
    name = getattr(observer, "__qualname__", None) or type(observer).__qualname__
    return check_loaded(observer_from(observer, name), options, outputs)


# ----------------------------------------------------------------------------------------------
# Driving


def _requests(batch_size: int) -> list[Any]:
    return [StandInRequest(f"req-{i}") for i in range(batch_size)]


def _check_batch_size(run: _Run, loaded: LoadedObserver, batch_size: int) -> None:
    options = run.options
    rank0 = _rank0(run, loaded)
    if rank0 is None:
        return
    single_reqs, pp_reqs = _requests(batch_size), _requests(batch_size)
    run.subjects.update(observer=loaded.observer, rank0=rank0)
    produced: list[tuple[Step, dict[str, Any]]] = []
    for index in range(options.steps):
        try:
            step = _drive(run, loaded.observer, batch_size, index)
        except HookFailure as failure:
            _hook_finding(run, failure, batch_size, index, "the last stage (or the single GPU)")
            _row(run, batch_size, index, "-", f"{failure.method} raised {failure.text}", "error")
            # The step's entry in the JSON report: no output, and where driving it stopped.
            result = _result(batch_size, index, [])
            result["driving"] = hook_fault(failure, "last stage").to_json()
            run.results.append(result)
            return
        if step.output is None:
            why = "is_active returned False" if not step.active else "before_grammar returned None"
            if step.active and not step.state_none:
                why = "after_sample returned None"
            _row(run, batch_size, index, "-", f"no output ({why})", "-")
            continue
        produced.append((step, snapshot(step.output)))
        _both_paths(
            run, step.output, rank0, single_reqs, pp_reqs, step.token_ids, batch_size, index
        )
    _aliasing(run, produced)


def _drive(run: _Run, observer: Any, batch_size: int, index: int) -> Step:
    return drive_step(
        observer,
        batch_size,
        index,
        vocab_size=run.options.vocab_size,
        device=run.device,
        sampling_info=run.sampling_info,
    )


def _rank0(run: _Run, loaded: LoadedObserver) -> Any:
    try:
        return loaded.make_rank0()
    except TargetError as exc:
        run.findings.append(
            finding(
                "PP710",
                run.target,
                f"making rank 0's observer failed: {exc.reason}",
                extra={"method": "__init__", "side": "rank 0"},
            )
        )
        return None


def _check_given(run: _Run, loaded: LoadedObserver, outputs: list[Any]) -> None:
    import torch

    rank0 = _rank0(run, loaded)
    if rank0 is None:
        return
    batch_size = run.options.batch_sizes[0]
    single_reqs, pp_reqs = _requests(batch_size), _requests(batch_size)
    for index, output in enumerate(outputs):
        if output is None:
            _row(run, batch_size, index, "-", "no output (None given)", "-")
            continue
        token_ids = torch.zeros(batch_size, dtype=torch.int64, device=run.device) + index
        _both_paths(run, output, rank0, single_reqs, pp_reqs, token_ids, batch_size, index)


# ----------------------------------------------------------------------------------------------
# The two paths, compared


def _both_paths(
    run: _Run,
    output: Any,
    rank0: Any,
    single_reqs: list[Any],
    pp_reqs: list[Any],
    token_ids: Any,
    batch_size: int,
    index: int,
) -> None:
    m = run.machinery
    run.subjects.update(output=output, rank0=rank0)
    single = single_stage_path(output, single_reqs, token_ids, m)
    pp = pp_path(output, rank0, pp_reqs, token_ids, m)
    names = ", ".join(str(k).removeprefix("__sampling_observer_output__.") for k in (pp.sent or {}))
    result = _result(batch_size, index, names.split(", ") if names else [])
    result["single_stage"] = single.fault.to_json() if single.fault else None
    result["pp"] = pp.fault.to_json() if pp.fault else None
    run.results.append(result)
    if single.fault is not None:
        _fault_finding(run, single.fault, batch_size, index)
    if pp.fault is not None:
        _fault_finding(run, pp.fault, batch_size, index)
        _row(run, batch_size, index, names or "-", _verdict(pp.fault), "error")
        return
    if single.fault is not None:
        _row(run, batch_size, index, "-", f"single stage: {_verdict(single.fault)}", "error")
        return
    found = 0
    rebuilt = differences(leaves(output), leaves(pp.output))
    kinds = (type(output).__qualname__, type(pp.output).__qualname__)
    if kinds[0] != kinds[1]:  # by name: a file loaded twice gives two classes of one name
        rebuilt.insert(0, Difference("", "type", *kinds))
    for item in rebuilt:
        found += 1
        result["differences"].append(_diff_json("output", item))
        _difference_finding(run, "PP711", "the output rank 0 rebuilt", item, batch_size, index)
    for number, (a, b) in enumerate(zip(single_reqs, pp_reqs, strict=True)):
        for item in differences(leaves(a), leaves(b)):
            found += 1
            result["differences"].append(_diff_json(f"request {number}", item))
            _difference_finding(
                run, "PP712", f"request {number} after consume", item, batch_size, index
            )
    verdict = "same on both paths" if not found else f"{found} difference(s)"
    _row(run, batch_size, index, names or "-", verdict, "ok" if not found else "differs")


def _result(batch_size: int, index: int, sent: list[str]) -> dict[str, Any]:
    """A step's entry in the JSON report: what was ``sent``, where driving the observer
    (``driving``), the single-stage path and the PP path stopped (None: they did not), and the
    differences between the two paths."""
    return {
        "batch_size": batch_size,
        "step": index,
        "sent": sent,
        "driving": None,
        "single_stage": None,
        "pp": None,
        "differences": [],
    }


def _diff_json(where: str, item: Difference) -> dict[str, Any]:
    return {
        "where": where,
        "path": item.path,
        "what": item.what,
        "single_stage": item.left,
        "pp": item.right,
    }


def _verdict(fault: Fault) -> str:
    """A table cell: who raised what ('the last stage's add: <message>')."""
    message = _first_sentence(fault.message)
    if fault.stage == "hook":
        where = {"last stage": "the last stage", "rank 0": "rank 0"}.get(fault.side, fault.side)
        return f"{fault.method} raised {fault.error_type} on {where}: {message}"
    what = message if fault.error_type == "RuntimeError" else f"{fault.error_type}: {message}"
    return f"{_side(fault)}: {what}"


def _side(fault: Fault) -> str:
    if fault.stage == "add":
        return "the last stage's add"
    if fault.stage == "pop":
        return "rank 0's pop"
    if fault.stage == "wire":
        return f"the wire's {fault.side}"
    return fault.side


def _aliasing(run: _Run, produced: list[tuple[Step, dict[str, Any]]]) -> None:
    """Outputs whose memory a later step overwrote: compare each with its snapshot now."""
    if len(produced) < 2:
        return
    for step, then in produced[:-1]:
        now = snapshot(step.output)
        for item in differences(then, now):
            later = produced[-1][0].index
            key = ("PP713", item.path)
            run.counts[key] = run.counts.get(key, 0) + 1
            if key in run.seen:
                continue
            run.seen.add(key)
            run.findings.append(
                finding(
                    "PP713",
                    run.target,
                    f"the output of step {step.index} (batch size {step.batch_size}) changed by "
                    f"step {later}: {item.path or 'the output'} was {item.left}, is now "
                    f"{item.right}; it shares memory that a later step overwrites, so a copy "
                    "made after the next forward reads the next step's values",
                    item.path or None,
                    extra={"batch_size": step.batch_size, "step": step.index},
                )
            )


# ----------------------------------------------------------------------------------------------
# Findings and the table


#: Whose code each finding is about: the subject and its method (None: the class itself).
_MADE_IN = {
    "PP701": ("output", None),
    "PP702": ("rank0", None),
    "PP703": ("output", "to_pp_tensors"),
    "PP704": ("output", "to_pp_tensors"),
    "PP705": ("output", "to_pp_tensors"),
    "PP706": ("output", "to_pp_tensors"),
    "PP707": ("rank0", "from_pp_tensors"),
    "PP709": ("output", "to_pp_tensors"),
    "PP711": ("rank0", "from_pp_tensors"),
    "PP712": ("rank0", "from_pp_tensors"),
    "PP713": ("observer", "after_sample"),
}
_HOOK_SUBJECT = {
    "is_active": "observer",
    "before_grammar": "observer",
    "after_sample": "observer",
    "from_pp_tensors": "rank0",
    "to_pp_tensors": "output",
    "copy_to_host": "output",
}


def _location(run: _Run, subject: str | None, method: str | None) -> dict[str, Any] | None:
    """``{"file", "line", "function"}`` of the code a finding is about, where Python knows it:
    the formats that annotate code (github, sarif, gitlab) point at that line."""
    import inspect
    import os

    obj = run.subjects.get(subject) if subject is not None else None
    if obj is None:
        return None
    klass = obj if inspect.isclass(obj) else type(obj)
    code = inspect.getattr_static(klass, method, None) if method is not None else klass
    code = getattr(code, "__func__", code)
    try:
        file = inspect.getsourcefile(code)
        _, line = inspect.getsourcelines(code)
    except (TypeError, OSError):
        return None
    if file is None:
        return None
    relative = os.path.relpath(file)
    shown = relative if not relative.startswith("..") else file
    name = f"{klass.__qualname__}.{method}" if method is not None else klass.__qualname__
    return {"file": shown, "line": max(line, 1), "function": name}


def _located(run: _Run, item: Finding) -> Finding:
    """``item`` with the ``location`` of the code it is about, where that is known."""
    import dataclasses

    if item.location is not None:
        return item
    subject, method = _MADE_IN.get(item.code, (None, None))
    if item.code == "PP710":
        method = item.extra.get("method")
        subject = _HOOK_SUBJECT.get(method or "")
    elif item.code == "PP708":
        add = item.extra.get("stage") == "add"
        subject, method = ("output", "to_pp_tensors") if add else ("rank0", "from_pp_tensors")
    location = _location(run, subject, method)
    return item if location is None else dataclasses.replace(item, location=location)


def _once(run: _Run, code: str, what: str) -> bool:
    key = (code, what)
    run.counts[key] = run.counts.get(key, 0) + 1
    if key in run.seen:
        return False
    run.seen.add(key)
    return True


def _where(batch_size: int, index: int) -> str:
    return f"batch size {batch_size}, step {index}"


def _hook_finding(run: _Run, failure: HookFailure, batch_size: int, index: int, side: str) -> None:
    if not _once(run, "PP710", failure.method):
        return
    run.findings.append(
        finding(
            "PP710",
            run.target,
            f"{failure.method} raised {_first_sentence(failure.text)} on {side} "
            f"({_where(batch_size, index)})",
            extra={"method": failure.method, "side": side},
        )
    )


def _fault_finding(run: _Run, fault: Fault, batch_size: int, index: int) -> None:
    at = _where(batch_size, index)
    if fault.stage == "hook":
        side = {"last stage": "the last stage", "rank 0": "rank 0"}.get(fault.side, fault.side)
        if _once(run, "PP710", f"{fault.method}/{fault.side}"):
            short = _first_sentence(_line(fault.message))
            run.findings.append(
                finding(
                    "PP710",
                    run.target,
                    f"{fault.method} raised {fault.error_type}: {short} on {side} ({at})",
                    fault.name,
                    extra={"method": fault.method, "side": fault.side},
                )
            )
        return
    entry = ""
    if fault.name is not None and fault.message == ADD_BAD_NAME.template:
        # The name is the bad key's repr: 0 and '' must read as what they are, not as '0'.
        entry = f"; the entry at fault is named {fault.name}"
        if fault.value is not None:
            entry += f", a {fault.value}"
    elif fault.name is not None:
        entry = f"; the entry at fault is {fault.name!r}"
        if fault.value is not None:
            entry += f", a {fault.value}"
    elif fault.value is not None:
        entry = f"; to_pp_tensors returned {fault.value}"
    if fault.stage == "wire":
        code = "PP709"
        message = _first_sentence(fault.message)
        text = (
            f"the {_value(run.options.transport)} transport fails on the {fault.side}: "
            f"{fault.error_type}: {message}{entry} ({at})"
        )
        sglang_error = None
    else:
        code = _SGLANG_RULES.get(
            fault.message,
            "PP705"
            if fault.message.endswith("is not a tensor") and fault.stage == "add"
            else "PP708",
        )
        side = "the last stage's add" if fault.stage == "add" else "rank 0's pop"
        text = f"{side} raises {fault.error_type}: {fault.message}{entry} ({at})"
        sglang_error = fault.message if fault.error_type == "RuntimeError" else None
    if not _once(run, code, f"{fault.stage}/{fault.message}"):
        return
    run.findings.append(
        finding(
            code,
            run.target,
            text,
            fault.name,
            sglang_error=sglang_error,
            extra={"side": fault.side, "stage": fault.stage, "value": fault.value},
        )
    )


def _line(text: str) -> str:
    """The first line of an exception's message (the JSON report's steps keep all of it)."""
    lines = text.strip().splitlines()
    return lines[0] if lines else ""


def _first_sentence(text: str) -> str:
    """torch's long dispatcher messages, cut after their first sentence."""
    if len(text) <= 160:
        return text
    end = text.find(". ")
    return text[: end + 1] + " ..." if 0 < end < 160 else text[:157] + "..."


def _difference_finding(
    run: _Run, code: str, where: str, item: Difference, batch_size: int, index: int
) -> None:
    # One finding per field and kind of difference, whichever request, step or list index:
    # the first one is shown, the others are counted in the report's data.
    pattern = re.sub(r"\[\d+\]", "[*]", item.path)
    if not _once(run, code, f"{pattern}/{item.what}"):
        return
    # ".entropy of the output rank 0 rebuilt", not "the output rank 0 rebuilt.entropy".
    label = f"{item.path} of {where}" if item.path else where
    run.findings.append(
        finding(
            code,
            run.target,
            f"{label} differs ({item.what}): single stage {item.left}, PP {item.right} "
            f"({_where(batch_size, index)}); sglang raises nothing, every response carries "
            "the PP value",
            item.path or None,
            extra={"what": item.what, "single_stage": item.left, "pp": item.right},
        )
    )


def _row(run: _Run, batch_size: int, index: int, sent: str, verdict: str, state: str) -> None:
    if state in ("error", "differs"):
        run.marked.add((len(run.rows), 3))
    run.rows.append((str(batch_size), str(index), sent, verdict))


def _report(run: _Run, loaded: LoadedObserver, given: bool) -> Report:
    options = run.options
    report = Report(command="check-observer")
    outputs = sum(1 for r in run.results if r["driving"] is None)
    if outputs == 0 and not any(f.code == "PP710" for f in run.findings):
        report.findings.append(
            finding(
                "PP714",
                run.target,
                "the observer produced no auxiliary output in any step: nothing was sent, so "
                "nothing was checked (is_active, before_grammar or after_sample said no)",
            )
        )
    report.findings += [_located(run, item) for item in run.findings]
    report.data["observer"] = {
        "target": run.target,
        "kind": loaded.kind,
        "origin": loaded.origin,
        "transport": _value(options.transport),
        "impl": _value(options.impl),
        "sender": _value(options.sender),
        "device": str(run.device),
        "batch_sizes": list(options.batch_sizes) if not given else [options.batch_sizes[0]],
        "steps": options.steps if not given else None,
        "outputs_given": given,
        "sampling_info": "sglang" if run.sglang_parts else "stand-in",
        "result_processing": "sglang" if run.sglang_parts else "ppaux",
        "repeats": {f"{code} {what}": n for (code, what), n in run.counts.items() if n > 1},
    }
    report.data["steps"] = run.results
    name = run.target.rpartition(":")[2] or run.target
    title = (
        f"{name}: transport {_value(options.transport)}, impl {_value(options.impl)}, sender "
        f"{_value(options.sender)}, {run.device}"
    )
    report.tables.append(
        Table(title, ("batch", "step", "sent", "verdict"), tuple(run.rows), frozenset(run.marked))
    )
    return report
