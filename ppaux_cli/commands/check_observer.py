"""``ppaux check-observer TARGET``: drive a sampling observer through sglang's PP path and the
single-stage path, and report every error and every difference."""

from __future__ import annotations

import dataclasses
import enum
import os
import sys
import warnings
from typing import Annotated

import typer

from ppaux.replay import Impl, Sender, Transport
from ppaux_cli.choices import choice_option
from ppaux_cli.exits import fail
from ppaux_cli.options import LimitOption, limits_from
from ppaux_cli.output import emit
from ppaux_cli.output_paths import check_output_path, output_identity, refuse_changed_output
from ppaux_cli.report_options import ReportOptions, report_options
from ppaux_cli.wording import setting_line

__all__ = ["check_observer"]


class ObserverImpl(str, enum.Enum):
    """The implementations a check runs (replay's ``both`` compares two runs, which a check of
    one observer has no use for): :class:`ppaux.replay.Impl`'s other members."""

    REFERENCE = Impl.REFERENCE.value
    SGLANG = Impl.SGLANG.value


# Long only by its options' declarations (Typer reads them from the signature, one Annotated
# parameter each); its body is a dozen lines: options in, the library's check, the report out.
@report_options
def check_observer(
    target: Annotated[
        str,
        typer.Argument(
            metavar="TARGET",
            help="module:attr or path/to/file.py:attr naming a sampling observer, a class or a "
            "zero-argument factory. Its module is imported (its code runs), as pytest imports "
            "test modules.",
        ),
    ],
    outputs: Annotated[
        str | None,
        typer.Option(
            "--outputs",
            metavar="MODULE:ATTR",
            help="A zero-argument callable returning the DeviceAuxiliaryOutputs to send, "
            "instead of driving the observer on synthetic logits (its code runs too).",
        ),
    ] = None,
    transport: Annotated[
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
    ] = Transport.WIRE,
    impl: Annotated[
        ObserverImpl,
        choice_option(
            ObserverImpl,
            "--impl",
            default="reference",
            help="reference: ppaux's add and pop; sglang: sglang's own sampling_observer_pp.",
        ),
    ] = ObserverImpl.REFERENCE,
    sender: Annotated[
        Sender,
        choice_option(
            Sender,
            "--sender",
            default="validating",
            help="validating: the last stage adds with add, as every sglang release does; "
            "legacy: it writes the keys unchecked, so rank 0 sees what a patched sender sends.",
        ),
    ] = Sender.VALIDATING,
    batch_size: Annotated[
        list[int] | None,
        typer.Option(
            "--batch-size",
            metavar="N",
            min=1,
            help="A batch size to drive (repeat for several; default 1 and 4). With --outputs, "
            "the first is the number of requests that consume sees.",
        ),
    ] = None,
    steps: Annotated[
        int,
        typer.Option(
            "--steps",
            metavar="N",
            min=1,
            help="Forwards per batch size (2 or more find outputs that alias a reused buffer).",
        ),
    ] = 3,
    vocab_size: Annotated[
        int,
        typer.Option("--vocab-size", metavar="N", min=2, help="Width of the synthetic logits."),
    ] = 32,
    device: Annotated[
        str,
        typer.Option(
            "--device",
            metavar="DEVICE",
            help="Where the logits are made: cpu, cuda, cuda:N or auto (CUDA when present).",
        ),
    ] = "cpu",
    sglang_path: Annotated[
        str | None,
        typer.Option(
            "--sglang-path",
            metavar="DIR|WHEEL",
            help="Read sglang from this unpacked tree (or, for --impl sglang, a wheel) instead "
            "of the installed sglang.",
        ),
    ] = None,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            metavar="SECONDS",
            min=1.0,
            help="How long a two-process transport waits for its peer.",
        ),
    ] = 60.0,
    limit: LimitOption = None,
    *,
    options: ReportOptions,
) -> None:
    """Run a sampling observer's outputs through sglang's PP path and the single-stage path;
    report sglang's errors, every difference and reused buffers. TARGET's code runs."""
    # torch warns on import when numpy is absent; the check never needs numpy itself.
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
    from ppaux.errors import TorchMissingError
    from ppaux.observer import (
        ObserverConfigError,
        ObserverOptions,
        TargetError,
        check_observer,
        target_files,
    )
    from ppaux.torch_probe import require_torch

    try:
        require_torch("ppaux check-observer")
    except TorchMissingError as exc:
        fail(exc)
    limits = limits_from(limit)
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
    # The files the target and --outputs name are inputs: the report never goes over them.
    # The target runs in a child process of its own, in this directory; -o is resolved here,
    # before it starts, and nothing it does moves it.
    given = [target, *([outputs] if outputs is not None else [])]
    check_output_path(options.output, [path for name in given for path in target_files(name)])
    if options.output not in (None, "-"):
        options = dataclasses.replace(options, output=os.path.abspath(options.output))
    before = output_identity(options.output)
    try:
        report = check_observer(
            target, settings, outputs=outputs, on_output=_show_output, limits=limits
        )
    except TargetError as exc:
        fail(f"{exc.target}: {exc.reason}")
    except ObserverConfigError as exc:
        fail(setting_line(exc))
    refuse_changed_output(options.output, before)
    emit(report, options)


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
