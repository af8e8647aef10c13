"""The exceptions ppaux raises on purpose, under one base, :class:`PpauxError`.

Every ppaux exception derives from :class:`PpauxError` and from the builtin its callers expect
(``ValueError`` for a bad value or file content, ``OSError`` for a file that cannot be opened,
``LookupError`` for a name that is not known, ``RuntimeError`` for a step that failed). The
errors shared by several areas are here; the others live beside the code that raises them
(``ppaux.report.config.ConfigError``, ``ppaux.replay.wire.WireError``, ...). Each message names
the input and the fault.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Self, TypeAlias

__all__ = [
    "TORCH_INSTALL_HINT",
    "DumpError",
    "ExecutableArchive",
    "LimitExceeded",
    "PathError",
    "PpauxError",
    "RaiseLimit",
    "ReadMismatch",
    "Setting",
    "SettingError",
    "Suggestion",
    "TorchMissingError",
    "TorchRefuses",
    "Wording",
    "keyword",
    "library_words",
    "limit_note",
    "nested_past_recursion",
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
    legacy'); ``text`` alone when there are none."""
    said = words(suggestions) if suggestions else ""
    if not said:
        return text
    return f"{text}; {said}" if text else said


class PpauxError(Exception):
    """Base of every exception ppaux raises on purpose.

    ``suggestions`` says what would get past it, as data (a setting to give, a limit to
    raise); ``str()`` says them in the library's words, and :meth:`worded` in a front end's.
    """

    suggestions: tuple[Suggestion, ...] = ()

    def suggest(self, *suggestions: Suggestion) -> Self:
        """This error, with ``suggestions`` added (returned, so that it can be raised at once)."""
        self.suggestions = (*self.suggestions, *suggestions)
        return self

    def bare(self) -> str:
        """The message alone, without the suggestions."""
        return super().__str__()

    def worded(self, words: Wording = library_words) -> str:
        """The message, then the suggestions as ``words`` says them."""
        return worded(self.bare(), self.suggestions, words)

    def __str__(self) -> str:
        return self.worded()


class SettingError(PpauxError, ValueError):
    """A setting that cannot be used: ``option`` names it as the library function that takes
    it does (the keyword argument, ``sglang_path``), ``value`` is what was given and ``reason``
    why; ``str()`` is 'sglang_path="<value>": <reason>' (the library's words) unless the raiser
    words it otherwise (``text``). A front end spells ``option`` its own way (the command line's
    ``--sglang-path``).

    Each area's setting errors derive from it (``ReplayConfigError``, ``ObserverConfigError``,
    ``TriageConfigError``), so a front end reports them all in one way.
    """

    def __init__(self, option: str, value: str, reason: str, text: str | None = None) -> None:
        super().__init__(f"{keyword(option, value)}: {reason}" if text is None else text)
        self.option = option
        self.value = value
        self.reason = reason


class PathError(PpauxError):
    """Base of the errors about one input path: ``str()`` is '<path>: <reason>'."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class DumpError(PathError, ValueError):
    """A file that cannot be read as a dump: ``str()`` is '<path>: <reason>'."""


def nested_past_recursion(path: str, max_depth: int, work: str) -> DumpError:
    """The error for a dump nested, within ``max_depth``, deeper than the code that must
    ``work`` on it (rebuild, compare, rewrite: code that follows a value's nesting as Python
    calls) can follow before Python's recursion limit. Reading is bounded by ``max_depth``, this
    by the interpreter, so a larger ``max_depth`` does not help, and the message says so."""
    return DumpError(
        path,
        f"nests too deeply to {work} (Python's recursion limit was reached before "
        f"max_depth={max_depth}; a larger max_depth does not help)",
    )


class LimitExceeded(DumpError):
    """A dump that goes over one of the reader's limits (see :class:`ppaux.limits.Limits`):
    ``limit`` is the limit's name and ``value`` its setting."""

    def __init__(self, path: str, limit: str, value: int, reason: str) -> None:
        super().__init__(path, f"{reason} {limit_note(limit, value)}")
        self.limit = limit
        self.value = value
        self.suggestions = (RaiseLimit(limit, value),)


class ReadMismatch(DumpError):
    """A file that torch.load could read differently from ppaux (another record, another
    directory, another format, code ppaux cannot see): refused as finding PP202, never guessed.
    ``code`` is the finding's code; the subclasses below refuse for a sharper reason.
    """

    code = "PP202"
    #: Globals outside the allowlist that the pickle names before torch would stop: torch
    #: imports (and may call) each before it refuses, so each is a security finding too.
    calls: tuple[str, ...] = ()


class ExecutableArchive(ReadMismatch):
    """A TorchScript archive: torch.load would hand it to torch.jit.load, which runs its code
    (finding PP203)."""

    code = "PP203"


class TorchRefuses(ReadMismatch):
    """A file torch.load refuses before unpickling it; the reason is torch's (finding PP117)."""

    code = "PP117"


#: How to get torch where it is missing. ppaux runs with the torch of the deployment it checks,
#: so the advice is to pin that version rather than to take whatever the index has.
TORCH_INSTALL_HINT = (
    "pip install torch==VERSION, with the torch VERSION your sglang deployment runs"
)


class TorchMissingError(PpauxError, ImportError):
    """A feature that needs torch, asked for where torch is not installed."""

    def __init__(self, feature: str) -> None:
        super().__init__(f"{feature} needs torch, which is not installed: {TORCH_INSTALL_HINT}")
        self.feature = feature
