"""The report options, declared once for every command that writes a report.

Every such command takes the same options (``--format``, ``--output``, ``--fail-on``,
``--select``, ``--ignore``, ``--extend-select``, ``--extend-ignore``, ``--strict``, ``--config``,
``--root``, ``--statistics``, ``--findings-only``, ``--progress``, ``-q``, ``-v``). A command asks
for them with :func:`report_options` and receives them as one frozen :class:`ReportOptions`,
which it hands on to :func:`ppaux_cli.output.emit`, so the flags read and behave the same
everywhere. ``--output`` is checked against the command's inputs before it runs
(:mod:`ppaux_cli.output_paths`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from typing import Annotated, Any, TypeVar

import typer

from ppaux.report import FailOn, Format
from ppaux_cli.choices import choice_option
from ppaux_cli.output_paths import refuse_input_as_output

__all__ = [
    "ROOT_VERBOSITY",
    "ReportOptions",
    "complete_codes",
    "report_options",
    "report_options_reading",
]


def complete_codes(incomplete: str) -> list[tuple[str, str]]:
    """Shell completion of rule codes (any case), each with its name as the description."""
    from ppaux.report import RULES

    prefix = incomplete.strip().upper()
    head, _, last = prefix.rpartition(",")
    lead = f"{head}," if head else ""
    return [(lead + code, rule.name) for code, rule in RULES.items() if code.startswith(last)]


def _codes_option(flag: str, help: str) -> tuple[Any, None]:
    """A repeatable option of rule codes or prefixes, completed from the catalogue."""
    return (
        Annotated[
            list[str] | None,
            typer.Option(
                flag,
                metavar="CODE",
                autocompletion=complete_codes,
                show_default=False,
                help=help,
            ),
        ],
        None,
    )


def _format_help() -> str:
    return (
        "Output format: text for people, json for scripts (the ppaux.report/1 document), the "
        "others for CI and for sharing. --output-format is the same option."
    )


@dataclass(frozen=True)
class ReportOptions:
    """The report options of one run, as given on the command line.

    ``fail_on``, ``select``, ``ignore`` and ``strict`` are None when not given: the
    configuration's value, else the default, applies. ``progress`` is None for "only when
    stderr is a terminal".
    """

    format: Format = Format.TEXT
    output: str | None = None
    fail_on: FailOn | None = None
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    extend_ignore: tuple[str, ...] = ()
    strict: bool | None = None
    config: str | None = None
    root: str | None = None
    statistics: bool = False
    findings_only: bool = False
    progress: bool | None = None
    quiet: bool = False
    verbose: bool = False


_OPTIONS: dict[str, tuple[Any, Any]] = {
    "format": (
        Annotated[
            Format,
            choice_option(
                Format, "--format", "-f", "--output-format", default="text", help=_format_help()
            ),
        ],
        Format.TEXT,
    ),
    "output": (
        Annotated[
            str | None,
            typer.Option(
                "--output",
                "-o",
                metavar="FILE",
                help="Write the report to FILE instead of stdout ('-' is stdout).",
            ),
        ],
        None,
    ),
    "fail_on": (
        Annotated[
            FailOn | None,
            choice_option(
                FailOn,
                "--fail-on",
                default=None,
                help="Lowest severity that makes the exit code 1 [default: fail-on from the "
                "configuration, else error].",
            ),
        ],
        None,
    ),
    "select": _codes_option(
        "--select",
        "Report only these rule codes or code prefixes (PP1 is every PP1xx); repeat "
        "or separate with commas. Replaces select from the configuration.",
    ),
    "extend_select": _codes_option(
        "--extend-select",
        "Report these codes or prefixes as well, on top of select from the "
        "configuration or --select (and over a shorter ignore pattern).",
    ),
    "ignore": _codes_option(
        "--ignore",
        "Never report these rule codes or code prefixes; repeat or separate with "
        "commas. Replaces ignore from the configuration.",
    ),
    "extend_ignore": _codes_option(
        "--extend-ignore",
        "Never report these codes or prefixes either, on top of ignore from the "
        "configuration or --ignore.",
    ),
    "strict": (
        Annotated[
            bool | None,
            typer.Option(
                "--strict/--no-strict",
                show_default=False,
                help='Treat "could not check" findings (no tensor dict in a file, a transport '
                "capability that could not be read) as errors [default: strict from the "
                "configuration, else off].",
            ),
        ],
        None,
    ),
    "config": (
        Annotated[
            str | None,
            typer.Option(
                "--config",
                metavar="FILE",
                help="Read settings from FILE (a ppaux.toml or pyproject.toml) instead of "
                "searching the working directory and its parents.",
            ),
        ],
        None,
    ),
    "root": (
        Annotated[
            str | None,
            typer.Option(
                "--root",
                metavar="DIR",
                show_default=False,
                help="Repository root that github, gitlab and sarif paths are relative to (a "
                "file outside it keeps its absolute path) [default: the top of the git working "
                "tree that holds the working directory, else the working directory].",
            ),
        ],
        None,
    ),
    "statistics": (
        Annotated[
            bool,
            typer.Option(
                "--statistics",
                help="Print how many findings each rule code has instead of the findings "
                "(text or json); the exit code is unchanged.",
            ),
        ],
        False,
    ),
    "findings_only": (
        Annotated[
            bool,
            typer.Option(
                "--findings-only",
                help="Leave the tables out of text, markdown and html reports: findings and "
                "the summary only (what a pre-commit hook or a CI log needs).",
            ),
        ],
        False,
    ),
    "progress": (
        Annotated[
            bool | None,
            typer.Option(
                "--progress/--no-progress",
                show_default=False,
                help="Draw a progress bar on stderr [default: only when stderr is a terminal "
                "and the run is long].",
            ),
        ],
        None,
    ),
    "quiet": (
        Annotated[
            bool,
            typer.Option(
                "--quiet",
                "-q",
                help="Print the report and errors only: no progress bar, warnings or notes.",
            ),
        ],
        False,
    ),
    "verbose": (
        Annotated[
            bool,
            typer.Option(
                "--verbose",
                "-v",
                help="Also say on stderr which configuration file and gate applied.",
            ),
        ],
        False,
    ),
}

assert set(_OPTIONS) == {f.name for f in fields(ReportOptions)}


def _tuple(value: Iterable[str] | None) -> tuple[str, ...] | None:
    return tuple(value) if value is not None else None


#: ``ppaux -q`` and ``ppaux -v`` (before the command), set by the root callback on every run.
ROOT_VERBOSITY: dict[str, bool] = {"quiet": False, "verbose": False}


def _from_flags(values: dict[str, Any]) -> ReportOptions:
    from ppaux_cli.exits import fail

    values["quiet"] = values["quiet"] or ROOT_VERBOSITY["quiet"]
    values["verbose"] = values["verbose"] or ROOT_VERBOSITY["verbose"]
    if values["quiet"] and values["verbose"]:
        fail("--quiet and --verbose: give one or the other")
    return ReportOptions(
        **{
            **values,
            "select": _tuple(values["select"]),
            "ignore": _tuple(values["ignore"]),
            "extend_select": tuple(values["extend_select"] or ()),
            "extend_ignore": tuple(values["extend_ignore"] or ()),
        }
    )


F = TypeVar("F", bound=Callable[..., None])


def report_options(command: F, *, suffixes: tuple[str, ...] | None = None) -> F:
    """Give ``command`` the report options; it receives them as ``options: ReportOptions``.

    The command's own parameters come first in ``--help``, the report options after them.
    Before the command runs, ``--output`` is refused (exit 2, nothing written) when it is not a
    regular file or a new path, or when it is one of the command's inputs: any path its own
    parameters or ``--config`` name, and, inside a directory among them, any file whose name
    ends with one of ``suffixes`` (the files the command reads there; default: the dump files).
    """
    signature = inspect.signature(command, eval_str=True)
    own = [p for name, p in signature.parameters.items() if name != "options"]
    shared = [
        inspect.Parameter(
            name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
        )
        for name, (annotation, default) in _OPTIONS.items()
    ]

    @functools.wraps(command)
    def run(*args: object, **kwargs: object) -> None:
        values = {name: kwargs.pop(name) for name in _OPTIONS}
        options = _from_flags(values)
        inputs = [*args, *kwargs.values(), *([options.config] if options.config else [])]
        refuse_input_as_output(options.output, inputs, suffixes)
        command(*args, **kwargs, options=options)

    parameters = own + shared
    run.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in parameters}
    del run.__wrapped__  # Typer must see the new signature
    return run  # type: ignore[return-value]


def report_options_reading(suffixes: tuple[str, ...]) -> Callable[[F], F]:
    """:func:`report_options` for a command whose directories hold inputs named ``*suffix``
    rather than dumps (check-skew's ``*.json`` fingerprints)."""

    def decorate(command: F) -> F:
        return report_options(command, suffixes=suffixes)

    return decorate
