"""A table download (CSV, TSV, or a spreadsheet's semicolons) read as the log lines it holds.

Grafana's, Datadog's and Splunk's downloads, and a spreadsheet saved as CSV, put a header row
first (``"Time","pod","Line"``, ``date,host,service,message``, ``_time,...,_raw``) and then one
row per log line, each field quoted or not, with columns beside the message (a pod, a host, a
source). :func:`csv_table` tells such a table from the head: a header whose names are names
(not a log line's text), one of them a message's or a time's, and rows after it with as many
fields. The message column is the one the header names so (``Line``, ``message``, ``_raw``,
...), else the last column; the time column the one named so, else the first.

:class:`TableRows` gives each row back as ``<time>\\t<message>`` (the shape of a two-column
table download, which the envelopes read), one line for one, the header as an empty line, so
line numbers stay the file's. Rows are split with the :mod:`csv` module (quotes, doubled
quotes, the delimiter inside a quoted message); a line that is not one whole row (a message
whose newline the quotes kept) is given back as it came.
"""

from __future__ import annotations

import csv
from typing import BinaryIO

from ppaux.patterns import lazy
from ppaux.triage.linestream import LineStream

__all__ = ["CsvTable", "TableRows", "csv_table"]

#: The delimiters a table download uses.
_DELIMITERS = (",", "\t", ";")
#: A header's column name: a word, perhaps with dots, spaces or an '@' (``@timestamp``).
_NAME = lazy(r"[@_A-Za-z][\w@. -]{0,63}")
#: Column names that hold the log line, as the stores and UIs name them (lower case).
_MESSAGE_NAMES = (
    "line",
    "message",
    "msg",
    "log",
    "_raw",
    "textpayload",
    "@message",
    "content",
    "body",
)
#: Column names that hold the row's time (lower case).
_TIME_NAMES = ("time", "timestamp", "_time", "@timestamp", "date", "ts", "datetime")
#: Rows after the header, at the least, that must have the header's number of fields.
_MIN_ROWS = 2
#: Rows of the head looked at.
_MAX_ROWS = 50
#: A spreadsheet's day-first time (``03.12.2026 14:56:41``), written back year first.
_DAY_FIRST = lazy(r"(\d\d)\.(\d\d)\.(\d{4})([ T]\d\d:\d\d(?::\d\d(?:[.,]\d{1,9})?)?)$")
_BOM = "\ufeff"


class CsvTable:
    """A table's ``delimiter``, number of ``columns``, and its ``message`` and ``time``
    columns (``time`` None when the table has none besides the message)."""

    __slots__ = ("columns", "delimiter", "message", "time")

    def __init__(self, delimiter: str, columns: int, message: int, time: int | None) -> None:
        self.delimiter = delimiter
        self.columns = columns
        self.message = message
        self.time = time

    def fields(self, line: str) -> list[str] | None:
        """``line``'s fields when it is one whole row of the table, else None."""
        try:
            rows = list(csv.reader([line], delimiter=self.delimiter, strict=True))
        except csv.Error:
            return None
        if len(rows) != 1 or len(rows[0]) != self.columns:
            return None
        return rows[0]

    def row(self, line: str) -> str | None:
        """``line`` (a row, without its line end) as ``<time>\\t<message>``, or None."""
        fields = self.fields(line)
        if fields is None:
            return None
        message = fields[self.message]
        if self.time is None:
            return message
        moment = fields[self.time].strip()
        day_first = _DAY_FIRST.match(moment)
        if day_first is not None:
            day, month, year, rest = day_first.groups()
            moment = f"{year}-{month}-{day}{rest}"
        return f"{moment}\t{message}" if moment else message


def _header(line: str, delimiter: str) -> CsvTable | None:
    try:
        rows = list(csv.reader([line], delimiter=delimiter, strict=True))
    except csv.Error:
        return None
    if len(rows) != 1 or len(rows[0]) < 2:
        return None
    names = [name.strip().lower() for name in rows[0]]
    if not all(_NAME.fullmatch(name) for name in names):
        return None
    messages = [n for n, name in enumerate(names) if name in _MESSAGE_NAMES]
    times = [n for n, name in enumerate(names) if name in _TIME_NAMES]
    if not messages and not times:
        return None
    message = messages[0] if messages else len(names) - 1
    time = times[0] if times else (0 if message != 0 else None)
    if time == message:
        time = None
    return CsvTable(delimiter, len(names), message, time)


def csv_table(head: bytes) -> CsvTable | None:
    """The table whose header opens ``head``, or None when ``head`` is no table download."""
    lines = head.decode("utf-8", "replace").split("\n")[:-1]  # the last one may be cut
    lines = [line.rstrip("\r") for line in lines[: _MAX_ROWS + 1]]
    if len(lines) < 1 + _MIN_ROWS:
        return None
    first = lines[0].removeprefix(_BOM)
    for delimiter in _DELIMITERS:
        if delimiter not in first:
            continue
        table = _header(first, delimiter)
        if table is None:
            continue
        rows = [line for line in lines[1:] if line.strip()]
        whole = sum(table.fields(line) is not None for line in rows)
        if whole >= _MIN_ROWS and whole * 2 >= len(rows):
            return table
    return None


class TableRows(LineStream):
    """``inner``'s rows as ``<time>\\t<message>`` lines: one line given out for each read."""

    def __init__(self, inner: BinaryIO, table: CsvTable, max_line: int) -> None:
        super().__init__(inner, max_line)
        self._table = table
        self._first = True
        self._at_start = True  # the next bytes read open a line

    def _line_out(self) -> bytes | None:
        line = self._read_line()
        if not line:
            return None
        whole = line.endswith(b"\n")
        at_start, self._at_start = self._at_start, whole
        if not at_start or not whole:
            return line  # a piece of a line longer than the bound: as it came
        if self._first:
            self._first = False
            return b"\n"  # the header row
        text = line.decode("utf-8", "replace").rstrip("\r\n")
        row = self._table.row(text)
        if row is None:
            return line
        return row.replace("\r", " ").replace("\n", " ").encode("utf-8") + b"\n"
