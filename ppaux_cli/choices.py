"""Options that take one value of an enum (formats, thresholds, replay's modes): Typer's own
choice of the enum's values, any case (``case_sensitive=False``), so the accepted values always
come from the enum itself: a member added to :class:`~ppaux.report.formats.Format` is accepted,
listed in ``--help`` and completed without a change here. A bad value is answered in ppaux's
words, with the closest valid value, by the CLI's usage errors (:mod:`ppaux_cli.app`).
"""

from __future__ import annotations

import enum
from typing import Any

import typer

__all__ = ["choice_option", "choices_metavar"]


def choices_metavar(kind: type[enum.Enum]) -> str:
    """'[a|b|c]': the values of ``kind``, as Click shows a choice."""
    return "[" + "|".join(str(m.value) for m in kind) + "]"


#: The longest ``[a|b|c]`` shown beside an option's names. Click never wraps that column, so a
#: longer list (the eight report formats) would run past an 80-column terminal: it is named by
#: the option instead (``FORMAT``), and its values are listed in the help, which wraps.
CHOICES_SHOWN = 30


def choice_option(kind: type[enum.Enum], *names: str, help: str, default: str | None) -> Any:
    """A Typer option taking one value of ``kind`` in any case, shown as ``[a|b|c]`` (or, past
    :data:`CHOICES_SHOWN` characters, as the option's name with the values in the help) and
    completed from the enum; ``default`` is the value ``--help`` shows."""
    metavar = choices_metavar(kind)
    if len(metavar) > CHOICES_SHOWN:
        long_names = [name for name in names if name.startswith("--")]
        metavar = long_names[0].lstrip("-").upper().replace("-", "_")
        values = ", ".join(str(m.value) for m in kind)
        help = f"{help} One of: {values}."
    return typer.Option(
        *names,
        case_sensitive=False,
        metavar=metavar,
        show_default=False,
        help=f"{help}  [default: {default}]" if default is not None else help,
    )
