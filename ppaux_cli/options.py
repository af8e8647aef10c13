"""The command-line options several commands share that are not report options: ``--output``
for a command that writes one file, ``--limit`` and the pipeline stage (``--pp-rank``,
``--pp-size``). The report options are :mod:`ppaux_cli.report_options`; options that take an
enum's value are made by :mod:`ppaux_cli.choices`.
"""

from __future__ import annotations

from typing import Annotated

import typer

from ppaux.limits import Limits

__all__ = [
    "LimitOption",
    "OutputOption",
    "Seconds",
    "check_stage_options",
    "limits_from",
    "seconds",
]


class Seconds(float):
    """A number of seconds as the user typed it: a float that reads back (``str()``) as its
    text, so an error about it echoes ``0`` and ``1e400``, not ``0.0`` and ``inf``."""

    text: str

    def __new__(cls, text: str) -> Seconds:
        value = super().__new__(cls, text)
        value.text = text
        return value

    def __str__(self) -> str:
        return self.text


def seconds(text: str | float) -> float:
    """The parser of a ``--timeout`` option: the number as :class:`Seconds`, or typer's error
    line naming the value when it is no number."""
    if not isinstance(text, str):
        return text  # the default, not typed
    try:
        return Seconds(text.strip())
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not a number of seconds") from None


OutputOption = Annotated[
    str | None,
    typer.Option(
        "--output", "-o", metavar="FILE", help="Write to FILE instead of stdout ('-' is stdout)."
    ),
]

LimitOption = Annotated[
    list[str] | None,
    typer.Option(
        "--limit",
        metavar="NAME=N",
        help="Raise one of the limits this command reads, NAME=N (a wrong NAME lists them).",
    ),
]


def limits_from(
    texts: list[str] | None,
    base: Limits | None = None,
    *,
    used: tuple[str, ...] | None = None,
    command: str = "",
) -> Limits:
    """``base`` (the reader's limits when None) with each --limit NAME=N applied; a bad one is a
    one-line exit 2, and so is one ``command`` does not use when ``used`` names those it does."""
    from ppaux.limits import parse_limits, refuse_unused
    from ppaux_cli.exits import fail

    try:
        limits = parse_limits(texts or (), Limits() if base is None else base)
        if used is not None:
            refuse_unused(texts or (), used, command)
    except ValueError as exc:
        fail(f"--limit: {exc}")
    return limits


def check_stage_options(pp_rank: int | None, pp_size: int | None) -> None:
    """Refuse a pipeline size below 1 or a stage outside it, with one error line."""
    from ppaux_cli.exits import fail

    if pp_size is not None and pp_size < 1:
        fail(f"--pp-size: must be at least 1, not {pp_size}")
    if pp_rank is not None and pp_rank < 0:
        fail(f"--pp-rank: must not be negative, not {pp_rank}")
    if pp_rank is not None and pp_size is not None and pp_rank >= pp_size:
        fail(f"--pp-rank: {pp_rank} is not a stage of a {pp_size}-stage pipeline")
