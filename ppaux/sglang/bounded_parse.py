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
import warnings
from dataclasses import dataclass

from ppaux.errors import PpauxError
from ppaux.sglang.logical_lines import (
    MAX_STATEMENT_TOKENS,
    PART_BYTES,
    Logical,
    StatementTooLarge,
    Unsplittable,
    decoded,
    logical_lines,
    scanned,
)

__all__ = ["CHUNK_BYTES", "MAX_STATEMENT_TOKENS", "StatementTooLarge", "parse_source"]

#: Most text of a file handed to CPython's parser before the file is known to be valid Python.
CHUNK_BYTES = PART_BYTES
_CLAUSES = frozenset({"else", "elif", "except", "finally"})
#: Most blank lines put before a part, per byte of the part, to parse it on the file's lines
#: (beyond that its nodes are moved instead): a blank line costs the tokenizer about a
#: hundredth of what moving one node costs, and a part holds about a node every five bytes.
_PADDING_PER_BYTE = 4


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
    text, raw = decoded(source, filename) if isinstance(source, bytes) else (source, False)
    ending = "\r\n" if "\r\n" in text else "\n"  # CPython counts a last CRLF line's end
    crlf_end = text.endswith("\r\n")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = io.StringIO(text).readlines()
    last_row = len(lines) + crlf_end
    try:
        return _parsed(source, text, lines, filename, raw, ending)
    except SyntaxError as exc:
        if not exc.msg.startswith(_UNTERMINATED):
            raise
        # CPython's tokenizer reads such a string to the file's end, and names the line there
        # (a last line ended by CRLF counts once more); a part of the file names its own end.
        message = f"{_UNTERMINATED} (detected at line {last_row})"
        raise type(exc)(message, (filename, exc.lineno, exc.offset, exc.text)) from None


_UNTERMINATED = "unterminated triple-quoted string literal"


def _parsed(
    source: str | bytes, text: str, lines: list[str], filename: str, raw: bool, ending: str
) -> ast.Module:
    # Syntax trees hold no reference cycles: the collector, which the parts' hundreds of
    # thousands of nodes would start again and again, would find nothing (a third of the time).
    collecting = gc.isenabled()
    gc.disable()
    try:
        with warnings.catch_warnings():
            # A part's SyntaxWarning (an invalid escape) is the whole file's, told once by it.
            warnings.simplefilter("ignore", SyntaxWarning)
            try:
                logical = scanned(text)
                try:
                    module, checked = _quick(logical, lines, filename, raw, ending)
                    if module is None and not checked:
                        module = _check(text, lines, filename, raw, ending)
                except SyntaxError as exc:
                    later = _later_tokenizer_error(exc, text, logical, lines, filename, raw, ending)
                    if later is not None:
                        raise later from None
                    raise
            except Unsplittable:
                module = None
        return ast.parse(source, filename) if module is None else module
    finally:
        if collecting:
            gc.enable()


def _quick(
    logical: list[Logical] | None, lines: list[str], filename: str, raw: bool, ending: str
) -> tuple[ast.Module | None, bool]:
    """The file's tree from the parts :func:`scanned` cuts, and whether every part parsed;
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


def _check(text: str, lines: list[str], filename: str, raw: bool, ending: str) -> ast.Module | None:
    """Raise the first part's syntax error, if any part of the file has one; else the file's
    tree when its top-level parts give it (none had to be split), or None."""
    logical, failure = logical_lines(text, lines, filename)
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


def _bad_name(exc: SyntaxError) -> bool:
    """Whether ``exc`` is a name's bytes that are not UTF-8 (the error points at the byte): the
    parser stops there at once, and CPython looks at nothing after it. (A string's bytes that
    are not UTF-8 point past the string, and the rest of the file is read as after any parser
    error.)"""
    text, offset = exc.text, exc.offset
    return (
        exc.msg.startswith("(unicode error)")
        and text is not None
        and offset is not None
        and 0 < offset <= len(text)
        and text[offset - 1] == "\ufffd"
    )


class _Found(PpauxError):
    """The tokenizer's error of a later part (see :func:`_later_tokenizer_error`)."""

    def __init__(self, error: SyntaxError) -> None:
        super().__init__(error.msg)
        self.error = error


def _later_tokenizer_error(
    exc: SyntaxError,
    text: str,
    scanned: list[Logical] | None,
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
    if exc.lineno is None or exc.msg.startswith(_TOKENIZER_ERRORS) or _bad_name(exc):
        return None
    logical = scanned
    failure = None
    if logical is None:
        logical, failure = logical_lines(text, lines, filename)
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


class _Checker:
    """Parses a file's statements in bounded parts; raises the first part's syntax error."""

    def __init__(
        self,
        lines: list[str],
        logical: list[Logical],
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

        def check_bodies(before: int) -> dict[int, list[ast.stmt] | None]:
            """Check the bodies that start before row ``before``; their trees, by clause."""
            out: dict[int, list[ast.stmt] | None] = {}
            spans = []
            clause_of: dict[int, int] = {}
            for k, (header, body_start, body_stop) in enumerate(statement.clauses):
                if body_start >= body_stop or self.logical[body_start].start >= before:
                    continue
                following = statement.clauses[k + 1][0] if k + 1 < len(statement.clauses) else None
                last = self.logical[following].start - 1 if following is not None else end_row
                spans.append((header, body_start, body_stop, last))
                clause_of[body_start] = k
            if self.scan_after is None:
                if self.keep:  # bodies parsed together first, their trees shared out
                    done = self.grouped(spans)
                    out.update((clause_of[b], trees) for b, trees in done.items())
                    spans = [span for span in spans if span[1] not in done]
                else:  # no trees wanted: bodies parsed together first
                    spans = self.unchecked(spans)
            for header, body_start, body_stop, last in spans:
                first_row = self.logical[body_start].start
                inner = self.logical[body_start].depth
                word = self.logical[header].word
                self.bodies.append((_indentation(self.lines[first_row - 1]), first_row, word))
                try:
                    trees = self.block(body_start, body_stop, first_row, last, inner)
                finally:
                    self.bodies.pop()
                out[clause_of[body_start]] = trees
            return out

        try:
            skeleton = None
            if (
                self.keep
                and self.scan_after is None
                and len(statement.clauses) > 1
                and self.size(begin, end_row) > CHUNK_BYTES
            ):
                skeleton = self.skeleton_parts(statement, text, begin, depth, end_row)
            if skeleton is None:
                skeleton = self.parse_text("".join(text), begin, depth, end_row + 1)
        except (SyntaxError, _Found) as exc:
            # A body before the failing header fails first in CPython's reading.
            error = exc.error if isinstance(exc, _Found) else exc
            check_bodies(error.lineno or 0)
            raise
        if not skeleton:  # only where the parts after an error are scanned
            return None
        bodies = check_bodies(end_row + 1)
        if not self.keep or len(skeleton) != 1:
            return None
        words = [self.logical[header].word for header, _, _ in statement.clauses]
        return None if not self.put_back(skeleton[0], words, bodies) else skeleton

    def statement_end(self, last: ast.stmt) -> tuple[int | None, int | None]:
        """Where a compound statement whose body ends with ``last`` ends, as CPython says: at
        its last token, which is a ``;`` that follows ``last`` on its logical line, if any."""
        row, column = last.end_lineno, last.end_col_offset
        if row is None or column is None:
            return row, column
        while row <= len(self.lines):
            rest = self.lines[row - 1].encode("utf-8", "surrogateescape")[column:]
            found = _AFTER_STATEMENT.match(rest)
            if found is None:
                break
            if found.group(1):  # the ``;``
                return row, column + found.end()
            if not found.group(2):  # a backslash: the logical line goes on
                break
            row, column = row + 1, 0
        return last.end_lineno, last.end_col_offset

    def skeleton_parts(
        self, statement: _Statement, rows: list[str], begin: int, depth: int, end_row: int
    ) -> list[ast.stmt] | None:
        """A large skeleton of several clauses (``rows``, from the file's row ``begin``) parsed
        in parts of whole clauses, up to :data:`CHUNK_BYTES` each, a part after the first behind
        a one-line stand-in for the clauses before it (``try: pass``, ``if 1: pass``), on the
        rows before its own; the clauses' nodes put together. None where a part fails, or the
        parts cannot be put together as the parser would (a bare ``except`` before others,
        ``except`` with ``except*``): then the whole skeleton is parsed, which says why."""
        clauses = statement.clauses
        starts = [self.logical[header].start for header, _, _ in clauses]
        sizes = [0]
        for row in rows:
            sizes.append(sizes[-1] + len(row))

        def size(first_row: int, last_row: int) -> int:
            top = min(last_row - begin + 1, len(rows))
            return sizes[max(top, 0)] - sizes[min(first_row - begin, len(rows))]

        groups: list[tuple[int, int]] = []  # clause index ranges [a, b)
        first = 0
        # A ``try`` is not a statement without the clause after it.
        for k in range(2 if self.logical[clauses[0][0]].word == "try" else 1, len(clauses)):
            last_row = starts[k + 1] - 1 if k + 1 < len(clauses) else end_row
            if size(begin if first == 0 else starts[first], last_row) > CHUNK_BYTES:
                groups.append((first, k))
                first = k
        groups.append((first, len(clauses)))
        node: ast.stmt | None = None
        for a, b in groups:
            first_row = begin if a == 0 else starts[a]
            last_row = starts[b] - 1 if b < len(clauses) else end_row
            text = rows[first_row - begin : last_row - begin + 1]
            stand_ins = 0
            if node is not None:
                indent = _indentation(self.lines[first_row - 1])
                lead = _stand_in(node, self.logical[clauses[a][0]].word, indent)
                if lead is None or first_row - len(lead) < begin:
                    return None
                text = lead + text
                stand_ins = len(lead)
                first_row -= stand_ins
            try:
                trees = self.parse_text("".join(text), first_row, depth, last_row + 1)
            except (SyntaxError, _Found, ValueError, MemoryError, RecursionError):
                return None
            if len(trees) != 1:
                return None
            if node is None:
                node = trees[0]
            elif not _joined_clauses(node, trees[0], stand_ins):
                return None
        return None if node is None else [node]

    def put_back(
        self, node: ast.stmt, words: list[str], bodies: dict[int, list[ast.stmt] | None]
    ) -> bool:
        """Put the clauses' bodies (by clause; a clause not there keeps the skeleton's, its
        body on its header's line) into the skeleton's ``node``, and end each clause, and the
        statement, where CPython does: at its body's last token. False where it cannot be."""
        slots = _clause_slots(node, words)
        if slots is None:
            return False
        ends: list[tuple[int | None, int | None]] = []
        for k, (owner, field) in enumerate(slots):
            body = bodies.get(k, getattr(owner, field))
            if not body:
                return False
            setattr(owner, field, body)
            ends.append(self.statement_end(body[-1]))
            if isinstance(owner, ast.ExceptHandler):
                owner.end_lineno, owner.end_col_offset = ends[-1]
        for owner, _ in slots:
            if isinstance(owner, ast.If):  # an ``elif`` runs to the end of the statement
                owner.end_lineno, owner.end_col_offset = ends[-1]
        node.end_lineno, node.end_col_offset = ends[-1]
        return True

    def grouped(self, spans: list[tuple[int, int, int, int]]) -> dict[int, list[ast.stmt]]:
        """Of a split statement's bodies (header, body start, body stop, last row), the trees
        of those parsed together, by body start: bodies indented alike, up to
        :data:`CHUNK_BYTES` at a time, parsed as one block on the file's rows, the rows between
        them blank (a statement of 40,000 ``except`` clauses is then a few dozen parses, not
        40,000). A group that fails is left out, to be checked body by body, which names the
        error as CPython does."""
        done: dict[int, list[ast.stmt]] = {}
        group: list[tuple[int, int, int, int]] = []
        size = 0

        def flush() -> None:
            if not group:
                return
            header, body_start = group[0][0], group[0][1]
            first_row = self.logical[body_start].start
            rows = ["\n"] * (group[-1][3] - first_row + 1)
            for _, start, _, last in group:
                begin = self.logical[start].start
                rows[begin - first_row : last - first_row + 1] = self.lines[begin - 1 : last]
            indent = _indentation(self.lines[first_row - 1])
            self.bodies.append((indent, first_row, self.logical[header].word))
            try:
                trees = self.parse_text(
                    "".join(rows), first_row, self.logical[body_start].depth, group[-1][3] + 1
                )
            except (SyntaxError, ValueError, MemoryError, RecursionError):
                trees = None
            finally:
                self.bodies.pop()
            if trees is not None:
                for _, start, _, _ in reversed(group):
                    cut = len(trees)
                    while cut and trees[cut - 1].lineno >= self.logical[start].start:
                        cut -= 1
                    done[start], trees = trees[cut:], trees[:cut]
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
                size = 0
                continue
            if not alike or size + body_size > CHUNK_BYTES:
                flush()
                size = 0
            group.append(span)
            size += body_size
        flush()
        return done

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
        padding = "\n" * max(0, first_row - 1 - len(head))
        if self.keep and len(padding) <= _PADDING_PER_BYTE * len(text):
            # Parsed on the file's lines: blank lines cost the tokenizer far less than moving
            # each node does (ast.increment_lineno), up to a few per byte of the part.
            try:
                tree = ast.parse(self.source(padding + wrapper + text), self.filename)
            except SyntaxError as exc:
                raise self.file_error(padding + wrapper + text, next_row, exc) from None
            return _unwrapped(tree, depth, opened)
        try:
            tree = ast.parse(self.source(wrapper + text), self.filename)
        except SyntaxError:
            pass  # again with the file's lines, so that the message names them (below)
        else:
            if self.keep:
                ast.increment_lineno(tree, first_row - 1 - len(head))
            return _unwrapped(tree, depth, opened)
        try:
            tree = ast.parse(self.source(padding + wrapper + text), self.filename)
        except SyntaxError as exc:
            raise self.file_error(padding + wrapper + text, next_row, exc) from None
        return _unwrapped(tree, depth, opened)

    def file_error(self, text: str, next_row: int, exc: SyntaxError) -> SyntaxError:
        """The error of ``text`` (a part behind blank lines) as the file gives it."""
        error = self.with_following(text, next_row, exc)
        return type(error)(error.msg, (self.filename, error.lineno, error.offset, error.text))

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


# What may follow a statement on its line (in UTF-8 bytes, as columns count): a ``;``, or a
# backslash that continues the logical line on the next.
_AFTER_STATEMENT = re.compile(rb"[ \t\f]*(?:(;)|(\\)\r?\n?$)")

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
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


def _stand_in(node: ast.stmt, word: str, indent: str) -> list[str] | None:
    """The line(s) that stand for a statement's clauses before one starting with ``word``."""
    if isinstance(node, ast.If) and word in ("elif", "else"):
        return [f"{indent}if 1: pass\n"]
    if isinstance(node, ast.While) and word == "else":
        return [f"{indent}while 0: pass\n"]
    if isinstance(node, ast.For) and word == "else":
        return [f"{indent}for _ in (): pass\n"]
    if isinstance(node, (ast.Try, ast.TryStar)):
        if word in ("except", "finally"):
            return [f"{indent}try: pass\n"]
        if word == "else":
            star = "*" if isinstance(node, ast.TryStar) else ""
            return [f"{indent}try: pass\n", f"{indent}except{star} BaseException: pass\n"]
    return None


def _joined_clauses(node: ast.stmt, more: ast.stmt, lead: int) -> bool:
    """Add to ``node`` the clauses of ``more`` (a part parsed behind ``lead`` stand-in lines,
    see :func:`_stand_in`); False where the parser would not have joined them so."""
    if type(more) is not type(node):
        return False
    if isinstance(node, ast.If) and isinstance(more, ast.If):
        tail = node
        # An ``elif`` stands where its ``if`` does; an ``if`` first in an ``else`` body deeper.
        while (
            len(tail.orelse) == 1
            and isinstance(tail.orelse[0], ast.If)
            and tail.orelse[0].col_offset == node.col_offset
        ):
            tail = tail.orelse[0]
        if tail.orelse:
            return False
        tail.orelse = more.orelse
        return True
    if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
        assert isinstance(more, (ast.For, ast.AsyncFor, ast.While))
        if node.orelse:
            return False
        node.orelse = more.orelse
        return True
    if isinstance(node, (ast.Try, ast.TryStar)) and isinstance(more, (ast.Try, ast.TryStar)):
        handlers = more.handlers[1:] if lead == 2 else more.handlers
        if node.finalbody or (node.orelse and (handlers or more.orelse)):
            return False
        node.handlers = node.handlers + handlers
        node.orelse = node.orelse or more.orelse
        node.finalbody = more.finalbody
        return True
    return False


def _clause_slots(node: ast.stmt, words: list[str]) -> list[tuple[ast.AST, str]] | None:
    """Where each clause's body goes in a compound statement's ``node``: (owner, field), in
    the clauses' order (``words``: their headers' first words); None where they do not fit."""
    slots: list[tuple[ast.AST, str]] = [(node, "body")]
    handlers = iter(node.handlers) if isinstance(node, (ast.Try, ast.TryStar)) else iter(())
    current: ast.stmt = node
    for word in words[1:]:
        if word == "elif" and isinstance(current, ast.If) and len(current.orelse) == 1:
            inner = current.orelse[0]
            if not isinstance(inner, ast.If):
                return None
            slots.append((inner, "body"))
            current = inner
        elif word == "except":
            handler = next(handlers, None)
            if handler is None:
                return None
            slots.append((handler, "body"))
        elif word == "else" and isinstance(current, (*_LOOPS, ast.If, ast.Try, ast.TryStar)):
            slots.append((current, "orelse"))
        elif word == "finally" and isinstance(node, (ast.Try, ast.TryStar)):
            slots.append((node, "finalbody"))
        else:
            return None
    if not isinstance(node, (*_ONE_BODY, ast.Try, ast.TryStar)):
        return None
    return slots


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
