"""Logs whose lines end in a carriage return alone (classic Mac OS, some terminal captures and
serial consoles): read with each lone ``\\r`` as a line's end.

A file is read so where its first 64 KiB hold at least one lone ``\\r`` and no ``\\n``, or at
least three lone ``\\r`` and at most two ``\\n`` (a banner line written with a newline, a
newline put at the file's end): in a log whose lines end in ``\\n``, a ``\\r`` inside a line is
a progress bar redrawn over itself (the line is what the terminal showed), and is left as it is.
A ``\\r`` that ends a tqdm update (``... [00:01<00:09, 3.2it/s]``), or that opens the file or a
line before one (tqdm's first draw), is such a redraw and is no line's end in that count: a bar
redrawn, then a record, on one line is one line. A ``\\r\\n`` is one line's end either way.
"""

from __future__ import annotations

import io
from typing import Any, BinaryIO, cast

from ppaux.patterns import lazy
from ppaux.triage.rechunked import Rechunked

__all__ = ["CR_HEAD", "cr_ended", "cr_lines"]

#: How much of a log decides whether its lines end in ``\r`` alone.
CR_HEAD = 1 << 16
#: A carriage return that no newline follows.
_LONE_CR = lazy(rb"\r(?!\n)")
#: At most this many newlines (a banner line, a newline at the file's end) beside at least
#: :data:`_MANY_CRS` lone carriage returns still make a log whose lines end in ``\r``.
_FEW_NEWLINES = 2
_MANY_CRS = 3
#: The end of tqdm's update: ``[elapsed<remaining, rate, postfix]`` (``[elapsed, rate]`` where
#: the total is unknown); a ``\r`` after it is the bar redrawn, not a line's end.
_BAR_UPDATE_END = lazy(
    rb"\[(?:\d{1,6}:)?\d\d:\d\d(?:<(?:(?:\d{1,6}:)?\d\d:\d\d|\?))?(?:,[^\r\n\[\]]{0,300})?\]\Z"
)
#: Bytes before a lone ``\r`` that its bar's closing bracket may take.
_BAR_REACH = 400


def cr_ended(head: bytes) -> bool:
    """True when ``head`` (a log's first bytes, up to :data:`CR_HEAD`) has lines that end in
    ``\\r`` alone: a lone ``\\r`` and no ``\\n``, or three lone ones and at most two ``\\n``,
    counting no ``\\r`` of a progress bar's redraw."""
    newlines = head.count(b"\n")
    if newlines > _FEW_NEWLINES or b"\r" not in head:
        return False
    pieces = _LONE_CR.split(head)  # the text each lone '\r' ends, then the rest
    lone = sum(1 for at in range(len(pieces) - 1) if not _redraw(pieces, at))
    return lone >= (1 if newlines == 0 else _MANY_CRS)


def _redraw(pieces: list[bytes], at: int) -> bool:
    """Whether the lone ``\\r`` after ``pieces[at]`` redraws a progress bar: it ends a tqdm
    update, or it opens the file or a ``\\n``-ended line and one follows (tqdm's first draw)."""
    piece = pieces[at]
    if _bar_update(piece):
        return True
    opens = (at == 0 or b"\n" in piece) and not piece.rsplit(b"\n", 1)[-1]
    return opens and _bar_update(pieces[at + 1])


def _bar_update(piece: bytes) -> bool:
    return _BAR_UPDATE_END.search(piece[-_BAR_REACH:]) is not None


class _CrLines(Rechunked):
    """``inner``'s bytes with each lone ``\\r`` made a ``\\n`` (one byte for one, so every
    line keeps its place)."""

    def __init__(self, inner: io.BufferedReader) -> None:
        super().__init__(inner)
        self.inner = inner
        self._carry = b""  # a '\r' at the end of a chunk: a '\n' may open the next

    def chunk(self) -> bytes | None:
        data = self.inner.read(1 << 20)
        if not data:
            if not self._carry:
                return None
            self._carry = b""
            return b"\n"
        data, self._carry = self._carry + data, b""
        if data.endswith(b"\r"):
            data, self._carry = data[:-1], b"\r"
        return _LONE_CR.sub(b"\n", data)


def cr_lines(stream: BinaryIO) -> BinaryIO:
    """``stream`` read with lone ``\\r`` as line ends where its head says its lines end so
    (:func:`cr_ended`), else ``stream`` itself, its head kept for the readers after it."""
    buffered = io.BufferedReader(cast(Any, stream), buffer_size=1 << 20)
    if not cr_ended(buffered.peek(CR_HEAD)[:CR_HEAD]):
        return cast(BinaryIO, buffered)
    return cast(BinaryIO, io.BufferedReader(_CrLines(buffered), buffer_size=1 << 20))
