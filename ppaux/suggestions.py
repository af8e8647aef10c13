"""What would get past a finding or an error, as data, and the library's words for it.

A suggestion is a :class:`Setting` to give (the keyword argument and its value) or a
:class:`RaiseLimit` (a field of :class:`ppaux.limits.Limits`). Findings and errors carry them as
data; each front end words them its own way: :func:`library_words` as keyword arguments (the
library's ``str()``, ``ppaux.testing``), the command line as its flags, through :func:`say`.
This module imports nothing of ppaux, so every layer may use it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeAlias

__all__ = [
    "RaiseLimit",
    "Setting",
    "Suggestion",
    "Wording",
    "keyword",
    "library_words",
    "limit_note",
    "say",
    "worded",
]


def limit_note(name: str, value: int | None = None) -> str:
    """The note that ends a message about limit ``name`` (at ``value``): which limit of
    :class:`ppaux.limits.Limits` stopped the read, by its own name, '(limit max_depth=100
    reached)'. The name is the same for every front end (the command line's ``--limit`` takes
    it); how to raise it is a :class:`RaiseLimit` suggestion, worded by each front end."""
    limit = name if value is None else f"{name}={value}"
    return f"(limit {limit} reached)"


@dataclass(frozen=True)
class Setting:
    """A suggestion to give a setting: ``name`` is the keyword argument of the library function
    that takes it (``sender``, ``sglang_path``), ``value`` the value to give, or None where the
    user must choose one, which ``what`` then describes ('an unpacked sglang tree or a wheel').

    Data, never words: each front end says it its own way (the library as a keyword argument,
    'sender="legacy"'; the command line as its flag, '--sender legacy')."""

    name: str
    value: str | None = None
    what: str = ""


@dataclass(frozen=True)
class RaiseLimit:
    """A suggestion to raise limit ``name`` of :class:`ppaux.limits.Limits` (now ``value``)."""

    name: str
    value: int | None = None


#: What a finding or an error may suggest doing, as data.
Suggestion: TypeAlias = Setting | RaiseLimit

#: A front end's way of saying suggestions: one phrase for all of them ('' for none).
Wording: TypeAlias = Callable[[Sequence[Suggestion]], str]


def keyword(name: str, value: str | None = None) -> str:
    """A setting as a library user writes it: 'transport="sglang"', or 'sglang_path=...'
    where no value is meant."""
    return f"{name}=..." if value is None else f'{name}="{value}"'


def library_words(suggestions: Sequence[Suggestion]) -> str:
    """``suggestions`` in the library's words: settings as keyword arguments ('try
    sender="legacy" or impl="both"'; 'give sglang_path an unpacked tree'), limits as fields of
    :class:`ppaux.limits.Limits` ('raise it with limits=Limits(max_depth=N)')."""
    return say(
        suggestions,
        lambda s: keyword(s.name, s.value),
        lambda s: s.name,
        lambda s: f"limits=Limits({s.name}=N)",
    )


def say(
    suggestions: Sequence[Suggestion],
    valued: Callable[[Setting], str],
    named: Callable[[Setting], str],
    limit: Callable[[RaiseLimit], str],
) -> str:
    """The phrase for ``suggestions``, with each front end's spelling of a setting with a
    value (``valued``), of a setting to be given a value (``named``) and of a limit: settings
    with values become one 'try A or B', each setting to be given one 'give NAME WHAT', each
    limit 'raise it with L'; the parts joined by '; '."""
    tries = [valued(s) for s in suggestions if isinstance(s, Setting) and s.value is not None]
    parts = ["try " + " or ".join(dict.fromkeys(tries))] if tries else []
    parts += [
        f"give {named(s)} {s.what}".rstrip()
        for s in suggestions
        if isinstance(s, Setting) and s.value is None
    ]
    parts += [f"raise it with {limit(s)}" for s in suggestions if isinstance(s, RaiseLimit)]
    return "; ".join(dict.fromkeys(parts))


def worded(text: str, suggestions: Sequence[Suggestion], words: Wording = library_words) -> str:
    """``text`` followed by ``suggestions`` as ``words`` says them ('...; try --sender
    legacy'); ``text`` alone when there are none. A sentence's full stop before them goes
    ('Make the value a tensor; try ...')."""
    said = words(suggestions) if suggestions else ""
    if not said:
        return text
    return f"{text.removesuffix('.')}; {said}" if text else said
