"""Pastes hard-wrapped at a terminal's width, joined back by content.

A log copied from a terminal multiplexer or a web console arrives with every long line cut at
the window's width and continued at column 0 of the next line: a frame line split inside its
function name, a traceback header broken after ``(most recent``, an exception message broken
mid-word. Read as it is, the pieces are no longer frames or messages.

The shape says when a paste was wrapped: its head holds no line longer than some width ``W``,
and several lines exactly ``W`` characters long are followed by a line that does not start a
record of its own, each run of them ending in a shorter line (a wrapped line's last piece).
:func:`wrap_width` finds ``W`` from the head; :class:`Unwrapped` then joins
each line of exactly ``W`` characters with the line after it, unless that line starts a record
(a sglang prefix, a frame, a traceback header, a timestamp, a level, a launcher's
``(Name pid=N)``, the same three
characters as the line before it: rows of a table alike in length, a launcher's label of
another process (``0 : `` after ``1 : ``), or the same two marks: a
quote's ``> `` or an indentation the paste put before every line, or an exception line after
a row that cannot end inside a word: a traceback's code line, a ``^^^`` marker, a closing
bracket). A frame line cut at the
space before its function name, that space trimmed (a row one short of ``W``), is joined to the
name with the space put back. Line numbers stay the file's: :meth:`Unwrapped.physical` maps a
joined line's number back to its first piece's.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from itertools import pairwise
from typing import BinaryIO

from ppaux.patterns import lazy
from ppaux.triage.linestream import LineStream

__all__ = ["Unwrapped", "wrap_width"]

#: Narrowest and widest widths taken for a terminal's (a narrower "width" is a column of data,
#: or lines of source code alike in length).
_MIN_WIDTH = 60
_MAX_WIDTH = 400
#: Lines exactly the width followed by a continuation, at the least, to call a paste wrapped.
_MIN_WRAPPED = 2
#: The longest run of pieces joined into one line (a longer run is a column of data).
_MAX_PIECES = 64

#: What starts a record of its own: never joined to the line before it.
_STARTS = lazy(
    r"(?:\s*File \"|\s*Traceback \(|\s*During handling|\s*The above exception|[\[{]"
    r"|\d{4}-\d\d-\d\d[ T]|\d\d:\d\d:\d\d|(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)\b|[IWEF]\d{4} "
    # a launcher's name of the process (Ray's and vLLM's ``(VllmWorker rank=7 pid=1030) ``)
    r"|\([^()\n]{0,120}\bpid=\d{1,9}[^()\n]{0,120}\) )"
)
#: A launcher's label of the process a line is from (``0 : ``, ``12: ``): a line behind one
#: starts a record of its own after a line behind another.
_LABEL = lazy(r"\d{1,6} ?: ")
#: A row ending in the start of a dotted name of two parts or more (``torch.distributed.``).
_DOTTED_END = lazy(r"(?:^|\s)(?:[A-Za-z_]\w*\.){2,}$")
#: A line that holds only a prefix (``(Worker pid=N) ERROR <time> [file.py:N]``), no message;
#: the space after the prefix kept where the width fell right after it.
_PREFIX_ONLY = lazy(r"\S\] ?$")
#: A whole frame line: the indented code line after it is its own line.
_FRAME = lazy(r'\s*File ".*", line \d+, in \S+$')
#: A frame line cut at the space before its function name, that space trimmed (what tmux's
#: ``capture-pane`` and screen's hardcopy write): never whole, its function name comes next.
_CUT_FRAME = lazy(r'File ".*", line \d+, in$')


#: An exception line: a dotted name ending as exception classes do, then a colon or nothing.
_RAISED = lazy(
    r"(?:[A-Za-z_]\w{0,100}\.){0,10}[A-Za-z_]\w{0,100}"
    r"(?:Error|Exception|Interrupt|Exit|Failure|Fault|Timeout|Abort)(?::|$)"
)


def _word_cut(line: str) -> bool:
    """Whether the cut after ``line`` may fall inside a word (a word
    character on each side, and ``line`` not a traceback's indented code line or whole frame)."""
    end = line[-1:]
    return (
        (end.isalnum() or end == "_")
        and not line.startswith("    ")
        and _FRAME.match(line) is None  # a whole frame line, its source not shown
    )


def _continues(line: str, following: str) -> bool:
    """Whether ``following`` carries on ``line`` (cut at the width) rather than starting anew."""
    if line.rstrip(" ").endswith(" exception:") and following.lstrip(" ").startswith(
        "Traceback (m"
    ):
        return True  # sglang's 'hit an exception: Traceback (most ...' cut at its space
    if _RAISED.match(following) is not None and _DOTTED_END.search(line) is not None:
        return True  # an exception's module path cut after one of its dots
    if _RAISED.match(following) is not None and not _word_cut(line):
        return False  # an exception line after a row that happens to be the width long
    if _PREFIX_ONLY.search(line) is not None and following[:1].isspace():
        return True  # a launcher's or logger's prefix that filled the width, its message next
    if not following or _STARTS.match(following) or following[:3] == line[:3]:
        return False  # a record of its own: of a known start, or opening as the line did
    if _LABEL.match(line) is not None and _LABEL.match(following) is not None:
        return False  # two processes' lines, each behind its label ('0 : ', '1 : ')
    if following[:2] == line[:2] and not any(c.isalnum() for c in line[:2]):
        return False  # the paste's own mark on every line ('> ', an indentation): a line of its own
    return not (_FRAME.match(line) and following[:1].isspace())


def _cut_frame(line: bytes) -> bool:
    """Whether ``line`` is a frame line cut at the space before its function name."""
    if not line.endswith(b", in"):
        return False
    text = line.decode("utf-8", "replace")
    start = text.rfind('File "')
    return start >= 0 and _CUT_FRAME.match(text, start) is not None


def wrap_width(head: bytes) -> int | None:
    """The width at which the paste in ``head`` was hard-wrapped, or None if it was not."""
    lines = head.decode("utf-8", "replace").split("\n")[:-1]  # the last may be cut
    lines = [line.rstrip("\r") for line in lines]
    if len(lines) < 2 * _MIN_WRAPPED:
        return None
    width = max(len(line) for line in lines)
    if not _MIN_WIDTH <= width <= _MAX_WIDTH:
        return None
    # A wrapped line's last piece is shorter than the width (exactly as long only by chance;
    # a console that pads its rows to the width pads it with blanks):
    # a run of rows each the width long that "continue" one another and end at a row as long
    # (one line repeated, rows of equal length) is no evidence of wrapping.
    wrapped = run = 0
    for line, following in pairwise(lines):
        if len(line) == width and _continues(line, following):
            run += 1
            continue
        if run and len(line.rstrip()) < width:
            wrapped += run
        run = 0
    if run and len(lines[-1].rstrip()) < width:
        wrapped += run
    return width if wrapped >= _MIN_WRAPPED else None


def _body(line: bytes) -> bytes:
    """``line`` without its line end (``\\n`` or ``\\r\\n``)."""
    if line.endswith(b"\r\n"):
        return line[:-2]
    return line[:-1] if line.endswith(b"\n") else line


class Unwrapped(LineStream):
    """``inner``'s lines with each one cut at ``width`` joined to its continuation."""

    def __init__(self, inner: BinaryIO, width: int, max_line: int) -> None:
        super().__init__(inner, max_line)
        self._width = width
        self._pending: bytes | None = None  # the line read ahead
        self._line = 0  # lines given out
        self._joined = array("q")  # numbers of the lines given out that hold joined pieces
        self._extra = array("q")  # pieces joined up to and including each of those lines

    def physical(self, number: int) -> int:
        """The file's number of the first piece of the line given out as ``number``."""
        before = bisect_left(self._joined, number)
        return number + (self._extra[before - 1] if before else 0)

    def _next(self) -> bytes:
        if self._pending is not None:
            line, self._pending = self._pending, None
            return line
        return self._read_line()

    def _line_out(self) -> bytes | None:
        line = self._next()
        if not line:
            return None
        pieces = 1
        last = line  # the last piece: cut at the width when another follows
        while pieces < _MAX_PIECES and len(line) <= self._max_line:
            body = _body(line)
            piece = _body(last).decode("utf-8", "replace")
            if not last.endswith(b"\n"):
                break
            trimmed = len(piece) == self._width - 1 and _cut_frame(body)
            if len(piece) != self._width and not trimmed:
                break
            following = self._next()
            text = _body(following).decode("utf-8", "replace")
            if not _continues(body.decode("utf-8", "replace"), text):
                self._pending = following or None
                break
            line, last = body + (b" " if trimmed else b"") + following, following
            pieces += 1
        self._line += 1
        if pieces > 1:
            self._joined.append(self._line)
            self._extra.append((self._extra[-1] if self._extra else 0) + pieces - 1)
        return line
