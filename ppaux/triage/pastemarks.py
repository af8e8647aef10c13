"""Marks a paste put before every one of its lines, peeled off as an envelope of the paste.

A log quoted in a reply or an e-mail arrives with ``> `` (or ``>> ``, ``> > ``) before every
line (and a Markdown list's ``- `` behind the quote where every line is an item of one); one
carried in Markdown's indented code block or an e-mail with the same indentation
before every line. Read as they are, the marks hide what opens each line: an exception line is
no longer at a frame's indentation, and a terminal-wrapped row's continuation opens with the
same mark as the row before it.

:func:`paste_mark` tells the mark from the head: a quote when at least four lines of the head
open with ``>`` and they outnumber the lines that hold text and do not (a reply's own words
around its quote, a blank line after it: a GitHub comment ends so; those lines are given back
as they are; the depth taken is the least of the quoted lines'), numbers when every line opens
with ``cat -n``'s consecutive numbers, an indentation when every line that is not blank opens with
the same spaces or tabs. :class:`Unmarked` gives the log's lines back without it, one line for
one, so line numbers stay the file's. An indentation is peeled before the envelope is looked
for (it would hide a runtime's or a launcher's prefix); numbers are peeled only where they hide
a terminal's wrapping (the caller's choice): a numbered paste that was not wrapped is read as
it is.
"""

from __future__ import annotations

from itertools import pairwise
from typing import BinaryIO

from ppaux.patterns import lazy
from ppaux.triage.linestream import LineStream

__all__ = ["Unmarked", "paste_mark"]

#: Lines of the head, at the least, that must carry the mark.
_MIN_LINES = 4
#: The deepest indentation taken for a paste's own (a deeper one is the log's).
_MAX_INDENT = 8
#: A quote's marks before a line: ``>`` each, followed by one space or none.
_QUOTE = lazy(rb"(?:>[ \t]?)+")
#: One quote mark.
_ONE = lazy(rb">[ \t]?")
#: A Markdown list item's marker behind the quote.
_ITEM = lazy(rb"[-*+] ")
#: ``cat -n``'s number and tab before a line.
_NUMBER = lazy(rb" {0,8}(\d{1,9})\t")


class PasteMark:
    """A quote of ``depth`` marks, ``cat -n``'s numbers (``numbered``), or an ``indent``."""

    __slots__ = ("depth", "indent", "item", "numbered")

    def __init__(
        self, depth: int = 0, indent: bytes = b"", numbered: bool = False, item: bool = False
    ) -> None:
        self.depth = depth
        self.indent = indent
        self.numbered = numbered
        #: every quoted line is also a list item (``> - ``): the item's marker is peeled too
        self.item = item

    def peel(self, line: bytes) -> bytes:
        """``line`` (one line of the log, with its line end) without the mark."""
        if self.numbered:
            number = _NUMBER.match(line)
            return line if number is None else line[number.end() :]
        if self.depth:
            start = 0
            for _ in range(self.depth):
                mark = _ONE.match(line, start)
                if mark is None:
                    break
                start = mark.end()
            if not start:  # a line outside the quote (the reply's own words, a blank line)
                return line
            if self.item:
                marker = _ITEM.match(line, start)
                start = start if marker is None else marker.end()
            return line[start:]
        return line[len(self.indent) :] if line.startswith(self.indent) else line

    def peel_head(self, head: bytes) -> bytes:
        """``head`` with the mark peeled from each of its lines."""
        return b"".join(self.peel(line) for line in head.splitlines(keepends=True))


def paste_mark(head: bytes) -> PasteMark | None:
    """The mark the paste in ``head`` puts before each line, or None."""
    lines = [line.rstrip(b"\r") for line in head.split(b"\n")[:-1]]  # the last may be cut
    if len(lines) < _MIN_LINES:
        return None
    quoted = [line for line in lines if line[:1] == b">"]
    others = sum(1 for line in lines if line[:1] != b">" and line.strip())
    if len(quoted) >= _MIN_LINES and len(quoted) > others:
        depth = min(len(_ONE.findall(_QUOTE.match(line).group())) for line in quoted)  # type: ignore[union-attr]
        quote = PasteMark(depth=depth)
        items = [_ITEM.match(quote.peel(line)) for line in quoted]
        return PasteMark(depth=depth, item=all(items))
    numbers = [_NUMBER.match(line) for line in lines]
    if all(numbers) and all(
        int(after.group(1)) == int(before.group(1)) + 1  # type: ignore[union-attr]
        for before, after in pairwise(numbers)
    ):
        return PasteMark(numbered=True)
    filled = [line for line in lines if line.strip()]
    if len(filled) < _MIN_LINES:
        return None
    first = filled[0]
    indent = first[: len(first) - len(first.lstrip(b" \t"))][:_MAX_INDENT]
    while indent and not all(line.startswith(indent) for line in filled):
        indent = indent[:-1]
    return PasteMark(indent=indent) if indent else None


class Unmarked(LineStream):
    """``inner``'s lines without ``mark``: one line given out for each line read."""

    def __init__(self, inner: BinaryIO, mark: PasteMark, max_line: int) -> None:
        super().__init__(inner, max_line)
        self._mark = mark
        self._at_start = True  # the next bytes read open a line

    def _line_out(self) -> bytes | None:
        line = self._read_line()
        if not line:
            return None
        out = self._mark.peel(line) if self._at_start else line
        self._at_start = line.endswith(b"\n")
        return out
