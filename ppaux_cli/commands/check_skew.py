"""``ppaux check-skew FILE|DIR...`` or ``--distributed``: can these pipeline stages talk?"""

from __future__ import annotations

import glob
import os
from typing import Annotated, Optional

import typer

from ppaux.fingerprint import Fingerprint, FingerprintError, load
from ppaux.formats import Format
from ppaux.report import FailOn, InputProblem, Report, exit_code
from ppaux_cli.commands.fingerprint import check_stage_options
from ppaux_cli.output import emit, fail


def _expand(paths: list[str]) -> tuple[list[str], list[InputProblem]]:
    files: list[str] = []
    problems: list[InputProblem] = []
    for path in paths:
        if os.path.isdir(path):
            found = sorted(glob.glob(os.path.join(glob.escape(path), "*.json")))
            if not found:
                problems.append(InputProblem(path, "no *.json fingerprints in this directory"))
            files += found
        else:
            files.append(path)
    return files, problems


def _load_all(files: list[str]) -> tuple[list[Fingerprint], list[InputProblem]]:
    fingerprints: list[Fingerprint] = []
    problems: list[InputProblem] = []
    for path in files:
        try:
            fingerprints.append(load(path))
        except FingerprintError as exc:
            problems.append(InputProblem(exc.path, exc.reason))
    return fingerprints, problems


def check_skew(
    paths: Annotated[
        Optional[list[str]],
        typer.Argument(help="Fingerprint files, or directories of *.json fingerprints."),
    ] = None,
    baseline: Annotated[
        Optional[str], typer.Option("--baseline", help="A golden fingerprint every stage must match.")
    ] = None,
    distributed: Annotated[
        bool,
        typer.Option("--distributed", help="Gather fingerprints from every rank over torch.distributed (gloo)."),
    ] = False,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds rank 0 waits for every rank (--distributed).")
    ] = 60.0,
    init_method: Annotated[
        Optional[str],
        typer.Option("--init-method", help="tcp://HOST:PORT of rank 0 when not under torchrun."),
    ] = None,
    rank: Annotated[Optional[int], typer.Option("--rank", help="This process's rank (no torchrun).")] = None,
    world_size: Annotated[
        Optional[int], typer.Option("--world-size", help="Number of processes (no torchrun).")
    ] = None,
    pp_size: Annotated[
        Optional[int],
        typer.Option("--pp-size", help="Pipeline stages; when it equals the world size, rank N is stage N."),
    ] = None,
    sglang_path: Annotated[
        Optional[str],
        typer.Option("--sglang-path", help="Analyse this sglang directory or wheel (--distributed)."),
    ] = None,
    format: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.TEXT,
    fail_on: Annotated[
        FailOn, typer.Option("--fail-on", help="Lowest severity that makes the exit code 1.")
    ] = FailOn.ERROR,
) -> None:
    """Compare stages' sglang, transport capabilities, torch, NCCL, CUDA and environment."""
    golden = None
    if baseline is not None:
        try:
            golden = load(baseline)
        except FingerprintError as exc:
            fail(str(exc))
    if distributed:
        if paths:
            fail("give fingerprint files or --distributed, not both")
        _distributed(golden, timeout, init_method, rank, world_size, pp_size, sglang_path,
                     format, fail_on)
    if not paths:
        fail("no fingerprints given: pass files or directories, or --distributed")
    for option, value in (("--init-method", init_method), ("--rank", rank),
                          ("--world-size", world_size), ("--sglang-path", sglang_path)):
        if value is not None:
            fail(f"{option} applies only with --distributed")
    files, problems = _expand(paths)
    fingerprints, unusable = _load_all(files)
    problems += unusable
    from ppaux.skew import compare

    report = compare(fingerprints, baseline=golden) if fingerprints else Report("check-skew")
    report.problems += problems
    emit(report, format, fail_on)


def _distributed(golden, timeout, init_method, rank, world_size, pp_size, sglang_path,
                 format, fail_on) -> None:
    from ppaux.fingerprint import collect
    from ppaux.gather import GatherError, SetupError, connect
    from ppaux.sglang_tree import SglangPathError
    from ppaux.skew import compare

    check_stage_options(None, pp_size)
    try:
        local = collect(sglang_path=sglang_path)
    except SglangPathError as exc:
        fail(f"--sglang-path {exc}")
    try:
        session = connect(timeout=timeout, init_method=init_method, rank=rank, world_size=world_size)
    except SetupError as exc:
        fail(str(exc))
    except GatherError as exc:
        fail(str(exc), code=1)
    local = local.placed(rank=session.rank, world_size=session.world_size, pp_size=pp_size,
                         pp_rank=session.rank if pp_size == session.world_size else None)
    try:
        gathered = session.gather(local)
        if session.rank != 0:
            raise typer.Exit(session.await_exit())
        report = compare(gathered.fingerprints, gathered.paths, baseline=golden,
                         missing=gathered.missing)
        report.problems += [InputProblem(source, message) for source, message in gathered.problems]
        report.data["distributed"] = {"world_size": session.world_size, "timeout": timeout,
                                      "gathered_over": gathered.transport}
        session.publish_exit(exit_code(report, fail_on))
    except GatherError as exc:
        fail(str(exc), code=1)
    emit(report, format, fail_on)
