"""``ppaux capture status`` and ``ppaux capture list``: the capture plugin and its directory."""

from __future__ import annotations

import os
from typing import Annotated, Optional

import typer

from ppaux.report.formats import Format
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
from ppaux_cli.output import emit, fail

__all__ = ["app", "status", "list_captures"]

app = typer.Typer(
    no_args_is_help=True,
    help="Capture from a running sglang: check the plugin, list what it wrote.",
)

DirOption = Annotated[
    Optional[str],
    typer.Option("--dir", metavar="DIR", help="Capture directory [default: $PPAUX_CAPTURE_DIR]."),
]


@app.command("status")
def status(
    directory: DirOption = None,
    format: FormatOption = Format.TEXT,
    fail_on: FailOnOption = None,
    output: OutputOption = None,
    select: SelectOption = None,
    ignore: IgnoreOption = None,
    strict: StrictOption = None,
    config: ConfigOption = None,
    root: RootOption = None,
) -> None:
    """Whether the sglang plugin is installed and would capture; captures, bytes and skips."""
    # Imported here, not at module level: the app imports every command module, and this one
    # (importlib.metadata and more) would otherwise slow every other command's start-up.
    from ppaux.capture.store import CaptureDirError, status_report

    try:
        report = status_report(directory)
    except CaptureDirError as exc:
        fail(str(exc))
    emit(report, format, fail_on, output, select=select, ignore=ignore, strict=strict,
         config=config, root=root)


@app.command("list")
def list_captures(
    directory: DirOption = None,
    format: FormatOption = Format.TEXT,
    fail_on: FailOnOption = None,
    output: OutputOption = None,
    select: SelectOption = None,
    ignore: IgnoreOption = None,
    strict: StrictOption = None,
    config: ConfigOption = None,
    root: RootOption = None,
) -> None:
    """The captures in the directory, oldest first, with the error each one recorded."""
    from ppaux.capture import ENV_DIR
    from ppaux.capture.store import CaptureDirError, list_report

    where = directory or os.environ.get(ENV_DIR, "").strip()
    if not where:
        fail(f"no capture directory: pass --dir or set {ENV_DIR}")
    try:
        report = list_report(where)
    except CaptureDirError as exc:
        fail(str(exc))
    emit(report, format, fail_on, output, select=select, ignore=ignore, strict=strict,
         config=config, root=root)
