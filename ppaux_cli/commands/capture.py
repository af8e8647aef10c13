"""``ppaux capture status`` and ``ppaux capture list``: the capture plugin and its directory."""

from __future__ import annotations

import os
from typing import Annotated, Optional

import typer

from ppaux.capture_store import CaptureDirError, list_report, status_report
from ppaux.formats import Format
from ppaux.report import FailOn
from ppaux_cli.output import emit, fail

__all__ = ["app", "status", "list_captures"]

app = typer.Typer(
    no_args_is_help=True,
    help="Capture from a running sglang: check the plugin, list what it wrote.",
)

_DIR_HELP = "Capture directory (default: $PPAUX_CAPTURE_DIR)."


@app.command("status")
def status(
    directory: Annotated[Optional[str], typer.Option("--dir", help=_DIR_HELP)] = None,
    format: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.TEXT,
    fail_on: Annotated[
        FailOn, typer.Option("--fail-on", help="Lowest severity that makes the exit code 1.")
    ] = FailOn.ERROR,
) -> None:
    """Whether the sglang plugin is installed and would capture; captures, bytes and skips."""
    try:
        report = status_report(directory)
    except CaptureDirError as exc:
        fail(str(exc))
    emit(report, format, fail_on)


@app.command("list")
def list_captures(
    directory: Annotated[Optional[str], typer.Option("--dir", help=_DIR_HELP)] = None,
    format: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.TEXT,
    fail_on: Annotated[
        FailOn, typer.Option("--fail-on", help="Lowest severity that makes the exit code 1.")
    ] = FailOn.ERROR,
) -> None:
    """The captures in the directory, oldest first, with the error each one recorded."""
    where = directory or os.environ.get("PPAUX_CAPTURE_DIR", "").strip()
    if not where:
        fail("no capture directory: pass --dir or set PPAUX_CAPTURE_DIR")
    try:
        report = list_report(where)
    except CaptureDirError as exc:
        fail(str(exc))
    emit(report, format, fail_on)
