"""A compound statement too large for one part: checked as its skeleton and its bodies, in parts,
and put back together.

:class:`Checker` adds to :class:`~ppaux.sglang_source.statement_parts.PartParser` the splitting of a
large statement: its skeleton (each body replaced by ``pass``) is parsed, in parts of whole
clauses where it is itself large, then its bodies, grouped where small; the bodies' trees go
back into the skeleton's clauses (``except`` handlers, ``elif`` chains, ``else``, ``finally``),
each clause ending where CPython ends it.
"""

from __future__ import annotations

import ast
import re

from ppaux.sglang_source.statement_parts import (
    WRAPPERS,
    Found,
    PartParser,
    Statement,
    indentation,
)

__all__ = ["Checker"]


class Checker(PartParser):
    """Parses a file's statements in bounded parts, large ones split; raises the first part's
    syntax error."""

    def split(
        self, statement: Statement, begin: int, end_row: int, depth: int
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
                self.bodies.append((indentation(self.lines[first_row - 1]), first_row, word))
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
                and self.size(begin, end_row) > self.chunk
            ):
                skeleton = self.skeleton_parts(statement, text, begin, depth, end_row)
            if skeleton is None:
                skeleton = self.parse_text("".join(text), begin, depth, end_row + 1)
        except (SyntaxError, Found) as exc:
            # A body before the failing header fails first in CPython's reading.
            error = exc.error if isinstance(exc, Found) else exc
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
        self, statement: Statement, rows: list[str], begin: int, depth: int, end_row: int
    ) -> list[ast.stmt] | None:
        """A large skeleton of several clauses (``rows``, from the file's row ``begin``) parsed
        in parts of whole clauses, up to ``chunk`` bytes each, a part after the first behind
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
            if size(begin if first == 0 else starts[first], last_row) > self.chunk:
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
                indent = indentation(self.lines[first_row - 1])
                lead = _stand_in(node, self.logical[clauses[a][0]].word, indent)
                if lead is None or first_row - len(lead) < begin:
                    return None
                text = lead + text
                stand_ins = len(lead)
                first_row -= stand_ins
            try:
                trees = self.parse_text("".join(text), first_row, depth, last_row + 1)
            except (SyntaxError, Found, ValueError, MemoryError, RecursionError):
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
        ``chunk`` bytes at a time, parsed as one block on the file's rows, the rows between
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
            indent = indentation(self.lines[first_row - 1])
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
            alike = not group or indentation(self.lines[first_row - 1]) == indentation(
                self.lines[self.logical[group[0][1]].start - 1]
            )
            if body_size > self.chunk:
                flush()
                size = 0
                continue
            if not alike or size + body_size > self.chunk:
                flush()
                size = 0
            group.append(span)
            size += body_size
        flush()
        return done

    def unchecked(self, spans: list[tuple[int, int, int, int]]) -> list[tuple[int, int, int, int]]:
        """Of a split statement's bodies (header, body start, body stop, last row), those still
        to check one by one: bodies indented alike are parsed together, up to
        ``chunk`` bytes at a time, as one block (a statement of 40,000 ``except`` clauses
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
                f"{ind}{WRAPPERS.get(word, 'if 1:')}\n"
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
            alike = not group or indentation(self.lines[first_row - 1]) == indentation(
                self.lines[self.logical[group[0][1]].start - 1]
            )
            if body_size > self.chunk:
                flush()
                left.append(span)
                continue
            if not alike or size + body_size > self.chunk:
                flush()
                size = 0
            group.append(span)
            size += body_size
        flush()
        return left


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
