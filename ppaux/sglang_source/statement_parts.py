"""A file's statements parsed in parts, on the file's lines, as CPython reads the whole file.

:class:`PartParser` holds what :mod:`.bounded_parse` knows of a file (its lines, its
logical lines, how its bytes are read) and parses runs of sibling statements in parts of at most
``chunk`` bytes: a body's part inside wrappers that give the tokenizer the file's indentation,
on the file's rows, and a failing part's error worded as the file gives it. Splitting a
statement too large for a part is :mod:`ppaux.sglang_source.clause_split`'s.
"""

from __future__ import annotations

import ast
import bisect
from typing import NamedTuple

from ppaux.errors import PpauxError
from ppaux.sglang_source.logical_lines import PART_BYTES, Logical

__all__ = [
    "LATER_ERRORS",
    "TOKENIZER_ERRORS",
    "WRAPPERS",
    "Found",
    "PartParser",
    "Statement",
    "indentation",
    "joined",
    "unwrapped",
]

CLAUSES = frozenset({"else", "elif", "except", "finally"})
#: Most blank lines put before a part, per byte of the part, to parse it on the file's lines
#: (beyond that its nodes are moved instead): a blank line costs the tokenizer about a
#: hundredth of what moving one node costs, and a part holds about a node every five bytes.
PADDING_PER_BYTE = 16


class Statement(NamedTuple):
    """Logical lines ``[first, stop)``; ``clauses`` are (header index, body start, body stop)."""

    first: int
    stop: int
    clauses: tuple[tuple[int, int, int], ...]


#: How CPython's tokenizer words the errors it raises itself: when the parser fails first,
#: CPython tokenizes the rest of the file, and the first of these found there is the error.
TOKENIZER_ERRORS = (
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


#: Those of them that CPython's look past a parser's error raises there: a character after a
#: line continuation stops the tokenizer without an error of its own, and the parser's stands.
LATER_ERRORS = tuple(
    message
    for message in TOKENIZER_ERRORS
    if message != "unexpected character after line continuation"
)


class Found(PpauxError):
    """The tokenizer's error of a later part (see :func:`_later_tokenizer_error`)."""

    def __init__(self, error: SyntaxError) -> None:
        super().__init__(error.msg)
        self.error = error


class PartParser:
    """Parses a file's statements in bounded parts; raises the first part's syntax error."""

    def __init__(
        self,
        lines: list[str],
        logical: list[Logical],
        filename: str,
        raw: bool = False,
        ending: str = "\n",
        chunk: int = PART_BYTES,
    ) -> None:
        self.lines = lines
        self.chunk = chunk  # the most text parsed at once
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
            if self.size(begin, end_row) > self.chunk and self.splittable(statement):
                if chunk_start < begin:
                    out = joined(out, self.parse_rows(chunk_start, begin - 1, depth))
                out = joined(out, self.split(statement, begin, end_row, depth))
                chunk_start = end_row + 1
            elif self.size(chunk_start, end_row) > self.chunk and chunk_start < begin:
                out = joined(out, self.parse_rows(chunk_start, begin - 1, depth))
                chunk_start = begin
        if chunk_start <= last_row and statements:
            out = joined(out, self.parse_rows(chunk_start, last_row, depth))
        return out

    def statements(self, first: int, stop: int) -> list[Statement]:
        out: list[Statement] = []
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
                if index >= stop or self.logical[index].word not in CLAUSES:
                    break
            out.append(Statement(begin, index, tuple(clauses)))
        return out

    def splittable(self, statement: Statement) -> bool:
        if not statement.clauses:  # decorators that decorate nothing
            return False
        header = self.logical[statement.clauses[0][0]]
        return header.word != "match" and any(s < e for _, s, e in statement.clauses)

    def scanned(
        self, text: str, first_row: int, depth: int, head: list[str], opened: bool
    ) -> list[ast.stmt]:
        """A part after the error being explained: raise :class:`Found` if the tokenizer
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
            if exc.msg.startswith(LATER_ERRORS):
                raise Found(
                    type(exc)(exc.msg, (self.filename, exc.lineno, exc.offset, exc.text))
                ) from None
            return []
        return unwrapped(tree, depth, opened)

    def source(self, text: str) -> str | bytes:
        """What the parser is given for ``text``: the file's own bytes where :attr:`raw`."""
        if self.ending != "\n":  # the file's own line ends: CPython counts a last CRLF's
            text = text.replace("\n", self.ending)
        return text.encode("utf-8", "surrogateescape") if self.raw else text

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
                f"{indent}{WRAPPERS.get(word, 'if 1:')}\n"
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
        padding = "\n" * max(0, first_row - 1 - len(head))
        if self.keep and len(padding) <= PADDING_PER_BYTE * len(text):
            # Parsed on the file's lines: blank lines cost the tokenizer far less than moving
            # each node does (ast.increment_lineno), up to a few per byte of the part.
            try:
                tree = ast.parse(self.source(padding + wrapper + text), self.filename)
            except SyntaxError as exc:
                raise self.file_error(padding + wrapper + text, next_row, exc) from None
            return unwrapped(tree, depth, opened)
        try:
            tree = ast.parse(self.source(wrapper + text), self.filename)
        except SyntaxError:
            pass  # again with the file's lines, so that the message names them (below)
        else:
            if self.keep:
                ast.increment_lineno(tree, first_row - 1 - len(head))
            return unwrapped(tree, depth, opened)
        try:
            tree = ast.parse(self.source(padding + wrapper + text), self.filename)
        except SyntaxError as exc:
            raise self.file_error(padding + wrapper + text, next_row, exc) from None
        return unwrapped(tree, depth, opened)

    def file_error(self, text: str, next_row: int, exc: SyntaxError) -> SyntaxError:
        """The error of ``text`` (a part behind blank lines) as the file gives it."""
        error = self.with_following(text, next_row, exc)
        return type(error)(error.msg, (self.filename, error.lineno, error.offset, error.text))

    def with_following(self, text: str, next_row: int, exc: SyntaxError) -> SyntaxError:
        """The error of ``text`` (on the file's rows, ending before ``next_row``) followed by
        the file's next two logical lines (at most ``chunk`` bytes past the first): the
        error CPython gives there when it lies before the second, which only a cut could
        make; else ``exc``."""
        if self.starts is None:
            self.starts = [line.start for line in self.logical]
        index = bisect.bisect_left(self.starts, next_row)
        # A text not ended by a line end is the file's last line: nothing follows it.
        gap = "\n" * max(0, next_row - 1 - text.count("\n")) if text.endswith("\n") else ""
        if index >= len(self.logical):
            code = next(
                (
                    row
                    for row in range(next_row, len(self.lines) + 1)
                    if _holds_code(self.lines[row - 1])
                ),
                None,
            )
            if code is not None:
                # The statement the tokenizer stopped in: its first line (at most a part's
                # bytes of it) is what the parser meets first.
                gap = "\n" * max(0, code - 1 - text.count("\n"))
                try:
                    ast.parse(self.source(text + gap + self.lines[code - 1][:PART_BYTES]))
                except SyntaxError as wider:
                    if (wider.lineno or code + 1) <= code:
                        return wider
                except (ValueError, MemoryError, RecursionError):
                    pass
                return exc
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
        if self.size(first.end + 1, last) > self.chunk:
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

    def split(
        self, statement: Statement, begin: int, end_row: int, depth: int
    ) -> list[ast.stmt] | None:
        """A statement too large for a part, checked in parts (:mod:`.clause_split`)."""
        raise NotImplementedError


# A function's or class's body costs CPython's parser more of its stack than other bodies do:
# a part inside one is parsed inside a function, so that the parser's limit falls where it does.
WRAPPERS = {"def": "def _():", "async": "def _():", "class": "def _():"}


def _holds_code(line: str) -> bool:
    stripped = line.lstrip(" \t\f")
    return bool(stripped) and stripped[0] not in "#\r\n"


def indentation(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t\f"))]


def unwrapped(module: ast.Module, depth: int, opened: bool) -> list[ast.stmt]:
    """The statements parsed: inside the ``if 1:`` wrappers of a body's text (depth above 0),
    less the ``pass`` that opened the body."""
    body = module.body
    for _ in range(depth):
        wrapper = body[0]
        assert isinstance(wrapper, (ast.If, ast.FunctionDef))
        body = wrapper.body
    return body[1:] if opened else body


def joined(out: list[ast.stmt] | None, more: list[ast.stmt] | None) -> list[ast.stmt] | None:
    return None if out is None or more is None else out + more
