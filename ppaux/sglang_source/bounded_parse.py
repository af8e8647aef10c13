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
larger than that (a class or function of a megabyte, a ``try`` of thousands of ``except``
clauses) is checked as its skeleton, each body replaced by ``pass`` (in parts of whole clauses
where the skeleton is itself large), and its bodies are cut the same way, down to single
statements (:mod:`.clause_split`). When every part parses, the file's tree is the
parts' trees put back together, each on the file's lines (:mod:`.statement_parts`).

A part that fails raises the parser's own ``SyntaxError`` with the line moved to the file's
line, and read as CPython reads the whole file: a body's part inside wrappers that give the
tokenizer the file's indentation, the file's bytes where they are not all UTF-8, the text that
follows the failing part, and the parts after it when CPython would name a later tokenizer
error instead. A logical line longer than :data:`CHUNK_BYTES` cannot be cut: one of more than
:data:`MAX_STATEMENT_TOKENS` tokens is refused (:class:`StatementTooLarge`) before any parser
sees it, a shorter one is parsed whole, as is a ``match`` statement (its ``case`` clauses are
not statements) and a file where a statement starts on a line holding only a backslash (or
where such a line stops :mod:`tokenize`), whose indentation :mod:`tokenize` does not read as
CPython's tokenizer does; a text the tokenizer cannot finish (a bracket or a triple-quoted
string left open to the end) is reported from at most :data:`CHUNK_BYTES` of the text from
the statement where it stopped (cut where as many brackets are open as at the file's end), its
"detected at" line the file's last.
"""

from __future__ import annotations

import ast
import gc
import io
import sys
import warnings
from collections.abc import Callable

from ppaux.sglang_source.clause_split import Checker
from ppaux.sglang_source.logical_lines import (
    MAX_STATEMENT_TOKENS,
    PART_BYTES,
    Logical,
    StatementTooLarge,
    Unsplittable,
    decoded,
    indentation_error,
    logical_lines,
    scanned,
)
from ppaux.sglang_source.statement_parts import LATER_ERRORS, TOKENIZER_ERRORS, Found

__all__ = ["CHUNK_BYTES", "MAX_STATEMENT_TOKENS", "StatementTooLarge", "parse_source"]

#: Most text of a file handed to CPython's parser before the file is known to be valid Python.
CHUNK_BYTES = PART_BYTES


def parse_source(
    source: str | bytes, filename: str = "<unknown>", max_tokens: int = MAX_STATEMENT_TOKENS
) -> ast.Module:
    """``ast.parse(source, filename)``, with the parser never given a large invalid text.

    Raises what ``ast.parse`` raises (``SyntaxError``, ``ValueError``, ``RecursionError``,
    ``MemoryError``), and :class:`StatementTooLarge` for a logical line longer than
    :data:`CHUNK_BYTES` of more than ``max_tokens`` tokens; a syntax error's line is the file's
    line.
    """
    has_nul = b"\0" in source if isinstance(source, bytes) else "\0" in source
    if len(source) <= CHUNK_BYTES or has_nul:
        return ast.parse(source, filename)  # small, or refused before any parsing (NUL)
    text, raw = decoded(source, filename) if isinstance(source, bytes) else (source, False)
    ending = "\r\n" if text.endswith("\r\n") else "\n"  # CPython counts a last CRLF line's end
    crlf_end = text.endswith("\r\n")
    continued = text.endswith("\\\r\n")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = io.StringIO(text).readlines()
    last_row = len(lines) + crlf_end
    if continued:
        # CPython reads a backslash and CRLF at the file's end as continued onto one more,
        # empty line (the file is valid), where a backslash and LF there meet the file's end;
        # the lines are then counted as LF lines are.
        text += "\n"
        lines.append("\n")
        ending = "\n"
    try:
        return _parsed(source, text, lines, filename, raw, ending, max_tokens)
    except SyntaxError as exc:
        if not exc.msg.startswith(_UNTERMINATED):
            raise
        # CPython's tokenizer reads such a string to the file's end, and names the line there
        # (a last line ended by CRLF counts once more); a part of the file names its own end.
        message = f"{_UNTERMINATED} (detected at line {last_row})"
        raise type(exc)(message, (filename, exc.lineno, exc.offset, exc.text)) from None


_UNTERMINATED = "unterminated triple-quoted string literal"


def _parsed(
    source: str | bytes,
    text: str,
    lines: list[str],
    filename: str,
    raw: bool,
    ending: str,
    max_tokens: int,
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
                logical = scanned(text, max_tokens)
                tokens = _tokenized_once(text, lines, filename, max_tokens)
                try:
                    module, checked = _quick(logical, lines, filename, raw, ending)
                    if module is None and not checked:
                        module = _check(tokens, lines, filename, raw, ending)
                except SyntaxError as exc:
                    later = _later_tokenizer_error(
                        exc, logical, tokens, lines, filename, raw, ending
                    )
                    if later is not None:
                        raise later from None
                    raise
            except Unsplittable:
                module = None
        return ast.parse(source, filename) if module is None else module
    finally:
        if collecting:
            gc.enable()


_Tokens = tuple[list[Logical], "tuple[SyntaxError, bool, int] | None"]


def _tokenized_once(
    text: str, lines: list[str], filename: str, max_tokens: int
) -> Callable[[], _Tokens]:
    """:func:`logical_lines` of the file, read by :mod:`tokenize` at the first call only: the
    check of a file the scan was unsure of and the look past its first error share one pass
    (on a megabyte, over a second)."""
    memo: list[_Tokens] = []

    def tokens() -> _Tokens:
        if not memo:
            memo.append(logical_lines(text, lines, filename, max_tokens))
        return memo[0]

    return tokens


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
        checker = Checker(lines, logical, filename, raw, ending, CHUNK_BYTES)
        body = checker.block(0, len(logical), 1, len(lines), 0)
    except SyntaxError:
        if sys.version_info < (3, 12):
            # Every part before the failing one parsed, so it starts where a statement starts,
            # and before 3.12 the scan reads strings as the tokenizer does: the error is real.
            raise
        return None, False  # an f-string may nest quotes: the tokenizer's cut decides
    return (None if body is None else ast.Module(body=body, type_ignores=[])), True


def _check(
    tokens: Callable[[], _Tokens], lines: list[str], filename: str, raw: bool, ending: str
) -> ast.Module | None:
    """Raise the first part's syntax error, if any part of the file has one; else the file's
    tree when its top-level parts give it (none had to be split), or None."""
    logical, failure = tokens()
    logical, failure = _stopped_at_indentation(logical, failure, lines, filename)
    checker = Checker(lines, logical, filename, raw, ending, CHUNK_BYTES)
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


def _stopped_at_indentation(
    logical: list[Logical],
    failure: tuple[SyntaxError, bool, int] | None,
    lines: list[str],
    filename: str,
) -> tuple[list[Logical], tuple[SyntaxError, bool, int] | None]:
    """The logical lines and the tokenizer's failure as CPython's tokenizer stops: at an
    indentation error :mod:`tokenize` passes (tabs and spaces inconsistent, too many levels)
    where it comes before the failure :mod:`tokenize` found (at the start of the same line
    too: the indentation is read first)."""
    starts = [line.start for line in logical]
    bad = indentation_error(lines, starts if failure is None else [*starts, failure[2]])
    if bad is None or bad.lineno is None:
        return logical, failure
    if failure is not None and failure[2] < bad.lineno:
        return logical, failure
    error = type(bad)(bad.msg, (filename, bad.lineno, bad.offset, bad.text))
    at = next((k for k, line in enumerate(logical) if line.start == bad.lineno), None)
    if at is None:  # the line the tokenize stopped in
        return logical, (error, failure[1] if failure is not None else False, bad.lineno)
    return logical[:at], (error, logical[at].depth > 0, bad.lineno)


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


#: The parser's errors told when its first pass stops, before CPython would look past them:
#: the rest of the file is not tokenized for an error of its own.
_FIRST_PASS_ERRORS = frozenset(
    {
        "unexpected indent",
        "unexpected unindent",
        "unexpected EOF while parsing",
        # The tokenizer's own indentation errors: the parser raises them as it meets them.
        "inconsistent use of tabs and spaces in indentation",
        "unindent does not match any outer indentation level",
        "too many levels of indentation",
    }
)


def _later_tokenizer_error(
    exc: SyntaxError,
    scanned: list[Logical] | None,
    tokens: Callable[[], _Tokens],
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
    if (
        exc.lineno is None
        or exc.msg.startswith(TOKENIZER_ERRORS)
        or exc.msg in _FIRST_PASS_ERRORS
        or _bad_name(exc)
    ):
        return None
    logical = scanned
    failure = None
    if logical is None:  # the scan passes no indentation error; tokenize may
        logical, failure = tokens()
        starts = [line.start for line in logical]
        stopped = indentation_error(lines, starts if failure is None else [*starts, failure[2]])
        if stopped is not None and (stopped.lineno or 0) > exc.lineno:
            # CPython's look past the parser's error ends at the tokenizer's first error.
            logical = [line for line in logical if line.start < (stopped.lineno or 0)]
            failure = None
    checker = Checker(lines, logical, filename, raw, ending, CHUNK_BYTES)
    checker.keep = False
    checker.scan_after = exc.lineno
    try:
        if logical:
            last_row = len(lines) if failure is None else logical[-1].end
            checker.block(0, len(logical), 1, last_row, 0)
    except Found as found:
        return found.error
    except SyntaxError:
        return None
    if failure is not None and failure[0].msg.startswith(LATER_ERRORS):
        if (failure[0].lineno or 0) > exc.lineno:
            return failure[0]
    return None
