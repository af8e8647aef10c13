"""``ppaux inspect PATH...``: describe and check captured PP tensor dicts (torch-free)."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from ppaux.formats import Format
from ppaux.inspection import inspect_paths
from ppaux.limits import Limits, parse_limit
from ppaux.report import FailOn
from ppaux_cli.output import emit, fail
from ppaux_cli.progress import progress_reporter


def inspect(
    paths: Annotated[
        list[str], typer.Argument(help="Dump files (torch.save, pickle or ppaux capture) or directories.")
    ],
    format: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.TEXT,
    fail_on: Annotated[
        FailOn, typer.Option("--fail-on", help="Lowest severity that makes the exit code 1.")
    ] = FailOn.ERROR,
    release: Annotated[
        Optional[str],
        typer.Option("--release", help="Also check output-message keys against this sglang release's key set."),
    ] = None,
    limit: Annotated[
        Optional[list[str]],
        typer.Option("--limit", help="Raise a reader limit, NAME=N (for example max_depth=500)."),
    ] = None,
    output: Annotated[
        Optional[str], typer.Option("--output", "-o", help="Write the report to this file.")
    ] = None,
) -> None:
    """Show every key, dtype, shape, device and auxiliary entry, and predict sglang's error."""
    limits = Limits()
    for text in limit or ():
        try:
            name, value = parse_limit(text)
        except ValueError as exc:
            fail(f"--limit: {exc}")
        limits = limits.replace(**{name: value})
    if release is not None:
        from ppaux.releases import known_release

        if not known_release(release):
            fail(f"--release: unknown sglang release {release!r}")
    with progress_reporter(sys.stderr, "inspecting") as progress:
        report = inspect_paths(paths, limits, release=release, progress=progress)
    emit(report, format, fail_on, output)
