"""``ppaux check-skew FILE|DIR...`` or ``--distributed``: can these pipeline stages talk?"""

from __future__ import annotations

import os
import signal
import sys
from typing import Annotated, NoReturn, Optional

import typer

from ppaux.report.formats import Format
from ppaux.report.document import InputProblem, Report
from ppaux_cli.commands.fingerprint import check_stage_options
from ppaux_cli.options import (
    ConfigOption,
    FailOnOption,
    FormatOption,
    IgnoreOption,
    OutputOption,
    SelectOption,
    RootOption,
    StrictOption,
)
from ppaux_cli.output import emit, fail, resolve_gate

def check_skew(
    paths: Annotated[
        Optional[list[str]],
        typer.Argument(
            metavar="PATH", help="Fingerprint files, or directories of *.json fingerprints."
        ),
    ] = None,
    baseline: Annotated[
        Optional[str],
        typer.Option(
            "--baseline", metavar="FILE", help="A golden fingerprint every stage must match."
        ),
    ] = None,
    distributed: Annotated[
        bool,
        typer.Option(
            "--distributed",
            help="Gather fingerprints from every rank over torch.distributed (gloo).",
        ),
    ] = False,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            metavar="SECONDS",
            help="How long rank 0 waits for every rank (--distributed).",
        ),
    ] = 60.0,
    init_method: Annotated[
        Optional[str],
        typer.Option(
            "--init-method",
            metavar="URL",
            help="tcp://HOST:PORT of rank 0 when not under torchrun.",
        ),
    ] = None,
    rank: Annotated[
        Optional[int],
        typer.Option("--rank", metavar="N", help="This process's rank (no torchrun)."),
    ] = None,
    world_size: Annotated[
        Optional[int],
        typer.Option("--world-size", metavar="N", help="Number of processes (no torchrun)."),
    ] = None,
    pp_size: Annotated[
        Optional[int],
        typer.Option(
            "--pp-size",
            metavar="N",
            help="Pipeline stages; when it equals the world size, rank N is stage N.",
        ),
    ] = None,
    sglang_path: Annotated[
        Optional[str],
        typer.Option(
            "--sglang-path",
            metavar="DIR|WHEEL",
            help="Analyse this sglang tree or wheel (--distributed).",
        ),
    ] = None,
    format: FormatOption = Format.TEXT,
    fail_on: FailOnOption = None,
    output: OutputOption = None,
    select: SelectOption = None,
    ignore: IgnoreOption = None,
    strict: StrictOption = None,
    config: ConfigOption = None,
    root: RootOption = None,
) -> None:
    """Compare stages' sglang, transport capabilities, torch, NCCL, CUDA and environment."""
    from ppaux.skew.fingerprint import FingerprintError, load

    gate = dict(select=select, ignore=ignore, strict=strict, config=config, root=root)
    golden = None
    if baseline is not None:
        try:
            golden = load(baseline)
        except FingerprintError as exc:
            fail(str(exc))
    if distributed:
        if paths:
            fail("give fingerprint files or --distributed, not both")
        _distributed(
            golden,
            timeout,
            init_method,
            rank,
            world_size,
            pp_size,
            sglang_path,
            format,
            fail_on,
            output,
            gate,
        )
    if not paths:
        fail("no fingerprints given: pass files or directories, or --distributed")
    for option, value in (
        ("--init-method", init_method),
        ("--rank", rank),
        ("--world-size", world_size),
        ("--sglang-path", sglang_path),
    ):
        if value is not None:
            fail(f"{option} applies only with --distributed")
    from ppaux.skew.fingerprint import load_paths

    fingerprints, unusable = load_paths(paths)
    problems = [InputProblem(path, reason) for path, reason in unusable]
    from ppaux.skew.compare import compare

    report = compare(fingerprints, baseline=golden) if fingerprints else Report("check-skew")
    report.problems += problems
    emit(report, format, fail_on, output, **gate)


def _distributed(
    golden,
    timeout,
    init_method,
    rank,
    world_size,
    pp_size,
    sglang_path,
    format,
    fail_on,
    output,
    gate,
) -> None:
    from ppaux.skew.fingerprint import collect
    from ppaux.skew.gather import GatherError, SetupError, connect
    from ppaux.sglang.tree import SglangPathError
    from ppaux.skew.compare import compare

    check_stage_options(None, pp_size)
    # Settle the gate before joining: a bad --config must not leave the other ranks waiting.
    resolve_gate(fail_on, **{k: v for k, v in gate.items() if k != "root"})
    try:
        local = collect(sglang_path=sglang_path)
    except SglangPathError as exc:
        fail(f"--sglang-path {exc}")
    try:
        session = connect(
            timeout=timeout, init_method=init_method, rank=rank, world_size=world_size
        )
    except SetupError as exc:
        fail(str(exc))
    except GatherError as exc:
        fail(str(exc), code=1)
    local = local.placed(
        rank=session.rank,
        world_size=session.world_size,
        pp_size=pp_size,
        pp_rank=session.rank if pp_size == session.world_size else None,
    )
    try:
        gathered = session.gather(local)
        if session.rank != 0:
            code = session.await_exit()
            _on_terminate_exit(code)
            _leave(code)
    except GatherError as exc:
        fail(str(exc), code=1)
    report = compare(
        gathered.fingerprints, gathered.paths, baseline=golden, missing=gathered.missing
    )
    report.problems += [InputProblem(source, message) for source, message in gathered.problems]
    report.data["distributed"] = {
        "world_size": session.world_size,
        "timeout": timeout,
        "gathered_over": gathered.transport,
    }
    try:
        emit(report, format, fail_on, output, **gate)
    except typer.Exit as done:
        # The report is out; now every rank learns the exit code and leaves with it. Rank 0
        # leaves without interpreter teardown too: torch's teardown is slow, and Python puts
        # the default SIGTERM action back during it, so torchrun's SIGTERM would win.
        _on_terminate_exit(done.exit_code)
        session.publish_exit(done.exit_code)
        _leave(done.exit_code)


def _on_terminate_exit(code: int) -> None:
    """From now on, SIGTERM ends this process with ``code``.

    When a worker exits with a failure, torchrun stops the others of its node with SIGTERM;
    a rank that already knows the verdict then still exits with it.
    """
    signal.signal(signal.SIGTERM, lambda *_: _leave(code))


def _leave(code: int) -> NoReturn:
    """Exit now with ``code``, skipping interpreter teardown (nothing is left to clean up).

    Ranks other than 0 leave as soon as they know the code, before rank 0 does: torchrun stops
    the remaining workers of a node when one exits with a failure. The report is written by
    then, so only the streams need flushing.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
