"""Cut a Python source into logical lines as CPython's tokenizer does, without parsing it.

:func:`scanned` finds them with a scan of strings, comments, brackets and line ends (a few times
faster than :mod:`tokenize`, and None where it is not sure); :func:`logical_lines` with
:mod:`tokenize`, saying where and why the tokenizer stopped, in CPython's words. Both refuse a
logical line longer than a part of :data:`PART_BYTES` that holds more than
:data:`MAX_STATEMENT_TOKENS` tokens (:class:`StatementTooLarge`): no part can be cut below one,
and the parser's tree of such a line costs hundreds of megabytes. :func:`decoded` reads a
file's bytes as CPython's parser does. Used by :mod:`ppaux.sglang_source.bounded_parse`.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import NamedTuple

from ppaux.errors import PpauxError

__all__ = [
    "MAX_STATEMENT_TOKENS",
    "PART_BYTES",
    "Logical",
    "StatementTooLarge",
    "Unsplittable",
    "decoded",
    "indentation_error",
    "logical_lines",
    "scanned",
]

#: The most text of a file parsed at once (``bounded_parse.CHUNK_BYTES``): a logical line
#: longer than this cannot be cut, and has its tokens counted.
PART_BYTES = 32 * 1024
#: Most text read to word the error of a text that ends inside a bracket or a string.
_TAIL_BYTES = PART_BYTES
#: Most tokens in one logical line longer than :data:`PART_BYTES` (which cannot be cut): the
#: parser's tree of a 1 MB literal of 600,000 tokens takes it past 1 GB; sglang's longest
#: statements hold a few thousand.
MAX_STATEMENT_TOKENS = 50_000

_SKIPPED = frozenset({tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT})
_OPENING = {"(": ")", "[": "]", "{": "}"}
_CLOSING = {")": "(", "]": "[", "}": "{"}


class Unsplittable(PpauxError):
    """A statement starts on a line holding only a backslash: the file is parsed whole."""


class StatementTooLarge(PpauxError, ValueError):
    """One logical line holds more than :data:`MAX_STATEMENT_TOKENS` tokens: it is not parsed,
    as its syntax tree alone would cost the parser hundreds of megabytes."""

    def __init__(self, line: int, limit: int) -> None:
        self.line = line
        self.limit = limit
        super().__init__(
            f"line {line}: one statement of more than {limit:,} tokens,"
            " more than sglang's sources ever hold, not parsed"
            f" (limit max_statement_tokens={limit} reached)"
        )


class Logical(NamedTuple):
    """One logical line: its first and last physical line (1-based), depth and first word (a
    tuple: a file holds hundreds of thousands, made at a third of a frozen dataclass's cost)."""

    start: int
    end: int
    depth: int
    word: str


_SCAN = re.compile(r"""#[^\n]*|\\\n|'''|\"\"\"|'|"|[(\[{]|[)\]}]|\n""")
_STRING_END = {
    "'''": re.compile(r"(?:[^\\]|\\.)*?'''", re.S),
    '"""': re.compile(r'(?:[^\\]|\\.)*?"""', re.S),
    "'": re.compile(r"(?:[^\\\n']|\\.)*'", re.S),
    '"': re.compile(r'(?:[^\\\n"]|\\.)*"', re.S),
}
_STRING_END_ALL = tuple(
    re.compile(re.escape(quote) + pattern.pattern) for quote, pattern in _STRING_END.items()
)
_FIRST = re.compile(r"([ \t\f]*)([A-Za-z_]\w*|[^\s#]|#|\n|$)")


_TOKEN = re.compile(
    "[rRbBuUfF]{0,2}(?:"
    + "|".join(pattern.pattern for pattern in _STRING_END_ALL)
    + r")|\w+|#[^\n]*|\\\n|\S",
    re.S,
)


def _check_tokens(text: str, begin: int, end: int, row: int, limit: int) -> None:
    """Raise :class:`StatementTooLarge` when ``text[begin:end]``, one logical line starting on
    ``row``, holds more than ``limit`` tokens (strings, names and numbers count one each, every
    other character one, and each brace of an f-string one more: see :func:`_fstring_braces`):
    stops counting there, so it costs at most that many matches."""
    if end - begin <= PART_BYTES:
        return
    count = 0
    for match in _TOKEN.finditer(text, begin, end):
        count += 1 + _fstring_braces(match.group())
        if count > limit:
            raise StatementTooLarge(row, limit)


_FSTRING_PREFIX = re.compile(r"[rRbBuU]?[fF][rR]?['\"]")


def _fstring_braces(token: str) -> int:
    """Braces of ``token`` where it is an f-string literal, else 0. CPython parses each
    replacement field of an f-string apart, at a cost that grows with the square of their
    number (a 300 KB literal of ``{a}`` fields takes it 6 s, a 1 MB one over a minute), so each
    brace counts as a token, as the tokenizer of Python 3.12 makes it one."""
    if _FSTRING_PREFIX.match(token) is None:
        return 0
    return token.count("{") + token.count("}")


@lru_cache(maxsize=256)  # a file repeats a few indentations on most of its lines
def _width(indentation: str) -> tuple[int, int]:
    """An indentation's columns as CPython's tokenizer counts them: a tab to the next multiple
    of 8, and a tab as one column (two measures that must order indentations alike), from the
    last form feed."""
    columns = alternative = 0
    for char in indentation.rpartition("\f")[2]:
        columns = (columns // 8 + 1) * 8 if char == "\t" else columns + 1
        alternative += 1
    return columns, alternative


#: The most indentation levels CPython's tokenizer keeps (its ``MAXINDENT`` less the first).
_MAX_INDENT_LEVELS = 99


def indentation_error(lines: Sequence[str], starts: Iterable[int]) -> SyntaxError | None:
    """The first indentation error CPython's tokenizer meets at the start of a logical line
    (tabs and spaces that order two indentations differently, a dedent to no outer level, more
    than :data:`_MAX_INDENT_LEVELS` levels), as the parser raises it; None if there is none.
    ``starts`` are the logical lines' first rows, in order (a blank or comment line is passed
    over, as the tokenizer passes it).

    :mod:`tokenize` raises only the second: the first and the last pass it silently. CPython's
    tokenizer stops at any of them, and when it meets one while it looks past a parser's error,
    the parser's error stands.
    """
    widths = [(0, 0)]
    for start in starts:
        text = lines[start - 1] if 0 < start <= len(lines) else ""
        if text.lstrip(" \t\f")[:1] in ("", "#", "\n"):
            continue
        width = _width(text[: len(text) - len(text.lstrip(" \t\f"))])
        error: tuple[type[SyntaxError], str] | None = None
        if width[0] > widths[-1][0]:
            if len(widths) > _MAX_INDENT_LEVELS:
                error = (IndentationError, "too many levels of indentation")
            elif width[1] <= widths[-1][1]:
                error = (TabError, _TAB_ERROR)
            else:
                widths.append(width)
        else:
            while len(widths) > 1 and width[0] < widths[-1][0]:
                widths.pop()
            if width[0] != widths[-1][0]:
                error = (IndentationError, "unindent does not match any outer indentation level")
            elif width[1] != widths[-1][1]:
                error = (TabError, _TAB_ERROR)
        if error is not None:
            kind, message = error
            return kind(message, ("<unknown>", start, len(text), text))
    return None


_TAB_ERROR = "inconsistent use of tabs and spaces in indentation"


def scanned(text: str, max_tokens: int = MAX_STATEMENT_TOKENS) -> list[Logical] | None:
    """Logical lines found by scanning only for strings, comments, brackets and line ends: a
    few times faster than :mod:`tokenize`, and None where it is not sure (an indentation whose
    tabs and spaces CPython reads as inconsistent, or that matches no outer one, a string or
    bracket left open, a backslash continuing past the file's end, a logical line over
    :data:`PART_BYTES`, more indentation levels than CPython's tokenizer keeps)."""
    out: list[Logical] = []
    widths = [(0, 0)]
    row, pos, size = 1, 0, len(text)
    while pos < size:
        first = _FIRST.match(text, pos)
        if first is None:  # a character the tokenizer may take for whitespace
            return None
        word = first.group(2)
        if word == "\\":  # a line of only a backslash: the statement's word is on the next
            return None
        if word in ("#", "\n", ""):  # a blank or comment line
            newline = text.find("\n", pos)
            pos = size if newline < 0 else newline + 1
            row += 1
            continue
        width = _width(first.group(1))
        if width[0] > widths[-1][0]:
            if width[1] <= widths[-1][1] or len(widths) > _MAX_INDENT_LEVELS:
                return None  # tabs and spaces that tell different depths: the tokenizer's call
            widths.append(width)
        while width[0] < widths[-1][0]:
            widths.pop()
        if width != widths[-1]:
            return None
        start, begin, brackets = row, pos, 0
        pos = first.end(1)
        while True:
            match = _SCAN.search(text, pos)
            if match is None:
                pos = size
                break
            token, pos = match.group(), match.end()
            if token == "\n":
                if brackets == 0:
                    break
                row += 1
            elif token in _STRING_END:
                end = _STRING_END[token].match(text, pos)
                if end is None:
                    return None
                row += text.count("\n", pos, end.end())
                pos = end.end()
            elif token in "([{":
                brackets += 1
            elif token in ")]}":
                brackets -= 1
                if brackets < 0:
                    return None
            elif token[0] == "\\":
                if pos == size:  # continued past the file's end: the tokenizer decides
                    return None
                row += 1
        if brackets:
            return None
        if pos - begin > PART_BYTES:
            _check_tokens(text, begin, pos, start, max_tokens)
            return None
        out.append(Logical(start, row, len(widths) - 1, word))
        row += 1
    return out


_UTF8 = frozenset({"utf-8", "utf-8-sig"})


def decoded(data: bytes, filename: str) -> tuple[str, bool]:
    """The text of a file's bytes, as CPython's parser reads them, and whether it holds bytes
    that are not UTF-8 (kept as lone surrogates; see :attr:`_Checker.raw`). A bad coding
    cookie raises the parser's own error: its two first lines are all it reads for it. Where
    the cookie names another encoding than UTF-8, the parser decodes the whole file first, and
    an undecodable byte is its error (at line 0)."""
    # CPython looks for the cookie in the first two lines once their ends are made LF (a file
    # of CR line ends has lines too).
    head = io.BytesIO(data.replace(b"\r\n", b"\n").replace(b"\r", b"\n"))
    try:
        encoding, _ = tokenize.detect_encoding(head.readline)
    except SyntaxError as exc:
        if "invalid or missing" in str(exc):
            # A first line that is not UTF-8 (a comment's bytes): CPython reads on as UTF-8.
            encoding = "utf-8"
        else:
            head.seek(0)
            ast.parse(b"".join(head.readlines()[:2]), filename)  # raises its error
            raise
    if encoding in _UTF8:
        try:
            text, raw = data.decode(encoding), False
        except UnicodeDecodeError:
            text, raw = data.decode(encoding, "surrogateescape"), True
    else:
        # CPython decodes the text with its line ends made LF, and one LF more where the file
        # ends with CRLF or with no line end (CPython 3.11): an error's position is there, and
        # where that text decodes, it is the text CPython reads.
        lf = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if data.endswith(b"\r\n") or not data.endswith((b"\n", b"\r")):
            lf += b"\n"
        try:
            text, raw = lf.decode(encoding), False
        except UnicodeDecodeError as exc:
            raise SyntaxError(str(exc), (filename, 0, -1, None)) from None
    # The codec took the BOM off: a second one is text, which CPython refuses.
    return text, raw


def logical_lines(
    text: str, lines: list[str], filename: str, max_tokens: int = MAX_STATEMENT_TOKENS
) -> tuple[list[Logical], tuple[SyntaxError, bool, int] | None]:
    """The logical lines, and (error, inside a block, row) where the tokenizer stopped."""
    out: list[Logical] = []
    depth = 0
    start: tuple[int, str] | None = None
    line = 1  # where the next logical line starts
    brackets: list[tuple[str, int]] = []
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    count = 0  # tokens of the logical line so far
    # The rows of the logical line so far that end inside brackets, with how many are open.
    ends: list[tuple[int, int]] = []
    # A statement starting on a line of only a backslash leaves the file to the parser whole,
    # once every logical line's tokens are counted.
    unsplittable = False
    try:
        for tok in tokens:
            if tok.type == tokenize.NL and brackets:
                ends.append((tok.start[0], len(brackets)))
            if tok.type == tokenize.INDENT:
                depth += 1
            elif tok.type == tokenize.DEDENT:
                depth -= 1
            elif tok.type == tokenize.NL and start is None:
                line = tok.start[0] + 1  # after a blank or comment line
            if tok.type in _SKIPPED or tok.type == tokenize.ENDMARKER:
                continue
            if start is None:
                # The line starts where its first physical line does, which may hold only a
                # backslash (its indentation is the statement's): not always its first token's.
                word = tok.string if tok.type == tokenize.NAME else tok.string[:1]
                start = (min(line, tok.start[0]), word)
                if start[0] < tok.start[0] and lines[start[0] - 1].strip() == "\\":
                    # CPython's tokenizer and tokenize disagree on such a line's indentation.
                    unsplittable = True
            count += 1 + (_fstring_braces(tok.string) if tok.type == tokenize.STRING else 0)
            if count > max_tokens:
                raise StatementTooLarge(start[0], max_tokens)
            if tok.type == tokenize.OP:
                if tok.string in _OPENING:
                    brackets.append((tok.string, tok.start[0]))
                elif tok.string in _CLOSING:
                    _close(brackets, tok.string, tok.start[0], filename)
            if tok.type == tokenize.NEWLINE:
                out.append(Logical(start[0], tok.start[0], depth, start[1]))
                start = None
                line = tok.start[0] + 1
                brackets.clear()
                ends.clear()
                count = 0
    except SyntaxError as exc:  # IndentationError, or a bracket closed unlike it opened
        row = start[0] if start is not None else (exc.lineno or 1)
        if unsplittable or (0 < row <= len(lines) and lines[row - 1].strip() == "\\"):
            raise Unsplittable from None  # a line of only a backslash: indented as CPython reads
        return out, (_located(exc, filename), depth > 0, row)
    except tokenize.TokenError as exc:
        if unsplittable:
            raise Unsplittable from None
        row = start[0] if start is not None else (out[-1].end + 1 if out else 1)
        error = _unfinished(lines, row, brackets, str(exc.args[0]), filename, ends)
        return out, (error, depth > 0, row)
    if unsplittable:
        raise Unsplittable
    if start is not None:  # the last line has no newline: tokenize still ends it
        out.append(Logical(start[0], len(lines), depth, start[1]))
    return out, None


def _close(brackets: list[tuple[str, int]], char: str, row: int, filename: str) -> None:
    if not brackets:
        raise SyntaxError(f"unmatched '{char}'", (filename, row, None, None))
    opening, line = brackets.pop()
    if _CLOSING[char] != opening:
        where = "" if line == row else f" on line {line}"
        message = f"closing parenthesis '{char}' does not match opening parenthesis '{opening}'"
        raise SyntaxError(message + where, (filename, row, None, None))


def _located(exc: SyntaxError, filename: str) -> SyntaxError:
    error = type(exc)(exc.msg, (filename, exc.lineno, exc.offset, exc.text))
    return error


def _unfinished(
    lines: list[str],
    row: int,
    brackets: list[tuple[str, int]],
    reason: str,
    filename: str,
    ends: Sequence[tuple[int, int]] = (),
) -> SyntaxError:
    """The error for a text that runs to its end inside a bracket or string from ``row``.

    ``ends`` are the rows from ``row`` on that end inside brackets, with how many are open. The
    text read is cut at most :data:`_TAIL_BYTES` on, where as many brackets are open as at the
    file's end: CPython's parser fails in it as in the file, and its tokenizer ends it with the
    same bracket open, which it names instead where the parser failed after its line."""
    taken: list[str] = []
    size = 0
    row = min(row, len(lines))
    for line in lines[row - 1 :]:
        if taken and size + len(line) > _TAIL_BYTES:
            break
        taken.append(line)
        size += len(line)
    if brackets and "string" not in reason and row - 1 + len(taken) < len(lines):
        last = row - 1 + len(taken)
        cuts = [end for end, open_ in ends if open_ == len(brackets) and end <= last]
        if cuts:
            taken = taken[: cuts[-1] - row + 1]
    whole = row - 1 + len(taken) == len(lines)
    # Blank and comment lines have no indentation to CPython; on the file's first line, an
    # indented statement is the file's error, with nothing before it to wrap it in.
    code = next((line for line in taken if line.strip(" \t\f\r\n")[:1] not in ("", "#")), "")
    indented = row > 1 and code[:1] in " \t"
    head = "\n" * (row - 2) + "if 1:\n" if indented else "\n" * (row - 1)
    try:
        ast.parse(_as_parsed(head + "".join(taken)))
    except SyntaxError as exc:
        if exc.lineno is not None and (whole or exc.lineno < row - 1 + len(taken)):
            return type(exc)(exc.msg, (filename, exc.lineno, exc.offset, exc.text))
    except (ValueError, RecursionError, MemoryError):
        pass
    if "string" in reason:
        message = f"unterminated triple-quoted string literal (detected at line {len(lines)})"
        return SyntaxError(message, (filename, row, None, None))
    if brackets:
        char, opened = brackets[-1]
        return SyntaxError(f"'{char}' was never closed", (filename, opened, None, None))
    return SyntaxError(reason, (filename, row, None, None))


def _as_parsed(text: str) -> str | bytes:
    """``text`` as the parser must be given it: the file's own bytes where some are not UTF-8
    (:func:`decoded` kept them as surrogates), which the parser reads as it reads the file's."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape")
    return text
