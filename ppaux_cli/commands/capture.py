"""``ppaux capture status`` and ``ppaux capture list``: the capture plugin and its directory."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from ppaux_cli.exits import fail
from ppaux_cli.groups import CONTEXT_SETTINGS, HelpOnBare, PlainUsage
from ppaux_cli.output import emit
from ppaux_cli.report_options import ReportOptions, report_options

__all__ = ["app", "list_captures", "status"]

app = typer.Typer(
    cls=HelpOnBare,
    context_settings=CONTEXT_SETTINGS,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Capture from a running sglang: check the plugin, list what it wrote.",
)

DirOption = Annotated[
    str | None,
    typer.Option("--dir", metavar="DIR", help="Capture directory [default: $PPAUX_CAPTURE_DIR]."),
]


@app.command("status", cls=PlainUsage)
@report_options
def status(directory: DirOption = None, *, options: ReportOptions) -> None:
    """Whether the sglang plugin is installed and would capture; captures, bytes and skips."""
    # Imported here, not at module level: 'ppaux capture --help' must not pay for it.
    from ppaux.capture import CaptureDirError, status_report
    from ppaux_cli.wording import cli_words

    try:
        report = status_report(directory, words=cli_words)
    except CaptureDirError as exc:
        fail(f"{_named(directory)} {exc}")
    emit(report, options)


@app.command("list", cls=PlainUsage)
@report_options
def list_captures(directory: DirOption = None, *, options: ReportOptions) -> None:
    """The captures in the directory, oldest first, with the error each one recorded."""
    from ppaux.capture import ENV_DIR, CaptureDirError, list_report

    where = directory or os.environ.get(ENV_DIR, "").strip()
    if not where:
        fail(f"no capture directory: pass --dir or set {ENV_DIR}")
    try:
        report = list_report(where)
    except CaptureDirError as exc:
        fail(f"{_named(directory)} {exc}")
    emit(report, options)


def _named(directory: str | None) -> str:
    """How the directory was given, as an error line names it: the option, else the variable
    it defaults to."""
    from ppaux.capture import ENV_DIR

    return "--dir" if directory else ENV_DIR
