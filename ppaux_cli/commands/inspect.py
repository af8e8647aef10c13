"""``ppaux inspect PATH...``: describe and check captured PP tensor dicts (torch-free)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ppaux_cli.exits import fail
from ppaux_cli.options import LimitOption, limits_from
from ppaux_cli.output import emit, waiting_on_stdin
from ppaux_cli.output_paths import STDIN_NAME, refuse_stdin_copy, stdin_streams
from ppaux_cli.report_options import ReportOptions, report_options

__all__ = ["STDIN_NAME", "inspect"]


@report_options
def inspect(
    paths: Annotated[
        list[str],
        typer.Argument(
            metavar="PATH",
            help="Dump files (torch.save, pickle or ppaux capture) or directories; - reads "
            "one dump from stdin.",
        ),
    ],
    release: Annotated[
        str | None,
        typer.Option(
            "--release",
            metavar="VERSION",
            help="Also check output-message keys against this sglang release's key set.",
        ),
    ] = None,
    limit: LimitOption = None,
    *,
    options: ReportOptions,
) -> None:
    """Show every key, dtype, shape, device and auxiliary entry, and predict sglang's error."""
    # The reader is imported here, not at module level, so that 'ppaux --help' stays fast.
    from ppaux.dump import inspect_paths
    from ppaux_cli.progress import progress_reporter

    limits = limits_from(limit)
    if release is not None:
        from ppaux.sglang import known_release, release_versions, unknown_release
        from ppaux_cli.closest import did_you_mean

        if not known_release(release):
            fail(
                f"--release: {unknown_release(release)}{did_you_mean(release, release_versions())}"
            )
    paths, streams, reader = stdin_streams(paths, options.output)
    if streams:
        waiting_on_stdin("a dump", "cat dump.pt | ppaux inspect -", options.quiet)
    wanted = False if options.quiet else options.progress
    with progress_reporter(sys.stderr, "inspecting", wanted) as progress:
        report = inspect_paths(paths, limits, release=release, progress=progress, streams=streams)
    refuse_stdin_copy(reader, options.output)
    emit(report, options)
