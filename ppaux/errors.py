"""The exceptions ppaux raises on purpose, under one base, :class:`PpauxError`.

Every ppaux exception derives from :class:`PpauxError` and from the builtin its callers expect
(``ValueError`` for a bad value or file content, ``OSError`` for a file that cannot be opened,
``LookupError`` for a name that is not known, ``RuntimeError`` for a step that failed). The
errors shared by several areas are here; the others live beside the code that raises them
(``ppaux.report.config.ConfigError``, ``ppaux.replay.wire.WireError``, ...). Each message names
the input and the fault.
"""

from __future__ import annotations

import re
from typing import Self

from ppaux.suggestions import (
    RaiseLimit,
    Suggestion,
    Wording,
    keyword,
    library_words,
    limit_note,
    worded,
)
from ppaux.text import shown

__all__ = [
    "CAUSE_EDITED",
    "CAUSE_NEWER_TORCH",
    "CAUSE_SAVED_AS_IT_WAS",
    "TORCH_INSTALL_HINT",
    "DumpError",
    "ExecutableArchive",
    "LimitExceeded",
    "PathError",
    "PpauxError",
    "ReadMismatch",
    "SettingError",
    "TorchMissingError",
    "TorchRefuses",
    "command_on",
    "nested_past_recursion",
    "path_shown",
]


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


#: A path an error line names as it is: characters a shell reads as one word unquoted (letters
#: and digits of any script, ``_@%+=:,./~-``), or a name ppaux gives a stream (``<stdin>``).
_PLAIN_PATH = re.compile(r"[\w@%+=:,./~-]+|<[a-z]+>")


def path_shown(path: str) -> str:
    """``path`` as an error line names it: as it is where it is one plain word, else in single
    quotes as a POSIX shell reads them (a quote inside written ``'"'"'``), so that a path with
    spaces, a colon and a space, or quotes is unambiguous: ``'sp ace/x.json': ...``; one with a
    character a line cannot show in bash's ``$'...'`` (``$'a\\nb.pt'``), which pastes back as the
    same path."""
    if _PLAIN_PATH.fullmatch(path):
        return path
    if path.isprintable():
        return "'" + path.replace("'", "'\"'\"'") + "'"
    # A character a line cannot show (a newline, a control, a byte that was not UTF-8): bash's
    # $'...' quoting, whose escapes a shell reads back as the path itself.
    return "$'" + "".join(_escaped(c) for c in path) + "'"


def command_on(command: str, path: str) -> str:
    """``ppaux COMMAND PATH``, to paste: the path as :func:`path_shown` names it, or ``-`` (the
    same input again on stdin) for a stream's name such as ``<stdin>``."""
    if path.startswith("<") and path.endswith(">"):
        return f"ppaux {command} - (the same input on stdin)"
    return f"ppaux {command} {path_shown(path)}"


#: What bash's ``$'...'`` writes for the characters it has names for.
_ANSI_C = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escaped(char: str) -> str:
    """``char`` inside bash's ``$'...'``: itself where printable, else its escape; a byte that
    was not UTF-8 (decoded to a lone surrogate, as ``os.fsdecode`` does) as that byte."""
    if char in _ANSI_C:
        return _ANSI_C[char]
    if char.isprintable():
        return char
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x80:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


class PathError(PpauxError):
    """Base of the errors about one input path: ``str()`` is '<path>: <reason>', the path
    quoted where it is not one plain word (:func:`path_shown`), the reason shown escaped
    (:func:`ppaux.text.shown`: the library's rendering; ``reason`` holds it as built)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path_shown(path)}: {shown(reason, None)}")
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


class NotAsWritten(ReadMismatch):
    """A value torch.save never writes that ppaux does not read, where torch's reading could
    differ from any guess (finding PP118 at error): read no further, named where it stands."""

    code = "PP118"


#: The likely causes of a refusal (PP117), each given only where it can be true: a file
#: torch.save wrote is refused only where it saved a tensor whose ``__dict__`` holds a field
#: torch.load cannot set, or where a newer torch wrote a version past what this one reads.
CAUSE_EDITED = "The file was assembled, repaired or edited by a tool other than torch.save."
CAUSE_NEWER_TORCH = "It was written by a newer torch than the one reading it (a version past 10)."
CAUSE_SAVED_AS_IT_WAS = (
    "torch.save wrote it as it was: a tensor whose __dict__ holds a field torch.load cannot "
    "set (a read-only one, such as is_leaf or grad_fn), so torch.load fails on the file "
    "torch.save wrote."
)


class TorchRefuses(ReadMismatch):
    """A file torch.load refuses before unpickling it; the reason is torch's (finding PP117).
    ``causes`` are the finding's likely causes, those that can be true of this refusal."""

    code = "PP117"

    def __init__(self, path: str, reason: str, causes: tuple[str, ...] = (CAUSE_EDITED,)) -> None:
        super().__init__(path, reason)
        self.causes = causes


#: How to get torch where it is missing, as docs/install.md says: ppaux runs with the torch of
#: the deployment it checks, so the advice pins that version rather than taking whatever the
#: index has (on Linux a CUDA build of several gigabytes), and adds numpy, which torch does not
#: require but needs to convert an array.
TORCH_INSTALL_HINT = (
    "install numpy and the torch your sglang deployment runs: pip install numpy torch==X.Y.Z, "
    "X.Y.Z being the version 'pip show torch' names there (without a GPU, its CPU build: "
    "https://download.pytorch.org/whl/cpu)"
)


class TorchMissingError(PpauxError, ImportError):
    """A feature that needs torch, asked for where torch is not installed."""

    def __init__(self, feature: str) -> None:
        super().__init__(f"{feature} needs torch, which is not installed: {TORCH_INSTALL_HINT}")
        self.feature = feature
