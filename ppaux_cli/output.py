"""Writing a report where the user asked and choosing the exit code: the CLI's only I/O helpers.

Every command ends in :func:`emit`, which reads the configuration, applies the gate (threshold,
``--select``/``--ignore``, ``--strict``), writes the report and exits; so every command filters,
formats and judges its findings the same way.
"""

from __future__ import annotations

import os
import sys
from typing import Iterable, NoReturn

import typer

from ppaux.report.formats import Format, render
from ppaux.report.document import FailOn, Report

__all__ = ["emit", "fail", "use_color", "write_text", "resolve_gate"]


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


def resolve_gate(
    fail_on: FailOn | None = None,
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    strict: bool | None = None,
    config: str | None = None,
):
    """The gate for this run: the configuration file (``config``, or the one found from the
    working directory upward) overridden by the flags given; exit 2 on a bad file or code."""
    from ppaux.report.config import ConfigError, discover_config, load_config
    from ppaux.report.selection import UnknownCodeError
    from ppaux.report.config import resolve_gate as _resolve

    try:
        settings = load_config(config) if config is not None else discover_config()
    except ConfigError as exc:
        fail(str(exc))
    try:
        return _resolve(settings, fail_on=fail_on, select=select, ignore=ignore, strict=strict)
    except UnknownCodeError as exc:
        option = "--select" if select is not None and _mentions(select, exc.pattern) else "--ignore"
        fail(f"{option}: {exc}")


def _mentions(values: Iterable[str], pattern: str) -> bool:
    return any(pattern.upper() == part.strip().upper() for v in values for part in v.split(","))


def write_text(text: str, output: str | None, what: str = "the output") -> None:
    """Write ``text`` to stdout, or to the file ``output``; a file that cannot be written is
    one error line naming it and exit 2."""
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        fail(f"{output}: cannot write {what}: {exc.strerror or exc}")


def emit(
    report: Report,
    fmt: Format,
    fail_on: FailOn | None = None,
    output: str | None = None,
    *,
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    strict: bool | None = None,
    config: str | None = None,
    root: str | None = None,
) -> NoReturn:
    """Apply the gate, write the report to stdout (or ``output``), problems to stderr, exit.

    ``fail_on``, ``select``, ``ignore`` and ``strict`` are the flags as given (None when not
    given: the configuration's value, else the default, applies). With ``--format github`` the
    Markdown summary is also appended to ``$GITHUB_STEP_SUMMARY`` when that is set. The formats
    a code host reads (github, gitlab, sarif) give paths relative to ``root`` (``--root``, else
    the git working tree's top).
    """
    gate = resolve_gate(fail_on, select, ignore, strict, config)
    report = gate.apply(report)
    problems = report.problems  # stderr names each input as the user gave it
    if fmt in _HOST_FORMATS:
        report = _rebase(report, root)
    stream = sys.stdout
    color = fmt is Format.TEXT and output is None and use_color(stream)
    text = render(report, fmt, color=color, width=_width(), fail_on=gate.fail_on)
    write_text(text, output, "the report")
    if fmt is Format.GITHUB:
        _append_step_summary(report, gate.fail_on)
    for problem in problems:
        sys.stderr.write(f"ppaux: error: {problem}\n")
    raise typer.Exit(gate.exit_code(report))


#: The formats whose paths a code host maps onto the files of a repository.
_HOST_FORMATS = frozenset({Format.GITHUB, Format.GITLAB, Format.SARIF})


def _rebase(report: Report, root: str | None) -> Report:
    from ppaux.report.paths import find_root, rebase_report

    cwd = os.getcwd()
    if root is not None:
        if not os.path.isdir(root):
            fail(f"--root {root}: not a directory")
        top = os.path.abspath(root)
    else:
        top = find_root(cwd) or cwd
    return rebase_report(report, top, cwd)


def _append_step_summary(report: Report, fail_on: FailOn) -> None:
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return
    from ppaux.report.formats.github import summary

    try:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(summary(report, fail_on))
    except OSError as exc:
        # The report itself is out already; a summary that cannot be written must not change
        # the verdict, so this is a warning, not an error.
        sys.stderr.write(
            f"ppaux: warning: {target}: cannot append the step summary: {exc.strerror or exc}\n"
        )


def _width() -> int:
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns > 0:
        return columns
    if not sys.stdout.isatty():
        return 100
    # A terminal that reports no size (a fresh pseudo-terminal says 0 columns) gets the default.
    import shutil

    return shutil.get_terminal_size(fallback=(100, 24)).columns or 100
