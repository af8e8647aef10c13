"""Options that take one value of an enum (formats, thresholds, replay's modes), parsed here
rather than by Typer, so that a bad value is answered in ppaux's words with the closest valid
value, and the accepted values always come from the enum itself: a member added to
:class:`~ppaux.report.formats.Format` is accepted, listed in ``--help`` and completed without a
change here.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

import typer

from ppaux_cli.closest import not_one_of

__all__ = ["choice_option", "choice_parser", "choices_metavar"]


def choice_parser(kind: type[enum.Enum]) -> Callable[[Any], Any]:
    """A Typer ``parser`` that checks a value (any case) against the values of ``kind``.

    It returns the member's value; Typer then turns that into the member, as it does for any
    enum-typed parameter.
    """

    def parse(value: object) -> Any:
        if isinstance(value, kind):
            return value.value
        text = str(value)
        for member in kind:
            if str(member.value) == text.lower():
                return member.value
        raise typer.BadParameter(not_one_of(text, [str(m.value) for m in kind]))

    parse.__name__ = kind.__name__
    return parse


def choices_metavar(kind: type[enum.Enum]) -> str:
    """'[a|b|c]': the values of ``kind``, as Click shows a choice."""
    return "[" + "|".join(str(m.value) for m in kind) + "]"


def _completer(kind: type[enum.Enum]) -> Callable[[str], list[str]]:
    def complete(incomplete: str) -> list[str]:
        return [str(m.value) for m in kind if str(m.value).startswith(incomplete.lower())]

    return complete


#: The longest ``[a|b|c]`` shown beside an option's names. Click never wraps that column, so a
#: longer list (the eight report formats) would run past an 80-column terminal: it is named by
#: the option instead (``FORMAT``), and its values are listed in the help, which wraps.
CHOICES_SHOWN = 30


def choice_option(kind: type[enum.Enum], *names: str, help: str, default: str | None) -> Any:
    """A Typer option taking one value of ``kind``: parsed by :func:`choice_parser`, shown as
    ``[a|b|c]`` (or, past :data:`CHOICES_SHOWN` characters, as the option's name with the values
    in the help), completed from the enum; ``default`` is the value ``--help`` shows."""
    metavar = choices_metavar(kind)
    if len(metavar) > CHOICES_SHOWN:
        long_names = [name for name in names if name.startswith("--")]
        metavar = long_names[0].lstrip("-").upper().replace("-", "_")
        values = ", ".join(str(m.value) for m in kind)
        help = f"{help} One of: {values}."
    return typer.Option(
        *names,
        parser=choice_parser(kind),
        metavar=metavar,
        autocompletion=_completer(kind),
        show_default=False,
        help=f"{help}  [default: {default}]" if default is not None else help,
    )
