"""The options every report-producing command shares, as ``Annotated`` aliases.

A command lists them in its signature (``format: FormatOption = Format.TEXT``, ...) and passes
them on to :func:`ppaux_cli.output.emit`, so the flags read and behave the same everywhere.
Settings that the configuration file can also give (``--fail-on``, ``--select``, ``--ignore``,
``--strict``) default to None, meaning "not given on the command line".
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ppaux.report.formats import Format
from ppaux.report.document import FailOn

__all__ = [
    "FormatOption",
    "OutputOption",
    "FailOnOption",
    "SelectOption",
    "IgnoreOption",
    "StrictOption",
    "ConfigOption",
    "RootOption",
]

FormatOption = Annotated[
    Format,
    typer.Option(
        "--format", "-f",
        help="Output format: text for people, json (ppaux.report/1), github (annotations), "
        "sarif (code scanning), junit (test reports), gitlab (code quality), markdown (an "
        "issue or incident thread), html (one self-contained page).",
    ),
]

OutputOption = Annotated[
    Optional[str],
    typer.Option("--output", "-o", metavar="FILE", help="Write the report to FILE instead of stdout."),
]

FailOnOption = Annotated[
    Optional[FailOn],
    typer.Option(
        "--fail-on",
        help="Lowest severity that makes the exit code 1 [default: fail-on from the "
        "configuration, else error].",
        show_default=False,
    ),
]

SelectOption = Annotated[
    Optional[list[str]],
    typer.Option(
        "--select",
        metavar="CODE",
        help="Report only these rule codes or code prefixes (PP1 is every PP1xx); repeat or "
        "separate with commas. Replaces select from the configuration.",
        show_default=False,
    ),
]

IgnoreOption = Annotated[
    Optional[list[str]],
    typer.Option(
        "--ignore",
        metavar="CODE",
        help="Never report these rule codes or code prefixes; repeat or separate with commas. "
        "Replaces ignore from the configuration.",
        show_default=False,
    ),
]

StrictOption = Annotated[
    Optional[bool],
    typer.Option(
        "--strict/--no-strict",
        help="Treat \"could not check\" findings (no tensor dict in a file, a transport "
        "capability that could not be read) as errors [default: strict from the "
        "configuration, else off].",
        show_default=False,
    ),
]

ConfigOption = Annotated[
    Optional[str],
    typer.Option(
        "--config",
        metavar="FILE",
        help="Read settings from FILE (a ppaux.toml or pyproject.toml) instead of searching "
        "the working directory and its parents.",
    ),
]

RootOption = Annotated[
    Optional[str],
    typer.Option(
        "--root",
        metavar="DIR",
        help="Repository root that github, gitlab and sarif paths are relative to (a file "
        "outside it keeps its absolute path) [default: the top of the git working tree that "
        "holds the working directory, else the working directory].",
        show_default=False,
    ),
]

LimitOption = Annotated[
    Optional[list[str]],
    typer.Option("--limit", metavar="NAME=N",
                 help="Raise a reader limit, NAME=N (for example max_depth=500)."),
]


def limits_from(texts: "list[str] | None"):
    """The reader's limits with each --limit NAME=N applied; a bad one is a one-line exit 2."""
    from ppaux.limits import parse_limits
    from ppaux_cli.output import fail

    try:
        return parse_limits(texts or ())
    except ValueError as exc:
        fail(f"--limit: {exc}")
