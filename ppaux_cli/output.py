"""Writing a report where the user asked and choosing the exit code: the CLI's only I/O helpers."""

from __future__ import annotations

import os
import sys
from typing import NoReturn

import typer

from ppaux.formats import Format, render
from ppaux.report import FailOn, Report, exit_code

__all__ = ["emit", "fail", "use_color"]


def use_color(stream) -> bool:
    """Colour only on a terminal and only when NO_COLOR is unset (https://no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def fail(message: str, code: int = 2) -> NoReturn:
    """Print one 'ppaux: error: ...' line on stderr and exit with ``code``."""
    sys.stderr.write(f"ppaux: error: {message}\n")
    raise typer.Exit(code)


def emit(report: Report, fmt: Format, fail_on: FailOn, output: str | None = None) -> NoReturn:
    """Write the report to stdout (or ``output``), problems to stderr, then exit 0, 1 or 2."""
    stream = sys.stdout
    text = render(report, fmt, color=fmt is Format.TEXT and output is None and use_color(stream),
                  width=_width())
    if output is None:
        stream.write(text)
        stream.flush()
    else:
        try:
            with open(output, "w", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as exc:
            fail(f"{output}: cannot write the report: {exc.strerror or exc}")
    for problem in report.problems:
        sys.stderr.write(f"ppaux: error: {problem}\n")
    raise typer.Exit(exit_code(report, fail_on))


def _width() -> int:
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns > 0:
        return columns
    return 100 if not sys.stdout.isatty() else os.get_terminal_size(sys.stdout.fileno()).columns
