"""Parse a Python file without ever handing CPython's parser a large text that is not Python.

When ``ast.parse`` meets a syntax error it parses the text a second time to say where the error
is, and that second pass costs far more memory than the first: about 300 MB on an 800 KB file
that is not valid Python, against 150 MB for a valid file of the same size (CPython 3.11). An
sglang tree is an input, so :func:`parse_source` never gives the parser more than
:data:`CHUNK_BYTES` of text that has not been shown to parse.

The file is first cut with :mod:`tokenize` (linear, and exact about strings, brackets and
indentation) into logical lines, and those into statements: a statement is its header lines
(decorators, ``else``/``elif``/``except``/``finally`` clauses) and their indented bodies.
Consecutive statements are parsed together in chunks of at most :data:`CHUNK_BYTES`; a statement
larger than that (a class or function of a megabyte) is checked as its skeleton, each body
replaced by ``pass``, and its bodies are cut the same way, down to single statements. When every
part parses, the file's tree is the parts' trees put back together, their lines moved to the
file's (where a statement of several clauses had to be split, ``if``/``else`` or ``try``, the
whole file is parsed instead, which then costs what a valid file costs).

A part that fails raises the parser's own ``SyntaxError`` with the line moved to the file's
line, and read as CPython reads the whole file: a body's part inside wrappers that give the
tokenizer the file's indentation, the file's bytes where they are not all UTF-8, the text that
follows the failing part, and the parts after it when CPython would name a later tokenizer
error instead. A logical line longer than :data:`CHUNK_BYTES` cannot be cut: one of more than
:data:`MAX_STATEMENT_TOKENS` tokens is refused (:class:`StatementTooLarge`) before any parser
sees it, a shorter one is parsed whole, as is a ``match`` statement (its ``case`` clauses are
not statements) and a file where a statement starts on a line holding only a backslash, whose
indentation :mod:`tokenize` does not read as CPython's tokenizer does; a text the tokenizer
cannot finish (a bracket or a triple-quoted string left open to the end) is reported from at
most :data:`CHUNK_BYTES` of the text from the statement where it stopped.
"""

from __future__ import annotations

import ast
import bisect
import gc
import io
import re
import sys
import tokenize
import warnings
from dataclasses import dataclass

from ppaux.errors import PpauxError

__all__ = ["CHUNK_BYTES", "MAX_STATEMENT_TOKENS", "StatementTooLarge", "parse_source"]

#: Most text of a file handed to CPython's parser before the file is known to be valid Python.
CHUNK_BYTES = 32 * 1024
#: Most text read to word the error of a text that ends inside a bracket or a string.
_TAIL_BYTES = CHUNK_BYTES
#: Most tokens in one logical line longer than :data:`CHUNK_BYTES` (which cannot be cut): the
#: parser's tree of a 1 MB literal of 600,000 tokens takes it past 1 GB; sglang's longest
#: statements hold a few thousand.
MAX_STATEMENT_TOKENS = 50_000

_CLAUSES = frozenset({"else", "elif", "except", "finally"})
_SKIPPED = frozenset({tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT})
_OPENING = {"(": ")", "[": "]", "{": "}"}
_CLOSING = {")": "(", "]": "[", "}": "{"}


class _Unsplittable(PpauxError):
    """A statement starts on a line holding only a backslash: the file is parsed whole."""


class StatementTooLarge(PpauxError, ValueError):
    """One logical line holds more than :data:`MAX_STATEMENT_TOKENS` tokens: it is not parsed,
    as its syntax tree alone would cost the parser hundreds of megabytes."""

    def __init__(self, line: int, limit: int) -> None:
        self.line = line
        self.limit = limit
        super().__init__(
            f"line {line}: one statement of more than {limit:,} tokens,"
            " more than sglang's sources ever hold (not parsed)"
        )


@dataclass(frozen=True)
class _Logical:
    """One logical line: its first and last physical line (1-based), depth and first word."""

    start: int
    end: int
    depth: int
    word: str


@dataclass(frozen=True)
class _Statement:
    """Logical lines ``[first, stop)``; ``clauses`` are (header index, body start, body stop)."""

    first: int
    stop: int
    clauses: tuple[tuple[int, int, int], ...]


def parse_source(source: str | bytes, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(source, filename)``, with the parser never given a large invalid text.

    Raises what ``ast.parse`` raises (``SyntaxError``, ``ValueError``, ``RecursionError``,
    ``MemoryError``); a syntax error's line is the file's line.
    """
    has_nul = b"\0" in source if isinstance(source, bytes) else "\0" in source
    if len(source) <= CHUNK_BYTES or has_nul:
        return ast.parse(source, filename)  # small, or refused before any parsing (NUL)
    text, raw = _decoded(source, filename) if isinstance(source, bytes) else (source, False)
    ending = "\r\n" if "\r\n" in text else "\n"  # CPython counts a last CRLF line's end
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = io.StringIO(text).readlines()
    # Syntax trees hold no reference cycles: the collector, which the parts' hundreds of
    # thousands of nodes would start again and again, would find nothing (a third of the time).
    collecting = gc.isenabled()
    gc.disable()
    try:
        with warnings.catch_warnings():
            # A part's SyntaxWarning (an invalid escape) is the whole file's, told once by it.
            warnings.simplefilter("ignore", SyntaxWarning)
            try:
                logical = _scanned(text)
                try:
                    module, checked = _quick(logical, lines, filename, raw, ending)
                    if module is None and not checked:
                        module = _check(text, lines, filename, raw, ending)
                except SyntaxError as exc:
                    later = _later_tokenizer_error(exc, text, logical, lines, filename, raw, ending)
                    if later is not None:
                        raise later from None
                    raise
            except _Unsplittable:
                module = None
        return ast.parse(source, filename) if module is None else module
    finally:
        if collecting:
            gc.enable()


def _quick(
    logical: list[_Logical] | None, lines: list[str], filename: str, raw: bool, ending: str
) -> tuple[ast.Module | None, bool]:
    """The file's tree from the parts :func:`_scanned` cuts, and whether every part parsed;
    (None, False) where the scan was unsure (then :func:`_check`).

    The scan may cut where it should not, but a cut inside a string, a bracket or a
    backslash-continued line leaves a part that cannot parse: when every part parses, every cut
    was a true statement boundary, the file is valid Python and the tree is the file's (or, where
    a split statement's tree cannot be put back together, the whole file's parse gives it)."""
    if logical is None:
        return None, False
    try:
        checker = _Checker(lines, logical, filename, raw, ending)
        body = checker.block(0, len(logical), 1, len(lines), 0)
    except SyntaxError:
        if sys.version_info < (3, 12):
            # Every part before the failing one parsed, so it starts where a statement starts,
            # and before 3.12 the scan reads strings as the tokenizer does: the error is real.
            raise
        return None, False  # an f-string may nest quotes: the tokenizer's cut decides
    return (None if body is None else ast.Module(body=body, type_ignores=[])), True


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
_FIRST = re.compile(r"([ \f]*)([A-Za-z_]\w*|[^\s#]|#|\n|$)")


_TOKEN = re.compile(
    "[rRbBuUfF]{0,2}(?:"
    + "|".join(pattern.pattern for pattern in _STRING_END_ALL)
    + r")|\w+|#[^\n]*|\\\n|\S",
    re.S,
)


def _check_tokens(text: str, begin: int, end: int, row: int) -> None:
    """Raise :class:`StatementTooLarge` when ``text[begin:end]``, one logical line starting on
    ``row``, holds more than :data:`MAX_STATEMENT_TOKENS` tokens (strings, names and numbers
    count one each, every other character one): stops counting there, so it costs at most
    that many matches."""
    if end - begin <= CHUNK_BYTES:
        return
    for count, _ in enumerate(_TOKEN.finditer(text, begin, end), 1):
        if count > MAX_STATEMENT_TOKENS:
            raise StatementTooLarge(row, MAX_STATEMENT_TOKENS)


def _scanned(text: str) -> list[_Logical] | None:
    """Logical lines found by scanning only for strings, comments, brackets and line ends: a
    few times faster than :mod:`tokenize`, and None where it is not sure (a tab in an
    indentation, an indentation that matches no outer one, a string or bracket left open, a
    logical line over :data:`CHUNK_BYTES`)."""
    out: list[_Logical] = []
    widths = [0]
    row, pos, size = 1, 0, len(text)
    while pos < size:
        first = _FIRST.match(text, pos)
        if first is None:  # a tab in the indentation
            return None
        word = first.group(2)
        if word == "\\":  # a line of only a backslash: the statement's word is on the next
            return None
        if word in ("#", "\n", ""):  # a blank or comment line
            newline = text.find("\n", pos)
            pos = size if newline < 0 else newline + 1
            row += 1
            continue
        width = len(first.group(1).rpartition("\f")[2])
        if width > widths[-1]:
            widths.append(width)
        while width < widths[-1]:
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
                row += 1
        if brackets:
            return None
        if pos - begin > CHUNK_BYTES:
            _check_tokens(text, begin, pos, start)
            return None
        out.append(_Logical(start, row, len(widths) - 1, word))
        row += 1
    return out


def _check(text: str, lines: list[str], filename: str, raw: bool, ending: str) -> ast.Module | None:
    """Raise the first part's syntax error, if any part of the file has one; else the file's
    tree when its top-level parts give it (none had to be split), or None."""
    logical, failure = _logical_lines(text, lines, filename)
    checker = _Checker(lines, logical, filename, raw, ending)
    if failure is None:
        body = checker.block(0, len(logical), 1, len(lines), 0)
        return None if body is None else ast.Module(body=body, type_ignores=[])
    # The tokenizer stopped: the parser would have reported an error before that point first,
    # so the whole top-level statements before it are checked, then its error is raised.
    error, nested, row = failure
    statements = checker.statements(0, len(logical))
    unfinished = statements.pop() if nested and statements else None
    if statements:
        end_row = (
            logical[statements[-1].stop].start - 1
            if statements[-1].stop < len(logical)
            else row - 1
        )
        checker.block(0, statements[-1].stop, 1, end_row, 0)
    if unfinished is not None and row > 1:
        # The statement the tokenizer stopped in, up to where it stopped: an error the parser
        # meets there first is CPython's, unless it lies where the cut ends the text.
        checker.keep = False
        try:
            checker.block(
                unfinished.first, len(logical), logical[unfinished.first].start, row - 1, 0
            )
        except SyntaxError as exc:
            if exc.lineno is not None and exc.lineno < row:
                raise exc from None
    raise error


#: How CPython's tokenizer words the errors it raises itself: when the parser fails first,
#: CPython tokenizes the rest of the file, and the first of these found there is the error.
_TOKENIZER_ERRORS = (
    "unmatched '",
    "closing parenthesis '",
    "unterminated string literal",
    "unterminated triple-quoted string literal",
    "invalid character '",
    "invalid non-printable character",
    "unexpected character after line continuation",
    "too many nested parentheses",
    "invalid decimal literal",
    "invalid hexadecimal literal",
    "invalid octal literal",
    "invalid binary literal",
    "invalid digit '",
    "leading zeros in decimal integer literals",
)


class _Found(PpauxError):
    """The tokenizer's error of a later part (see :func:`_later_tokenizer_error`)."""

    def __init__(self, error: SyntaxError) -> None:
        super().__init__(error.msg)
        self.error = error


def _later_tokenizer_error(
    exc: SyntaxError,
    text: str,
    scanned: list[_Logical] | None,
    lines: list[str],
    filename: str,
    raw: bool,
    ending: str,
) -> SyntaxError | None:
    """The error CPython reports instead of the parser's ``exc``: after a parse fails, CPython
    tokenizes the rest of the file, and an error its tokenizer raises there (an unmatched
    bracket, an unterminated string, an invalid character) is the one reported. The parts
    after ``exc``'s line are parsed (each part's own message already prefers its tokenizer's
    errors); None when none fails so."""
    if exc.lineno is None or exc.msg.startswith(_TOKENIZER_ERRORS):
        return None
    logical = scanned
    failure = None
    if logical is None:
        logical, failure = _logical_lines(text, lines, filename)
    checker = _Checker(lines, logical, filename, raw, ending)
    checker.keep = False
    checker.scan_after = exc.lineno
    try:
        if logical:
            last_row = len(lines) if failure is None else logical[-1].end
            checker.block(0, len(logical), 1, last_row, 0)
    except _Found as found:
        return found.error
    except SyntaxError:
        return None
    if failure is not None and failure[0].msg.startswith(_TOKENIZER_ERRORS):
        if (failure[0].lineno or 0) > exc.lineno:
            return failure[0]
    return None


_UTF8 = frozenset({"utf-8", "utf-8-sig"})


def _decoded(data: bytes, filename: str) -> tuple[str, bool]:
    """The text of a file's bytes, as CPython's parser reads them, and whether it holds bytes
    that are not UTF-8 (kept as lone surrogates; see :attr:`_Checker.raw`). A bad coding
    cookie raises the parser's own error: its two first lines are all it reads for it. Where
    the cookie names another encoding than UTF-8, the parser decodes the whole file first, and
    an undecodable byte is its error (at line 0)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        if "invalid or missing" in str(exc):
            # A first line that is not UTF-8 (a comment's bytes): CPython reads on as UTF-8.
            encoding = "utf-8"
        else:
            ast.parse(b"".join(io.BytesIO(data).readlines()[:2]), filename)  # raises its error
            raise
    if encoding in _UTF8:
        try:
            text, raw = data.decode(encoding), False
        except UnicodeDecodeError:
            text, raw = data.decode(encoding, "surrogateescape"), True
    else:
        try:
            text, raw = data.decode(encoding), False
        except UnicodeDecodeError as exc:
            raise SyntaxError(str(exc), (filename, 0, -1, None)) from None
    return (text[1:] if text.startswith("\ufeff") else text), raw


def _logical_lines(
    text: str, lines: list[str], filename: str
) -> tuple[list[_Logical], tuple[SyntaxError, bool, int] | None]:
    """The logical lines, and (error, inside a block, row) where the tokenizer stopped."""
    out: list[_Logical] = []
    depth = 0
    start: tuple[int, str] | None = None
    line = 1  # where the next logical line starts
    brackets: list[tuple[str, int]] = []
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    count = 0  # tokens of the logical line so far
    try:
        for tok in tokens:
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
                    raise _Unsplittable
            count += 1
            if count > MAX_STATEMENT_TOKENS:
                raise StatementTooLarge(start[0], MAX_STATEMENT_TOKENS)
            if tok.type == tokenize.OP:
                if tok.string in _OPENING:
                    brackets.append((tok.string, tok.start[0]))
                elif tok.string in _CLOSING:
                    _close(brackets, tok.string, tok.start[0], filename)
            if tok.type == tokenize.NEWLINE:
                out.append(_Logical(start[0], tok.start[0], depth, start[1]))
                start = None
                line = tok.start[0] + 1
                brackets.clear()
                count = 0
    except SyntaxError as exc:  # IndentationError, or a bracket closed unlike it opened
        row = start[0] if start is not None else (exc.lineno or 1)
        return out, (_located(exc, filename), depth > 0, row)
    except tokenize.TokenError as exc:
        row = start[0] if start is not None else (out[-1].end + 1 if out else 1)
        error = _unfinished(lines, row, brackets, str(exc.args[0]), filename)
        return out, (error, depth > 0, row)
    if start is not None:  # the last line has no newline: tokenize still ends it
        out.append(_Logical(start[0], len(lines), depth, start[1]))
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
    lines: list[str], row: int, brackets: list[tuple[str, int]], reason: str, filename: str
) -> SyntaxError:
    """The error for a text that runs to its end inside a bracket or string from ``row``."""
    taken: list[str] = []
    size = 0
    row = min(row, len(lines))
    for line in lines[row - 1 :]:
        if taken and size + len(line) > _TAIL_BYTES:
            break
        taken.append(line)
        size += len(line)
    whole = row - 1 + len(taken) == len(lines)
    indented = taken[0][:1] in " \t"
    head = "\n" * (row - 2) + "if 1:\n" if indented else "\n" * (row - 1)
    try:
        ast.parse(head + "".join(taken))
    except SyntaxError as exc:
        if exc.lineno is not None and (whole or exc.lineno < row - 1 + len(taken)):
            return SyntaxError(exc.msg, (filename, exc.lineno, exc.offset, exc.text))
    except (ValueError, RecursionError, MemoryError):
        pass
    if "string" in reason:
        message = f"unterminated triple-quoted string literal (detected at line {len(lines)})"
        return SyntaxError(message, (filename, row, None, None))
    if brackets:
        char, opened = brackets[-1]
        return SyntaxError(f"'{char}' was never closed", (filename, opened, None, None))
    return SyntaxError(reason, (filename, row, None, None))


class _Checker:
    """Parses a file's statements in bounded parts; raises the first part's syntax error."""

    def __init__(
        self,
        lines: list[str],
        logical: list[_Logical],
        filename: str,
        raw: bool = False,
        ending: str = "\n",
    ) -> None:
        self.lines = lines
        self.ending = ending
        # The file is UTF-8 with bytes that are not: its parts go to the parser as the file's
        # bytes, so that it reads them as it reads the file (a comment's bytes are not
        # decoded, a string's are).
        self.raw = raw
        self.logical = logical
        self.filename = filename
        self.offsets = [0]
        for line in lines:
            self.offsets.append(self.offsets[-1] + len(line))
        # Each enclosing body's indentation (its first line's), first row and header's first
        # word, outermost first.
        self.bodies: list[tuple[str, int, str]] = []
        # False once a split statement's tree cannot be put back together: the parts are then
        # only checked, and their trees not moved to the file's lines.
        self.keep = True
        self.starts: list[int] | None = None  # the logical lines' first rows, once needed
        # Set when only the parts after this line are looked at, for a tokenizer's error.
        self.scan_after: int | None = None

    def size(self, first_row: int, last_row: int) -> int:
        return self.offsets[last_row] - self.offsets[first_row - 1]

    def block(
        self, first: int, stop: int, first_row: int, last_row: int, depth: int
    ) -> list[ast.stmt] | None:
        """Check the sibling statements of logical lines ``[first, stop)``, which with their
        comments span rows ``first_row`` - ``last_row``: their trees, lines the file's, or None
        where a split statement's tree cannot be put back together here."""
        statements = self.statements(first, stop)
        out: list[ast.stmt] | None = []
        chunk_start = first_row
        for k, statement in enumerate(statements):
            end_row = (
                self.logical[statements[k + 1].first].start - 1
                if k + 1 < len(statements)
                else last_row
            )
            begin = first_row if k == 0 else self.logical[statement.first].start
            if self.size(begin, end_row) > CHUNK_BYTES and self.splittable(statement):
                if chunk_start < begin:
                    out = _joined(out, self.parse_rows(chunk_start, begin - 1, depth))
                out = _joined(out, self.split(statement, begin, end_row, depth))
                chunk_start = end_row + 1
            elif self.size(chunk_start, end_row) > CHUNK_BYTES and chunk_start < begin:
                out = _joined(out, self.parse_rows(chunk_start, begin - 1, depth))
                chunk_start = begin
        if chunk_start <= last_row and statements:
            out = _joined(out, self.parse_rows(chunk_start, last_row, depth))
        return out

    def statements(self, first: int, stop: int) -> list[_Statement]:
        out: list[_Statement] = []
        index = first
        while index < stop:
            depth = self.logical[index].depth
            begin = index
            while index < stop and self.logical[index].word == "@":
                index += 1
            clauses: list[tuple[int, int, int]] = []
            while index < stop:
                header = index
                index += 1
                while index < stop and self.logical[index].depth > depth:
                    index += 1
                clauses.append((header, header + 1, index))
                if index >= stop or self.logical[index].word not in _CLAUSES:
                    break
            out.append(_Statement(begin, index, tuple(clauses)))
        return out

    def splittable(self, statement: _Statement) -> bool:
        if not statement.clauses:  # decorators that decorate nothing
            return False
        header = self.logical[statement.clauses[0][0]]
        return header.word != "match" and any(s < e for _, s, e in statement.clauses)

    def split(
        self, statement: _Statement, begin: int, end_row: int, depth: int
    ) -> list[ast.stmt] | None:
        """Check a large statement as its skeleton (bodies as ``pass``), then each body; its
        tree when it has one clause (a class, a function, a loop or ``with`` without ``else``)."""
        # Each clause's header keeps its rows (blank lines stand for the bodies left out), and
        # its body is one ``pass`` on the body's first row.
        text = self.lines[begin - 1 : self.logical[statement.clauses[0][0]].start - 1]
        for header, body_start, body_stop in statement.clauses:
            line = self.logical[header]
            text += ["\n"] * (line.start - begin - len(text))
            text += self.lines[line.start - 1 : line.end]
            if body_start < body_stop:
                # Any indentation deeper than the header's holds the one ``pass``: the header's
                # own and a space (a body's first line may hold only a backslash).
                first_body = self.logical[body_start].start
                indent = self.lines[line.start - 1]
                indent = indent[: len(indent) - len(indent.lstrip(" \t\f"))]
                text += ["\n"] * (first_body - begin - len(text))
                text.append(f"{indent} pass\n")
        if len(statement.clauses) != 1:
            self.keep = False

        def check_bodies(before: int) -> list[list[ast.stmt] | None]:
            """Check the bodies that start before row ``before``; their trees."""
            out: list[list[ast.stmt] | None] = []
            spans = []
            for k, (header, body_start, body_stop) in enumerate(statement.clauses):
                if body_start >= body_stop or self.logical[body_start].start >= before:
                    continue
                following = statement.clauses[k + 1][0] if k + 1 < len(statement.clauses) else None
                last = self.logical[following].start - 1 if following is not None else end_row
                spans.append((header, body_start, body_stop, last))
            if not self.keep and self.scan_after is None:
                spans = self.unchecked(spans)  # no trees wanted: bodies parsed together first
            for header, body_start, body_stop, last in spans:
                first_row = self.logical[body_start].start
                inner = self.logical[body_start].depth
                word = self.logical[header].word
                self.bodies.append((_indentation(self.lines[first_row - 1]), first_row, word))
                try:
                    out.append(self.block(body_start, body_stop, first_row, last, inner))
                finally:
                    self.bodies.pop()
            return out

        try:
            skeleton = self.parse_text("".join(text), begin, depth, end_row + 1)
        except (SyntaxError, _Found) as exc:
            # A body before the failing header fails first in CPython's reading.
            error = exc.error if isinstance(exc, _Found) else exc
            check_bodies(error.lineno or 0)
            raise
        if not skeleton:  # only where the parts after an error are scanned
            return None
        bodies = check_bodies(end_row + 1)
        node = skeleton[0]
        body = bodies[0] if len(statement.clauses) == 1 and len(bodies) == 1 else None
        if body is None or not body or not isinstance(node, _ONE_BODY):
            return None
        node.body = body
        node.end_lineno, node.end_col_offset = body[-1].end_lineno, body[-1].end_col_offset
        return [node]

    def scanned(
        self, text: str, first_row: int, depth: int, head: list[str], opened: bool
    ) -> list[ast.stmt]:
        """A part after the error being explained: raise :class:`_Found` if the tokenizer
        refuses it; no trees."""
        assert self.scan_after is not None
        if first_row <= self.scan_after:
            return []
        if self.raw and first_row > 1 and not head:
            head.insert(0, "# coding: utf-8\n")
        padding = "\n" * max(0, first_row - 1 - len(head))
        try:
            tree = ast.parse(self.source(padding + "".join(head) + text), self.filename)
        except SyntaxError as exc:
            if exc.msg.startswith(_TOKENIZER_ERRORS):
                raise _Found(
                    type(exc)(exc.msg, (self.filename, exc.lineno, exc.offset, exc.text))
                ) from None
            return []
        return _unwrapped(tree, depth, opened)

    def source(self, text: str) -> str | bytes:
        """What the parser is given for ``text``: the file's own bytes where :attr:`raw`."""
        if self.ending != "\n":  # the file's own line ends: CPython counts a last CRLF's
            text = text.replace("\n", self.ending)
        return text.encode("utf-8", "surrogateescape") if self.raw else text

    def unchecked(self, spans: list[tuple[int, int, int, int]]) -> list[tuple[int, int, int, int]]:
        """Of a split statement's bodies (header, body start, body stop, last row), those still
        to check one by one: bodies indented alike are parsed together, up to
        :data:`CHUNK_BYTES` at a time, as one block (a statement of 40,000 ``except`` clauses
        is then a few dozen parses, not 40,000); a group that fails is checked body by body,
        which names the error as CPython does."""
        left: list[tuple[int, int, int, int]] = []
        group: list[tuple[int, int, int, int]] = []
        size = 0

        def flush() -> None:
            if not group:
                return
            header = group[0][0]
            text = "".join(
                "".join(self.lines[self.logical[b].start - 1 : last]) for _, b, _, last in group
            )
            head = [
                f"{ind}{_WRAPPERS.get(word, 'if 1:')}\n"
                for ind, word in zip(
                    ["", *(i for i, _, _ in self.bodies)],
                    [*(w for _, _, w in self.bodies), self.logical[header].word],
                    strict=True,
                )
            ]
            try:
                ast.parse(self.source("".join(head) + text), self.filename)
            except (SyntaxError, ValueError, MemoryError, RecursionError):
                left.extend(group)
            group.clear()

        for span in spans:
            _, body_start, _, last = span
            first_row = self.logical[body_start].start
            body_size = self.size(first_row, last)
            alike = not group or _indentation(self.lines[first_row - 1]) == _indentation(
                self.lines[self.logical[group[0][1]].start - 1]
            )
            if body_size > CHUNK_BYTES:
                flush()
                left.append(span)
                continue
            if not alike or size + body_size > CHUNK_BYTES:
                flush()
                size = 0
            group.append(span)
            size += body_size
        flush()
        return left

    def parse_rows(self, first_row: int, last_row: int, depth: int) -> list[ast.stmt]:
        text = "".join(self.lines[first_row - 1 : last_row])
        return self.parse_text(text, first_row, depth, last_row + 1)

    def parse_text(self, text: str, first_row: int, depth: int, next_row: int) -> list[ast.stmt]:
        """Parse ``text``, which starts at the file's row ``first_row``, into trees on the
        file's lines. A body's text (depth above 0) is parsed inside one ``if 1:`` (``def _():``
        for a function's or class's body) per enclosing body, each indented as that body is in
        the file, and after a ``pass`` that opens its own body as the file does (unless the
        text does): CPython's tokenizer then sees the indentation the file gives it (its
        levels, and tabs against spaces), and the parser about the depth. Parsed where it
        stands, then moved (blank lines put before it would cost each part what the file
        before it holds: quadratic in the parts); a part that fails is parsed again behind
        blank lines, so that the error names the file's lines, its message too, and with
        the file's text that follows (from ``next_row``), which CPython reads past the
        failing token: its error is then the one the file gives."""
        head: list[str] = []
        opened = False
        if depth:
            outer = ["", *(indent for indent, _, _ in self.bodies)]
            words = [word for _, _, word in self.bodies] + [""] * depth
            head = [
                f"{indent}{_WRAPPERS.get(word, 'if 1:')}\n"
                for indent, word in zip(outer[:depth], words, strict=False)
            ]
            indent, body_row, _ = (
                self.bodies[depth - 1] if len(self.bodies) >= depth else ("", 0, "")
            )
            if body_row and body_row < first_row:
                head.append(f"{indent}pass\n")
                opened = True
        if self.scan_after is not None:
            return self.scanned(text, first_row, depth, head, opened)
        if self.raw and first_row > 1 and not head:
            # A part's two first lines are not the file's: no coding cookie may be read there
            # (after a wrapper's line, none is).
            head.insert(0, "# coding: utf-8\n")
        wrapper = "".join(head)
        try:
            tree = ast.parse(self.source(wrapper + text), self.filename)
        except SyntaxError:
            pass  # again with the file's lines, so that the message names them (below)
        else:
            if self.keep:
                ast.increment_lineno(tree, first_row - 1 - len(head))
            return _unwrapped(tree, depth, opened)
        padding = "\n" * max(0, first_row - 1 - len(head))
        try:
            tree = ast.parse(self.source(padding + wrapper + text), self.filename)
        except SyntaxError as exc:
            error = self.with_following(padding + wrapper + text, next_row, exc)
            raise type(error)(
                error.msg, (self.filename, error.lineno, error.offset, error.text)
            ) from None
        return _unwrapped(tree, depth, opened)

    def with_following(self, text: str, next_row: int, exc: SyntaxError) -> SyntaxError:
        """The error of ``text`` (on the file's rows, ending before ``next_row``) followed by
        the file's next two logical lines (at most :data:`CHUNK_BYTES` past the first): the
        error CPython gives there when it lies before the second, which only a cut could
        make; else ``exc``."""
        if self.starts is None:
            self.starts = [line.start for line in self.logical]
        index = bisect.bisect_left(self.starts, next_row)
        gap = "\n" * max(0, next_row - 1 - text.count("\n"))
        if index >= len(self.logical):
            # Only comments and blank lines follow: where the file ends is what counts.
            tail = "\n" * max(0, len(self.lines) - next_row + 1)
            try:
                ast.parse(self.source(text + gap + tail), self.filename)
            except SyntaxError as wider:
                return wider
            except (ValueError, MemoryError, RecursionError):
                pass
            return exc
        first = self.logical[index]
        last = self.logical[index + 1].end if index + 1 < len(self.logical) else len(self.lines)
        if self.size(first.end + 1, last) > CHUNK_BYTES:
            last = first.end
        following = "".join(self.lines[next_row - 1 : last])
        try:
            ast.parse(self.source(text + gap + following), self.filename)
        except SyntaxError as wider:
            if last == len(self.lines) or (wider.lineno or last) <= first.end:
                return wider
        except (ValueError, MemoryError, RecursionError):
            pass
        return exc


_ONE_BODY = (
    ast.ClassDef,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.With,
    ast.AsyncWith,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.If,
)


# A function's or class's body costs CPython's parser more of its stack than other bodies do:
# a part inside one is parsed inside a function, so that the parser's limit falls where it does.
_WRAPPERS = {"def": "def _():", "async": "def _():", "class": "def _():"}


def _indentation(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t\f"))]


def _unwrapped(module: ast.Module, depth: int, opened: bool) -> list[ast.stmt]:
    """The statements parsed: inside the ``if 1:`` wrappers of a body's text (depth above 0),
    less the ``pass`` that opened the body."""
    body = module.body
    for _ in range(depth):
        wrapper = body[0]
        assert isinstance(wrapper, (ast.If, ast.FunctionDef))
        body = wrapper.body
    return body[1:] if opened else body


def _joined(out: list[ast.stmt] | None, more: list[ast.stmt] | None) -> list[ast.stmt] | None:
    return None if out is None or more is None else out + more
