"""``ppaux replay PATH...``: run the PP transport's add, wire and pop on recorded payloads."""

from __future__ import annotations

import sys
import warnings
from typing import Annotated

import typer

from ppaux.replay import Impl, Sender, Transport
from ppaux_cli.choices import choice_option
from ppaux_cli.exits import fail
from ppaux_cli.options import LimitOption, limits_from, seconds
from ppaux_cli.output import STDIO, emit, name_problems
from ppaux_cli.report_options import ReportOptions, report_options
from ppaux_cli.wording import setting_line

__all__ = ["replay"]


# The command's parameters, one alias each, so that its signature reads as the list it is.
PathsArgument = Annotated[
    list[str],
    typer.Argument(
        metavar="PATH", help="Dump files (torch.save, pickle or ppaux capture) or directories."
    ),
]

DeviceOption = Annotated[
    str,
    typer.Option(
        "--device",
        metavar="DEVICE",
        help="Where tensors are rebuilt: cpu, cuda, cuda:N or auto (CUDA when present).",
    ),
]

SenderOption = Annotated[
    Sender | None,
    choice_option(
        Sender,
        "--sender",
        default="validating; legacy for a capture of rank 0's failing pop",
        help="validating: the last stage adds the auxiliary output with "
        "add, as every sglang release does; legacy: it writes the keys unchecked. "
        "Unset, a capture of rank 0's failing pop is replayed as rank 0 received it.",
    ),
]

TransportOption = Annotated[
    Transport,
    choice_option(
        Transport,
        "--transport",
        default="none",
        help="none: pop the dict as sent; wire: sglang's "
        "send/recv_tensor_dict emulated in-process; torch-distributed: a real "
        "two-process group on 127.0.0.1 (gloo, NCCL for CUDA); sglang: sglang's own "
        "GroupCoordinator send/recv_tensor_dict in two processes.",
    ),
]

ImplOption = Annotated[
    Impl,
    choice_option(
        Impl,
        "--impl",
        default="reference",
        help="reference: ppaux's transport; sglang: sglang's own "
        "sampling_observer_pp; both: run both and report every difference.",
    ),
]

SglangPathOption = Annotated[
    str | None,
    typer.Option(
        "--sglang-path",
        metavar="DIR|WHEEL",
        help="Read sglang's transport from this unpacked tree or wheel instead of "
        "the installed sglang; with --transport sglang, a tree put first on the "
        "import path.",
    ),
]

AllGatherOption = Annotated[
    int,
    typer.Option(
        "--all-gather",
        metavar="N",
        min=0,
        help="Send with an attention-TP group of N ranks, as sglang's scheduler does "
        "(1: its default; 0: no group, as 0.5.19 with DSA prefill context parallel).",
    ),
]

TimeoutOption = Annotated[
    float,
    typer.Option(
        "--timeout",
        metavar="SECONDS",
        parser=seconds,
        help="How long the torch-distributed transport waits for its peer (seconds, at most "
        "86400).",
    ),
]


@report_options
def replay(
    paths: PathsArgument,
    device: DeviceOption = "cpu",
    sender: SenderOption = None,
    transport: TransportOption = Transport.NONE,
    impl: ImplOption = Impl.REFERENCE,
    sglang_path: SglangPathOption = None,
    all_gather: AllGatherOption = 1,
    timeout: TimeoutOption = 60.0,
    limit: LimitOption = None,
    *,
    options: ReportOptions,
) -> None:
    """Rebuild each payload with torch and run sender, wire and pop as sglang does; compare the
    output that comes back bit for bit."""
    # torch warns on import when numpy is absent; replay never uses numpy, so keep stderr clean.
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
    # Imported here, not at module level: 'ppaux --help' must not pay for the reader or torch.
    from ppaux.dump import readable_dumps
    from ppaux.errors import TorchMissingError
    from ppaux.replay import REPLAY_LIMITS, ReplayConfigError, ReplayOptions, replay_paths
    from ppaux_cli.progress import progress_reporter

    limits = limits_from(limit, REPLAY_LIMITS)
    if STDIO in paths:
        fail("-: replay reads tensors back from the file, so it cannot read stdin; give a path")
    settings = ReplayOptions(
        device=device,
        sender=Sender.VALIDATING if sender is None else sender,
        sender_as_recorded=sender is None,
        transport=transport,
        impl=impl,
        sglang_path=sglang_path,
        all_gather=all_gather,
        timeout_s=timeout,
        limits=limits,
    )
    try:
        wanted = False if options.quiet else options.progress
        with progress_reporter(sys.stderr, "replaying", wanted) as progress:
            report = replay_paths(paths, settings, progress=progress)
    except TorchMissingError as exc:
        # What cannot be read is said first: reading needs no torch, and torch would not help.
        readable, problems = readable_dumps(paths, limits)
        name_problems(problems)
        if not readable:
            raise typer.Exit(2) from None
        fail(exc)
    except ReplayConfigError as exc:
        fail(setting_line(exc))
    emit(report, options)
