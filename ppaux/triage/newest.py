"""Exports written newest first, read back in the order their lines were written.

Grafana's table and CSV downloads and Loki's query API (``direction=backward``, its default)
give a log's rows newest first: a traceback's lines come bottom up, its exception before its
header, and the rank that failed first comes last. ``kubectl`` and the container runtimes never
do this. The shape says when a log was written so: the times its envelope carries (a row's
leading time, a JSON record's ``ts`` or ``timestamp``) go down from row to row in its head.
:func:`newest_first` tells it from the head; :func:`oldest_first` gives the rows back in the
order they were written, holding the log whole (bounded by ``Limits.max_log_document``, as a
JSON document is): a row is a line that starts with its time and the lines after it that do
not (a row a terminal wrapped, at any width, keeps its pieces in order).
:meth:`Reversed.physical` maps a line's number in that order back to the file's line.
"""

from __future__ import annotations

import io
from array import array
from typing import BinaryIO

from ppaux.files import read_at_most
from ppaux.patterns import lazy
from ppaux.suggestions import RaiseLimit, limit_note
from ppaux.text import byte_size
from ppaux.triage.envelopes import peel_envelope
from ppaux.triage.sources import LogOpenError

__all__ = ["Reversed", "newest_first", "oldest_first"]

#: A JSON record's epoch time member (milliseconds to nanoseconds).
_EPOCH_MEMBER = lazy(r'"(?:ts|timestamp|__REALTIME_TIMESTAMP)"\s*:\s*"?(\d{13}|\d{16}|\d{19})\b')

#: A row's leading time without a zone (Grafana's CSV and TSV downloads write the browser's
#: local time so, quoted or not; ISO 8601 without its ``Z``): read as it stands, since only
#: the order of the rows' times matters here.
_NAIVE_TIME = lazy(
    r'"?(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?(?=["\t, ]|$)'
)

#: Rows of the head whose times are compared (enough to see the order, whatever the head).
_MAX_ROWS = 2000
#: Steps down in time, at the least, to call a log newest first.
_MIN_STEPS = 3
#: Steps down per step up, at the least: logs of several streams put one after the other
#: (``kubectl logs -l ...``) step down once between two streams, and up everywhere else.
_DOWN_PER_UP = 8
#: Characters of a row peeled to read its time (a row's time stands at its start).
_ROW_HEAD = 4096


def newest_first(head: bytes) -> bool:
    """Whether the rows in ``head`` carry times that go down from row to row."""
    down = up = 0
    last: int | None = None
    rows = head.decode("utf-8", "replace").split("\n")[:-1]  # the last row may be cut
    for row in rows[:_MAX_ROWS]:
        text = row.rstrip("\r")
        if text[:1] == "{" and len(text) > _ROW_HEAD:
            continue  # a JSON record is read whole or not at all
        moment = _moment(text)
        if moment is None:
            continue
        if last is not None:
            if moment < last:
                down += 1
            elif moment > last:
                up += 1
        last = moment
    return down >= _MIN_STEPS and down >= _DOWN_PER_UP * up


def _moment(text: str) -> int | None:
    """The time ``text`` (a row) starts with, in nanoseconds (of a calendar that only orders,
    for a time without a zone), or None."""
    moment = _epoch_ns(text)
    if moment is None:
        seconds = peel_envelope(text[: _ROW_HEAD if text[:1] != "{" else len(text)]).time
        if seconds is not None:
            return round(seconds * 1e9)
        moment = _naive_ns(text)
    return moment


def _starts_row(line: bytes) -> bool:
    """Whether ``line`` starts a row of an export whose rows start with their time (a JSON
    record, or a time); a line that does not carries on the row above it (a row a terminal
    wrapped, a message of several lines)."""
    if line[:1] == b"{":
        return True
    return _moment(line[:_ROW_HEAD].decode("utf-8", "replace").rstrip("\r")) is not None


def _epoch_ns(row: str) -> int | None:
    """A JSON record's epoch time in nanoseconds, exact (Loki's values are a nanosecond
    apart at times, finer than a float of seconds tells)."""
    if row[:1] != "{":
        return None
    found = _EPOCH_MEMBER.search(row, 0, _ROW_HEAD)
    if found is None:
        return None
    digits = found.group(1)
    return int(digits.ljust(19, "0"))  # in nanoseconds


def _naive_ns(row: str) -> int | None:
    """A row's leading time without a zone, in nanoseconds of a calendar that only orders
    (days of 31 and months of 12 make no row later than one after it), or None."""
    found = _NAIVE_TIME.match(row)
    if found is None:
        return None
    year, month, day, hour, minute, second = (int(part) for part in found.groups()[:6])
    fraction = int((found.group(7) or "").ljust(9, "0"))
    days = (year * 12 + month) * 31 + day
    return ((days * 24 + hour) * 60 + minute) * 60_000_000_000 + second * 10**9 + fraction


class Reversed:
    """The rows of a log read newest first, in the order they were written."""

    def __init__(self, stream: BinaryIO, name: str, limit: int) -> None:
        data = read_at_most(stream, limit)
        if len(data) > limit:
            raise LogOpenError(
                name,
                f"a log written newest first larger than {byte_size(limit)} (it is read whole "
                "to put its rows back in order); export it oldest first "
                + limit_note("max_log_document", limit),
            ).suggest(RaiseLimit("max_log_document", limit))
        lines = data.split(b"\n")
        if lines and not lines[-1]:
            lines.pop()
        #: Lines in the file, to map a line's number back.
        self.total = len(lines)
        # Rows, each a line that starts with its time and the lines that carry it on (the
        # file's lines before the first time: each its own row).
        starts = [n for n, line in enumerate(lines) if n == 0 or _starts_row(line)]
        ends = [*starts[1:], len(lines)]
        #: The file's line number of each line in the order read.
        self._numbers = array("q")
        ordered: list[bytes] = []
        for start, end in zip(reversed(starts), reversed(ends), strict=True):
            ordered += lines[start:end]
            self._numbers.extend(range(start + 1, end + 1))
        del lines
        self.stream: BinaryIO = io.BufferedReader(io.BytesIO(b"\n".join(ordered) + b"\n"))

    def physical(self, number: int) -> int:
        """The file's line of the line numbered ``number`` in the order read (past the last
        line: one past the file's last line)."""
        if number > self.total:
            return self.total + 1
        return self._numbers[number - 1]


def oldest_first(stream: BinaryIO, name: str, limit: int) -> Reversed:
    """``stream`` (a log written newest first) held whole and read oldest first.

    Raises :class:`~ppaux.triage.sources.LogOpenError` (naming ``name``) when it is larger
    than ``limit`` bytes (``Limits.max_log_document``)."""
    return Reversed(stream, name, limit)
