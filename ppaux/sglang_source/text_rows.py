"""The lines of a source file that may spell a word, read from its bytes before any parse: the
analysis's walks look only at the nodes on them (a syntax tree's node lies on the lines of its
tokens), which makes a walk for a few names cost what those lines hold, not the whole file.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_left
from collections.abc import Sequence

__all__ = ["first_line", "on_rows", "rows_naming", "spans_a_row"]

#: A run of bytes that are not ASCII.
_NOT_ASCII = re.compile(rb"[\x80-\xff]+")


def rows_naming(data: bytes | None, words: tuple[str, ...]) -> list[int] | None:
    """The lines (1-based, sorted) on which a file without a coding declaration may spell one of
    ``words`` (ASCII): those that hold one as text, and those that hold a byte that is not ASCII
    (an identifier's characters that NFKC makes ASCII ones). None for a file whose first two
    lines say ``coding`` (its codec may spell a word in any bytes), or no file. Lines end as
    CPython's tokenizer ends them: LF, CRLF or CR."""
    if data is None:
        return None
    text = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    if b"coding" in b"\n".join(text.split(b"\n", 2)[:2]):
        return None
    places = [match.start() for match in _NOT_ASCII.finditer(text)]
    for word in words:
        spelled = word.encode("ascii")
        at = text.find(spelled)
        while at >= 0:
            places.append(at)
            at = text.find(spelled, at + len(spelled))
    rows: list[int] = []
    row, counted = 1, 0
    for place in sorted(places):
        row += text.count(b"\n", counted, place)
        counted = place
        if not rows or rows[-1] != row:
            rows.append(row)
    return rows


def spans_a_row(node: ast.AST, rows: Sequence[int]) -> bool:
    """Whether ``node``'s lines hold one of ``rows`` (True for a node without lines)."""
    first = getattr(node, "lineno", None)
    last = getattr(node, "end_lineno", None)
    if first is None or last is None:
        return True
    decorators = getattr(node, "decorator_list", None)
    if decorators:
        first = min(first, *(d.lineno for d in decorators))
    at = bisect_left(rows, first)
    return at < len(rows) and rows[at] <= last


def on_rows(body: Sequence[ast.AST], rows: Sequence[int] | None) -> list[ast.AST]:
    """Those of the statements ``body`` (one after another, as a body holds them) whose lines
    hold one of ``rows`` (all when None): found from the rows, a few bisections each, not by
    looking at every statement of a long body."""
    if rows is None:
        return list(body)
    ends = [getattr(statement, "end_lineno", None) or 0 for statement in body]
    kept: dict[int, None] = {}
    for row in rows:
        at = bisect_left(ends, row)
        while at < len(body) and first_line(body[at]) <= row:
            kept[at] = None
            at += 1
    return [body[at] for at in sorted(kept)]


def first_line(node: ast.AST) -> int:
    """The first line of a statement, its first decorator's where it has decorators."""
    first: int = getattr(node, "lineno", 0)
    decorators = getattr(node, "decorator_list", None)
    if decorators:
        first = min(first, *(d.lineno for d in decorators))
    return first
