"""``ppaux check-observer TARGET``: drive a sampling observer through sglang's PP path and the
single-stage path, and report every error and every difference."""

from __future__ import annotations

import dataclasses
import enum
import sys
import warnings
from typing import TYPE_CHECKING, Annotated

import typer

from ppaux.files import os_path
from ppaux.replay import Impl, Sender, Transport
from ppaux_cli.choices import choice_option
from ppaux_cli.exits import fail
from ppaux_cli.options import LimitOption, limits_from, seconds
from ppaux_cli.output import emit, settle
from ppaux_cli.output_kept import keep_output, output_state
from ppaux_cli.output_paths import check_output_path, refuse_changed_output
from ppaux_cli.report_options import ReportOptions, report_options
from ppaux_cli.wording import setting_line

if TYPE_CHECKING:
    from collections.abc import Callable

    from ppaux.limits import Limits
    from ppaux.observer import ObserverOptions
    from ppaux.report import Report

__all__ = ["check_observer"]


class ObserverImpl(str, enum.Enum):
    """The implementations a check runs (replay's ``both`` compares two runs, which a check of
    one observer has no use for): :class:`ppaux.replay.Impl`'s other members."""

    REFERENCE = Impl.REFERENCE.value
    SGLANG = Impl.SGLANG.value


_TargetArgument = Annotated[
    str,
    typer.Argument(
        metavar="TARGET",
        help="module:attr or path/to/file.py:attr naming a sampling observer, a class or a "
        "zero-argument factory. Its module is imported (its code runs), as pytest imports "
        "test modules.",
    ),
]


_OutputsOption = Annotated[
    str | None,
    typer.Option(
        "--outputs",
        metavar="MODULE:ATTR",
        help="A zero-argument callable returning the DeviceAuxiliaryOutputs to send, "
        "instead of driving the observer on synthetic logits (its code runs too).",
    ),
]


_TransportOption = Annotated[
    Transport,
    choice_option(
        Transport,
        "--transport",
        default="wire",
        help="none: rank 0 pops the dict as sent; wire: sglang's send/recv_tensor_dict "
        "emulated in-process; torch-distributed: a real two-process group on 127.0.0.1; "
        "sglang: sglang's own GroupCoordinator, SamplingBatchInfo and result processing "
        "(sglang must be importable).",
    ),
]


_ImplOption = Annotated[
    ObserverImpl,
    choice_option(
        ObserverImpl,
        "--impl",
        default="reference",
        help="reference: ppaux's add and pop; sglang: sglang's own sampling_observer_pp.",
    ),
]


_SenderOption = Annotated[
    Sender,
    choice_option(
        Sender,
        "--sender",
        default="validating",
        help="validating: the last stage adds with add, as every sglang release does; "
        "legacy: it writes the keys unchecked, so rank 0 sees what a patched sender sends.",
    ),
]


_BatchSizeOption = Annotated[
    list[int] | None,
    typer.Option(
        "--batch-size",
        metavar="N",
        min=1,
        help="A batch size to drive (repeat for several; default 1 and 4). With --outputs, "
        "the first is the number of requests that consume sees.",
    ),
]


_StepsOption = Annotated[
    int,
    typer.Option(
        "--steps",
        metavar="N",
        min=1,
        help="Forwards per batch size (2 or more find outputs that alias a reused buffer).",
    ),
]


_VocabSizeOption = Annotated[
    int,
    typer.Option("--vocab-size", metavar="N", min=2, help="Width of the synthetic logits."),
]


_DeviceOption = Annotated[
    str,
    typer.Option(
        "--device",
        metavar="DEVICE",
        help="Where the logits are made: cpu, cuda, cuda:N or auto (CUDA when present).",
    ),
]


_SglangPathOption = Annotated[
    str | None,
    typer.Option(
        "--sglang-path",
        metavar="DIR|WHEEL",
        help="Read sglang from this unpacked tree (or, for --impl sglang, a wheel) instead "
        "of the installed sglang.",
    ),
]


_TimeoutOption = Annotated[
    float,
    typer.Option(
        "--timeout",
        metavar="SECONDS",
        parser=seconds,
        help="How long a two-process transport waits for its peer (seconds, at most 86400); "
        "a step, the target's loading or the end of a batch size that takes longer than the "
        "timeout plus 5 s is stopped as hung (the 5 s let the transport's own timeout report "
        "first).",
    ),
]


@report_options
def check_observer(
    target: _TargetArgument,
    outputs: _OutputsOption = None,
    transport: _TransportOption = Transport.WIRE,
    impl: _ImplOption = ObserverImpl.REFERENCE,
    sender: _SenderOption = Sender.VALIDATING,
    batch_size: _BatchSizeOption = None,
    steps: _StepsOption = 3,
    vocab_size: _VocabSizeOption = 32,
    device: _DeviceOption = "cpu",
    sglang_path: _SglangPathOption = None,
    timeout: _TimeoutOption = 60.0,
    limit: LimitOption = None,
    *,
    options: ReportOptions,
) -> None:
    """Run a sampling observer's outputs through sglang's PP path and the single-stage path;
    report sglang's errors, every difference and reused buffers. TARGET's code runs."""
    # torch warns on import when numpy is absent; the check never needs numpy itself.
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
    from ppaux.observer import CHECK_LIMITS, ObserverOptions

    limits = limits_from(limit, used=CHECK_LIMITS, command="check-observer")
    settings = ObserverOptions(
        transport=transport,
        impl=Impl(impl.value),
        sender=sender,
        batch_sizes=tuple(batch_size) if batch_size else (1, 4),
        steps=steps,
        vocab_size=vocab_size,
        device=device,
        sglang_path=sglang_path,
        timeout_s=timeout,
    )
    options = _output_apart(options, target, outputs)
    # -o as it is now: after the run it is ppaux's report, or put back as it was.
    kept = keep_output(options.output)
    after = None
    try:
        # The user's files, read before the target's code runs; the report a file made anew.
        settled = dataclasses.replace(settle(options), fresh=True)
        report = _checked(
            target, settings, outputs, limits, options.output, _output_shower(options)
        )
        refuse_changed_output(options.output, kept.identity)
        after = output_state(options.output)
        emit(report, options, settled)
    finally:
        kept.put_back(after)


def _output_apart(options: ReportOptions, target: str, outputs: str | None) -> ReportOptions:
    """``options`` with ``-o`` made absolute, after refusing one that is among the inputs."""
    from ppaux.observer import target_files

    # The files the target and --outputs name are inputs: the report never goes over them.
    # The target runs in a child process of its own, in this directory; -o is resolved here,
    # before it starts, and nothing it does moves it.
    given = [target, *([outputs] if outputs is not None else [])]
    check_output_path(options.output, [path for name in given for path in target_files(name)])
    if options.output not in (None, "-"):
        options = dataclasses.replace(options, output=os_path(options.output))
    return options


def _checked(
    target: str,
    settings: ObserverOptions,
    outputs: str | None,
    limits: Limits,
    output: str | None,
    on_output: Callable[[bytes], None],
) -> Report:
    """The library's check; a target or a setting that cannot be used (a report file that is
    a module the target imported among them), or torch missing, is an exit 2 line."""
    from ppaux.errors import TorchMissingError
    from ppaux.observer import ObserverConfigError, TargetError, check_observer

    try:
        return check_observer(
            target,
            settings,
            outputs=outputs,
            on_output=on_output,
            limits=limits,
            report_path=None if output in (None, "-") else output,
        )
    except (TargetError, TorchMissingError) as exc:
        fail(exc)
    except ObserverConfigError as exc:
        fail(setting_line(exc))


def _output_shower(options: ReportOptions) -> Callable[[bytes], None]:
    """How the target's output is shown: as it is, or under ``-f github`` with each line after
    ``target: `` (the runner reads workflow commands on stderr too, and the target's must not
    switch off or forge the report's annotations)."""
    from ppaux.report import Format, LinePrefix

    if options.format is not Format.GITHUB:
        return _show_output
    prefixed = LinePrefix()
    return lambda data: _show_output(prefixed(data))


def _show_output(data: bytes) -> None:
    """What the target printed, on stderr as it comes (stdout carries the report alone)."""
    stream = sys.stderr
    try:
        stream.flush()
        buffer = getattr(stream, "buffer", None)
        if buffer is not None:
            buffer.write(data)
            buffer.flush()
        else:
            stream.write(data.decode("utf-8", "replace"))
    except (OSError, ValueError):  # stderr closed: the output is not shown
        pass
