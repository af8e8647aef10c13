"""Writing a report where the user asked and choosing the exit code: the CLI's only I/O helpers.

Every command ends in :func:`emit`, which reads the configuration, applies the gate (threshold,
``--select``/``--ignore``, ``--strict``), writes the report and exits; so every command filters,
formats and judges its findings the same way. ``-`` as ``--output`` is stdout.

Colour follows the usual conventions, in this order: ``NO_COLOR`` set and not empty means no
colour (https://no-color.org); ``FORCE_COLOR`` set and not empty means colour even in a pipe
(https://force-color.org); ``TERM=dumb`` means no colour; otherwise colour only on a terminal.
"""

from __future__ import annotations

import os
import select
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn

import typer

from ppaux.errors import path_shown
from ppaux.report import FailOn, Format, InputProblem, Report, render
from ppaux_cli.exits import fail
from ppaux_cli.output_paths import (
    Identity,
    check_output_path,
    output_error,
    output_identity,
    write_fresh,
)
from ppaux_cli.wording import cli_words

if TYPE_CHECKING:
    from ppaux.report import Gate
    from ppaux_cli.report_options import ReportOptions

__all__ = [
    "Settled",
    "emit",
    "is_terminal",
    "name_problems",
    "resolve_gate",
    "settle",
    "stand_in_for_closed_stdio",
    "text_width",
    "use_color",
    "waiting_on_stdin",
    "warn",
    "write_stdout",
    "write_text",
]

#: The name stdin and stdout go by: as an input path, as --output.
STDIO = "-"


def is_terminal(stream: object) -> bool:
    """True when ``stream`` is a terminal that can redraw (not ``TERM=dumb``)."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and os.environ.get("TERM") != "dumb"


def use_color(stream: object) -> bool:
    """Whether to colour ``stream``: NO_COLOR, then FORCE_COLOR, then TERM=dumb, then a tty."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return is_terminal(stream)


def waiting_on_stdin(what: str, example: str, quiet: bool = False) -> None:
    """Say on stderr that ppaux waits for ``what`` on stdin, when stdin is a terminal (a ``-``
    typed by mistake would otherwise look like a hang); ``example`` shows the usual pipe."""
    if quiet or not is_terminal(sys.stdin):
        return
    sys.stderr.write(
        f"ppaux: waiting for {what} on stdin (a terminal); pipe one in, as in '{example}', "
        "or press Ctrl-C\n"
    )
    sys.stderr.flush()


def warn(message: str, quiet: bool = False) -> None:
    """Print one 'ppaux: warning: ...' line on stderr, unless ``quiet``."""
    if not quiet:
        from ppaux.text import shown

        sys.stderr.write(f"ppaux: warning: {shown(message, None)}\n")


def resolve_gate(
    fail_on: FailOn | None = None,
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    strict: bool | None = None,
    config: str | None = None,
    extend_select: Iterable[str] = (),
    extend_ignore: Iterable[str] = (),
    verbose: bool = False,
) -> Gate:
    """The gate for this run: the configuration file (``config``, or the one found from the
    working directory upward) overridden by the flags given; exit 2 on a bad file or code.
    With ``verbose``, one note on stderr says which file and gate applied."""
    from ppaux.report import ConfigError, UnknownCodeError, discover_config, load_config
    from ppaux.report import resolve_gate as _resolve

    try:
        settings = load_config(config) if config is not None else discover_config()
    except ConfigError as exc:
        # a file the user named: the option is named with it
        fail(f"--config {exc}" if config is not None else str(exc))
    try:
        gate = _resolve(
            settings,
            fail_on=fail_on,
            select=select,
            ignore=ignore,
            strict=strict,
            extend_select=extend_select,
            extend_ignore=extend_ignore,
        )
    except UnknownCodeError as exc:
        given = (
            ("--select", select),
            ("--ignore", ignore),
            ("--extend-select", extend_select),
            ("--extend-ignore", extend_ignore),
        )
        option = next(
            (
                name
                for name, values in given
                if values is not None and _mentions(values, exc.pattern)
            ),
            "--ignore",
        )
        from ppaux.report import RULES
        from ppaux_cli.closest import did_you_mean

        fail(f"{option}: {exc}{did_you_mean(exc.pattern, RULES)}")
    if verbose:
        where = settings.path or "none found"
        chosen = gate.selection
        sys.stderr.write(
            f"ppaux: note: configuration: {where}; fail-on {gate.fail_on.value}; "
            f"select {','.join(chosen.select) or 'all'}"
            f"{' + ' + ','.join(chosen.extend) if chosen.extend else ''}; "
            f"ignore {','.join(chosen.ignore) or 'none'}; strict {'on' if gate.strict else 'off'}\n"
        )
    return gate


def _mentions(values: Iterable[str], pattern: str) -> bool:
    return any(pattern.upper() == part.strip().upper() for v in values for part in v.split(","))


def _write_all(data: bytes | str) -> None:
    # A pipe's file description is shared with whatever else holds it (a parent, a library that
    # went non-blocking on it, perhaps from another thread while the report is being written):
    # non-blocking, a report past the pipe's 64 KiB would be cut short when the reader lags. The
    # bytes go to the descriptor itself, and a full pipe is waited for, whatever the flag.
    stream = sys.stdout
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # a test runner's buffer has no descriptor
        if isinstance(data, bytes):
            stream.buffer.write(data)
        else:
            stream.write(data)
        stream.flush()
        return
    stream.flush()
    if not os.get_blocking(fd):
        os.set_blocking(fd, True)
    if isinstance(data, str):
        data = data.encode(stream.encoding or "utf-8", stream.errors or "strict")
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            select.select([], [fd], [])
            continue
        view = view[written:]


#: Whether this process started with its stdout closed ('>&-'); :func:`stand_in_for_closed_stdio`
#: then put os.devnull in its place, so that a report given to --output is still written.
_STARTED = {"stdout_closed": False}


def stand_in_for_closed_stdio() -> None:
    """Give a process started with stdin, stdout or stderr closed (``<&-``, ``>&-``,
    ``2>&-``) os.devnull in their place: stdin reads as empty, stderr's lines go nowhere and the
    exit codes keep their meaning, and stdout is refused only where something is written to it
    (:func:`write_stdout`), not where a command merely asks whether it is a terminal."""
    if sys.stdin is None:
        sys.stdin = open(os.devnull, encoding="utf-8")
    if sys.stdout is None:
        _STARTED["stdout_closed"] = True
        sys.stdout = open(os.devnull, "w", encoding="utf-8")
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")


def write_stdout(data: bytes | str, what: str = "the output") -> None:
    """Write ``data`` (text in stdout's encoding, or bytes as they are) to stdout whole, also to
    a pipe something made non-blocking. A stdout that is closed or cannot take it (a full disk)
    is one error line naming ``what``, exit 2; a reader that left (``| head``) is left to Click,
    which ends the run quietly with exit 1."""
    if sys.stdout is None or _STARTED["stdout_closed"]:  # started with it closed ('>&-')
        fail(f"cannot write {what}: stdout is closed; give a file with --output")
    try:
        _write_all(data)
    except BrokenPipeError:
        raise
    except OSError as exc:
        fail(f"stdout: cannot write {what}: {exc.strerror or exc}")


def write_text(
    text: str, output: str | None, what: str = "the output", fresh: bool = False
) -> None:
    """Write ``text`` to stdout, or to the file ``output`` (``-`` is stdout); an output that is
    not a regular file, a new path or the null device, or that cannot be written, is one error
    line naming ``--output`` and the path, and exit 2 (the wording of every command's output).
    ``fresh``: written as a file made now (:func:`~ppaux_cli.output_paths.write_fresh`), where
    code ppaux does not trust ran before (``check-observer``'s target)."""
    if output is None or output == STDIO:
        write_stdout(text, what)
        return
    check_output_path(output)
    try:
        if fresh:
            write_fresh(output, text)
            return
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        fail(output_error(output, exc))


def _only_problems(report: Report) -> bool:
    """Whether no input could be used: the error lines on stderr are the whole answer, and an
    empty table and a summary on stdout would only bury them."""
    return (
        bool(report.problems)
        and not report.findings
        and not report.notes
        and all(not table.rows for table in report.tables)
    )


@dataclass(frozen=True)
class Settled:
    """What a run's report takes from the user's files, read once before code that ppaux does
    not trust runs (``check-observer``'s target), so that code cannot change it: the gate (the
    configuration file), the folder that host formats give paths relative to, and
    ``$GITHUB_STEP_SUMMARY`` with what it was then (see :func:`output_identity`)."""

    gate: Gate
    top: str | None
    summary: str | None
    summary_before: Identity | None
    #: The report is written as a file made now (code ppaux does not trust ran meanwhile).
    fresh: bool = False


def settle(options: ReportOptions) -> Settled:
    """Read the configuration, the root and the step summary's path now (exit 2 on a bad
    configuration file, code or ``--root``)."""
    gate = resolve_gate(
        options.fail_on,
        options.select,
        options.ignore,
        options.strict,
        options.config,
        options.extend_select,
        options.extend_ignore,
        verbose=options.verbose,
    )
    top = None
    if options.format in _HOST_FORMATS and not options.statistics:
        top = _top(options.root)
    summary = os.environ.get("GITHUB_STEP_SUMMARY") or None
    return Settled(gate, top, summary, output_identity(summary) if summary else None)


def emit(report: Report, options: ReportOptions, settled: Settled | None = None) -> NoReturn:
    """Apply the gate, write the report to stdout (or ``--output``), problems to stderr, exit.

    The flags not given (None) take the configuration's value, else the default. With
    ``--format github`` the Markdown summary is also appended to ``$GITHUB_STEP_SUMMARY`` when
    that is set. With ``--statistics`` the per-code counts take the report's place. The formats
    a code host reads (github, gitlab, sarif) give paths relative to ``--root`` (else the git
    working tree's top).
    """
    settled = settled if settled is not None else settle(options)
    gate = settled.gate
    report = gate.apply(report)
    fmt = options.format
    problems = report.problems  # stderr names each input as the user gave it
    if fmt in _HOST_FORMATS and not options.statistics:
        report = _rebase(report, settled.top)
    if options.findings_only and fmt in _READ_FORMATS:
        import dataclasses

        report = dataclasses.replace(report, tables=())
    to_stdout = options.output is None or options.output == STDIO
    if options.statistics:
        text = _statistics(report, fmt)
    else:
        color = fmt == Format.TEXT and to_stdout and use_color(sys.stdout)
        text = render(
            report, fmt, color=color, width=text_width(), fail_on=gate.fail_on, words=cli_words
        )
    try:
        if not (fmt == Format.TEXT and to_stdout and _only_problems(report)):
            write_text(text, options.output, "the report", settled.fresh)
        if fmt == Format.GITHUB and not options.statistics:
            _append_step_summary(report, gate.fail_on, settled, options.quiet)
    finally:  # the inputs that could not be used are named even where the report could not be
        name_problems(problems)
    raise typer.Exit(gate.exit_code(report))


def name_problems(problems: Iterable[InputProblem]) -> None:
    """One ``ppaux: error:`` line on stderr for each problem (a line said twice, once)."""
    from ppaux.text import shown

    said = set()
    for problem in problems:  # the path as given, shown escaped: it may hold any character
        line = problem.worded(cli_words)  # its suggestions as this command line's flags
        if line not in said:  # a file given twice (diff a.pt a.pt) is named once
            said.add(line)
            sys.stderr.write(f"ppaux: error: {shown(line, None)}\n")


#: The formats a person reads, whose tables ``--findings-only`` leaves out.
_READ_FORMATS = frozenset({Format.TEXT, Format.MARKDOWN, Format.HTML})

#: The formats whose paths a code host maps onto the files of a repository.
_HOST_FORMATS = frozenset({Format.GITHUB, Format.GITLAB, Format.SARIF})


def _top(root: str | None) -> str:
    """The folder host formats give paths relative to: ``--root``, else the git working
    tree's top, else the working directory."""
    from ppaux.report import find_root

    if root is not None:
        if not os.path.isdir(root):
            fail(f"--root {path_shown(root)}: not a directory")
        return os.path.abspath(root)
    cwd = os.getcwd()
    return find_root(cwd) or cwd


def _rebase(report: Report, top: str | None) -> Report:
    from ppaux.report import rebase_report

    return rebase_report(report, top if top is not None else _top(None), os.getcwd())


def _statistics(report: Report, fmt: Format) -> str:
    from ppaux.report import statistics_json, statistics_text

    if fmt == Format.TEXT:
        return statistics_text(report)
    if fmt == Format.JSON:
        return statistics_json(report)
    fail(f"--statistics: only with --format text or json, not {fmt.value}")


def _append_step_summary(
    report: Report, fail_on: FailOn, settled: Settled, quiet: bool = False
) -> None:
    target = settled.summary
    if not target:
        return
    from ppaux.report import step_summary

    if output_identity(target) != settled.summary_before:
        # made a link, replaced or moved by code that ran meanwhile: the summary would go where
        # the workflow did not say
        warn(
            f"{target}: changed since the run began (replaced, moved, linked or created by "
            "another process); the step summary was not appended",
            quiet,
        )
        return
    try:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(step_summary(report, fail_on))
    except OSError as exc:
        # The report itself is out already; a summary that cannot be written must not change
        # the verdict, so this is a warning, not an error.
        warn(f"{target}: cannot append the step summary: {exc.strerror or exc}", quiet)


#: The width of text written to a pipe or a file, or to a terminal that says none.
DEFAULT_WIDTH = 80


def text_width() -> int:
    """The width text output wraps at: ``COLUMNS`` when set to a number, else the terminal's,
    else :data:`DEFAULT_WIDTH` (a pipe, a file, a CI log)."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns > 0:
        return columns
    if not sys.stdout.isatty():
        return DEFAULT_WIDTH
    # A terminal that reports no size (a fresh pseudo-terminal says 0 columns) gets the default.
    import shutil

    size = shutil.get_terminal_size(fallback=(DEFAULT_WIDTH, 24)).columns
    return size or DEFAULT_WIDTH
