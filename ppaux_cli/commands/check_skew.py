"""``ppaux check-skew FILE|DIR...`` or ``--distributed``: can these pipeline stages talk?"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated

import typer

from ppaux.limits import Limits
from ppaux.report import InputProblem, Report
from ppaux_cli.exits import fail
from ppaux_cli.options import LimitOption, check_stage_options, limits_from, seconds
from ppaux_cli.output import emit, resolve_gate
from ppaux_cli.report_options import ReportOptions, report_options_reading
from ppaux_cli.wording import flag

if TYPE_CHECKING:
    from ppaux.skew import Fingerprint

__all__ = ["DistributedCheck", "check_skew"]


@dataclass(frozen=True)
class DistributedCheck:
    """What ``check-skew --distributed`` was asked to do, as given on the command line."""

    #: A golden fingerprint every stage must match (``--baseline``), if any.
    baseline: Fingerprint | None
    #: Seconds rank 0 waits for every rank.
    timeout: float
    #: tcp://HOST:PORT of rank 0 when not under torchrun.
    init_method: str | None
    #: This process's rank and the number of processes, when not under torchrun.
    rank: int | None
    world_size: int | None
    #: Pipeline stages; when it equals the world size, rank N is stage N.
    pp_size: int | None
    #: The sglang tree or wheel to analyse instead of the installed one.
    sglang_path: str | None
    #: The limits the analysis of that tree reads within (``--limit``).
    limits: Limits = field(default_factory=Limits)


# The command's parameters, one alias each, so that its signature reads as the list it is.
PathsArgument = Annotated[
    list[str] | None,
    typer.Argument(
        metavar="PATH", help="Fingerprint files, or directories of *.json fingerprints."
    ),
]

BaselineOption = Annotated[
    str | None,
    typer.Option("--baseline", metavar="FILE", help="A golden fingerprint every stage must match."),
]

DistributedOption = Annotated[
    bool,
    typer.Option(
        "--distributed",
        help="Gather fingerprints from every rank over torch.distributed (gloo).",
    ),
]

TimeoutOption = Annotated[
    float,
    typer.Option(
        "--timeout",
        metavar="SECONDS",
        parser=seconds,
        help="How long rank 0 waits for every rank (--distributed).",
    ),
]

InitMethodOption = Annotated[
    str | None,
    typer.Option(
        "--init-method",
        metavar="URL",
        help="tcp://HOST:PORT of rank 0 when not under torchrun.",
    ),
]

RankOption = Annotated[
    int | None,
    typer.Option("--rank", metavar="N", help="This process's rank (no torchrun)."),
]

WorldSizeOption = Annotated[
    int | None,
    typer.Option("--world-size", metavar="N", help="Number of processes (no torchrun)."),
]

PpSizeOption = Annotated[
    int | None,
    typer.Option(
        "--pp-size",
        metavar="N",
        help="Pipeline stages; when it equals the world size, rank N is stage N.",
    ),
]

SglangPathOption = Annotated[
    str | None,
    typer.Option(
        "--sglang-path",
        metavar="DIR|WHEEL",
        help="Analyse this sglang tree or wheel (--distributed).",
    ),
]


@report_options_reading((".json",))
def check_skew(
    paths: PathsArgument = None,
    baseline: BaselineOption = None,
    distributed: DistributedOption = False,
    timeout: TimeoutOption = 60.0,
    init_method: InitMethodOption = None,
    rank: RankOption = None,
    world_size: WorldSizeOption = None,
    pp_size: PpSizeOption = None,
    sglang_path: SglangPathOption = None,
    limit: LimitOption = None,
    *,
    options: ReportOptions,
) -> None:
    """Compare stages' sglang, transport capabilities, torch, NCCL, CUDA and environment."""
    from ppaux.sglang_source import ANALYSIS_LIMITS
    from ppaux.skew import READ_LIMITS, FingerprintError, load

    # Only the limits this run reads: the analysis of a tree runs only with --distributed.
    used = READ_LIMITS + (ANALYSIS_LIMITS if distributed else ())
    where = "check-skew --distributed" if distributed else "check-skew on fingerprint files"
    limits = limits_from(limit, used=used, command=where)

    golden = None
    if baseline is not None:
        try:
            golden = load(baseline, limits)
        except FingerprintError as exc:
            fail(exc)
    if distributed:
        if paths:
            fail("give fingerprint files or --distributed, not both")
        _distributed(
            DistributedCheck(
                golden, timeout, init_method, rank, world_size, pp_size, sglang_path, limits
            ),
            options,
        )
    if not paths:
        fail("no fingerprints given: pass files or directories, or --distributed")
    if "-" in paths:
        fail(
            "-: check-skew compares fingerprint files, one per stage, so it cannot read stdin; "
            "give their paths"
        )
    for option, value in (
        ("--init-method", init_method),
        ("--rank", rank),
        ("--world-size", world_size),
        ("--sglang-path", sglang_path),
    ):
        if value is not None:
            fail(f"{option} applies only with --distributed")
    from ppaux.skew import load_paths

    fingerprints, unusable = load_paths(paths, limits)
    problems = [InputProblem.of(error) for error in unusable]
    from ppaux.skew import compare_stages

    report = compare_stages(fingerprints, baseline=golden) if fingerprints else Report("check-skew")
    report = dataclasses.replace(report, problems=(*report.problems, *problems))
    emit(report, options)


def _distributed(check: DistributedCheck, options: ReportOptions) -> None:
    from ppaux.errors import TorchMissingError
    from ppaux.sglang_source import SglangPathError
    from ppaux.skew import GatherError, SetupError, collect, compare_stages, connect
    from ppaux_cli.exits import leave, leave_on_sigterm

    check_stage_options(None, check.pp_size)
    # Settle the gate before joining: a bad --config must not leave the other ranks waiting.
    resolve_gate(
        options.fail_on,
        options.select,
        options.ignore,
        options.strict,
        options.config,
        options.extend_select,
        options.extend_ignore,
    )
    try:
        local = collect(sglang_path=check.sglang_path, limits=check.limits)
    except SglangPathError as exc:
        fail(f"--sglang-path {exc}")
    try:
        session = connect(
            timeout=check.timeout,
            init_method=check.init_method,
            rank=check.rank,
            world_size=check.world_size,
        )
    except TorchMissingError as exc:
        fail(exc)
    except SetupError as exc:
        fail(exc.spelled({option: flag(option) for option in exc.options}))
    except GatherError as exc:
        fail(exc, code=1)
    local = local.placed(
        rank=session.rank,
        world_size=session.world_size,
        pp_size=check.pp_size,
        pp_rank=session.rank if check.pp_size == session.world_size else None,
    )
    try:
        gathered = session.gather(local)
        if session.rank != 0:
            code = session.await_exit()
            leave_on_sigterm(code)
            leave(code)
    except GatherError as exc:
        fail(exc, code=1)
    report = compare_stages(
        gathered.fingerprints, gathered.paths, baseline=check.baseline, missing=gathered.missing
    )
    report = dataclasses.replace(
        report,
        problems=(
            *report.problems,
            *(InputProblem(source, message) for source, message in gathered.problems),
        ),
        data={
            **report.data,
            "distributed": {
                "world_size": session.world_size,
                "timeout": check.timeout,
                "gathered_over": gathered.transport,
            },
        },
    )
    try:
        emit(report, options)
    except typer.Exit as done:
        # The report is out; now every rank learns the exit code and leaves with it, rank 0
        # too, without interpreter teardown (ppaux_cli.exits says why).
        leave_on_sigterm(done.exit_code)
        session.publish_exit(done.exit_code)
        leave(done.exit_code)
