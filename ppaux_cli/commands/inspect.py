"""``ppaux inspect PATH...``: describe and check captured PP tensor dicts (torch-free)."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from ppaux.report.formats import Format
from ppaux_cli.options import (
    ConfigOption,
    FailOnOption,
    FormatOption,
    IgnoreOption,
    LimitOption,
    OutputOption,
    SelectOption,
    RootOption,
    StrictOption,
    limits_from,
)
from ppaux_cli.output import emit, fail


def inspect(
    paths: Annotated[
        list[str],
        typer.Argument(metavar="PATH", help="Dump files (torch.save, pickle or ppaux capture) or directories."),
    ],
    format: FormatOption = Format.TEXT,
    fail_on: FailOnOption = None,
    release: Annotated[
        Optional[str],
        typer.Option("--release", metavar="VERSION", help="Also check output-message keys against this sglang release's key set."),
    ] = None,
    limit: LimitOption = None,
    output: OutputOption = None,
    select: SelectOption = None,
    ignore: IgnoreOption = None,
    strict: StrictOption = None,
    config: ConfigOption = None,
    root: RootOption = None,
) -> None:
    """Show every key, dtype, shape, device and auxiliary entry, and predict sglang's error."""
    # The reader is imported here, not at module level, so that 'ppaux --help' stays fast.
    from ppaux.dump.inspection import inspect_paths
    from ppaux_cli.progress import progress_reporter

    limits = limits_from(limit)
    if release is not None:
        from ppaux.sglang.releases import known_release

        if not known_release(release):
            fail(f"--release: unknown sglang release {release!r}")
    with progress_reporter(sys.stderr, "inspecting") as progress:
        report = inspect_paths(paths, limits, release=release, progress=progress)
    emit(report, format, fail_on, output, select=select, ignore=ignore, strict=strict,
         config=config, root=root)
