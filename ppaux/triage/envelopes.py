"""The envelopes people export and paste, told line by line from the line's own shape.

A log copied out of a web UI or a log store arrives with each line wrapped in what that store
adds, and a paste may mix them. Each line is peeled here, layer after layer, whatever the rest
of the file looks like:

- JSON records (:mod:`ppaux.triage.jsonrecords`): Docker's json-file, Google Cloud Logging,
  journald ``-o json``, AWS CloudWatch, Grafana/Loki, fluent-bit; a pretty-printed export's
  ``"line": "..."`` member on a line of its own; a logfmt line's message. A record's message
  may hold several lines (a whole traceback): :func:`peel_envelope` returns them all.
- text rows: a leading time (RFC 3339, or ``YYYY-MM-DD HH:MM:SS[.fff]``, or epoch
  milliseconds), with a severity word before it (Google Cloud Logging's ``ERROR <time>``) or a
  level column after it (Grafana's table), a journald ``short-iso`` ``host ident[pid]:``, an
  ``aws logs tail`` stream name, tab- or comma-separated columns (a table or CSV download);
- syslog's and journald's default ``short`` form (``Jun 17 06:48:30 host ident[pid]:``);
- then the launchers' and stores' prefixes (:mod:`ppaux.triage.prefixes`).

Times are read as :mod:`ppaux.triage.peeled` says. Nothing here fails on a line: a line that
has none of these shapes is returned as it came.
"""

from __future__ import annotations

from ppaux.patterns import lazy
from ppaux.triage.forwarders import (
    CSV_COLUMNS,
    LOGFMT_START,
    STORE_FIELDS,
    SUPERVISOR_LEVEL,
    logfmt_message,
)
from ppaux.triage.jsonrecords import (
    cut_record,
    export_structure,
    fluent_record,
    json_record,
    member_line,
    nested_record,
)
from ppaux.triage.peeled import (
    LEAD,
    MILD_LEVELS,
    SEVERE_LEVELS,
    SEVERITY,
    TIME_TEXT,
    Peeled,
    record_lines,
    stamp,
    time_of,
)
from ppaux.triage.prefixes import layers
from ppaux.triage.tritonstatus import triton_more, triton_status

__all__ = ["Peeled", "cut_record", "peel_envelope"]

_CSV_TIME = lazy(rf'^"(?P<time>{TIME_TEXT})",(?P<rest>.*)$')
_CSV_SEVERITY = lazy(rf'^"(?P<severity>{SEVERITY})",')
_LEVEL_COLUMN = lazy(
    r"^(?:info|error|warning|warn|debug|critical|unknown|INFO|ERROR|WARNING|WARN|DEBUG)\t"
)
#: journald ``short-iso``: ``<time> <host> <identifier>[<pid>]: `` (after the time).
_JOURNALD = lazy(r"^[\w.-]+ [\w.@/-]+(?:\[\d{1,10}\])?: ")
#: ``aws logs tail``: ``<time> <stream> <message>``; a stream name holds a '/'.
_AWS_STREAM = lazy(r"^[\w.-]+(?:/[\w.\[\]$-]+)+ ")
#: syslog's and journald's default (``short``) form: ``Jun 17 06:48:30 host ident[pid]: ``.
_SYSLOG = lazy(
    r"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d{1,9})? [\w.-]+ [\w.@/-]+(?:\[\d{1,10}\])?: "
)


#: sglang's own time alone in brackets, as a CI runner or a tool stamps it before every line of a
#: log whose frames it stands before too (:func:`ppaux.triage.survey.stamped_lines`).
_STAMPED = lazy(r"^\[(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{3})?)\] ")


def peel_envelope(text: str, stamped: bool = False) -> Peeled:
    """The line(s) inside ``text``'s envelope, with the envelope's time and stream;
    ``stamped``: a tool put ``[<time>] `` before every line of the log, taken off first (its
    time, without a zone, kept as written)."""
    found = _STAMPED.match(text) if stamped else None
    if found is None:
        return _peeled(text)
    peeled = _peeled(text[found.end() :])
    if peeled.time is None and peeled.wall_text is None:
        peeled.wall_text = found.group("time")
    return peeled


def _peeled(text: str) -> Peeled:
    whole = _json_forms(text)
    if whole is None:
        if export_structure(text):
            return Peeled([])  # a pretty-printed export's brackets and other members
        whole = _forwarded(text)
    if whole is not None:
        whole.lines = [layers(line, whole) for line in whole.lines]
        return whole
    if text[:1] in ("|", " ", "\t") and text.lstrip(" \t")[:1] == "|":
        cell = _table_cell(text)
        if cell is not None:
            return Peeled([] if cell == "" else [layers(cell, Peeled([cell]))])
    peeled = Peeled([text])
    rest = _row(text, peeled)
    syslog = _SYSLOG.match(rest)
    if syslog is not None:
        rest = rest[syslog.end() :]
    rest = layers(rest, peeled)
    nested = nested_record(rest) if rest[:2] == '{"' else None
    peeled.lines = [rest] if nested is None else nested.lines
    return peeled


#: A Markdown table's cell border: a ``|`` that no backslash escapes.
_CELL_BORDER = lazy(r"(?<!\\)\|")


def _table_cell(text: str) -> str | None:
    """The record a row of a Markdown table quotes (its cell that opens with a record's
    bracket, without the cell's backticks), ``""`` for a row that quotes none (a table of
    exception names, the ``|---|`` separator: the table's text, no record), or None for a line
    that is no such row. A row opens and closes with ``|``; the table downloads ppaux reads
    open with a time and part their columns with tabs or commas."""
    row = text.strip()
    if len(row) < 2 or row[-1] != "|" or row[-2:] == "\\|":
        return None
    if triton_status(row) is not None or triton_more(row) is not None:
        return row  # Triton's model status table: its rows are the record
    for cell in _CELL_BORDER.split(row[1:-1]):
        cell = cell.strip()
        if len(cell) >= 2 and cell[0] == cell[-1] == "`":
            cell = cell[1:-1].strip()
        if cell[:1] == "[":
            return cell.replace("\\|", "|")
    return ""


def _json_forms(text: str) -> Peeled | None:
    """The JSON record ``text`` is (whole, or cut), or a pretty-printed export's message
    member, else None."""
    if text[:1] == "{" and text.rstrip()[-1:] == "}":
        record = json_record(text)
        if record is not None:
            return record
    if text[:2] == '{"' and text.rstrip()[-1:] != "}":
        cut = cut_record(text)
        if cut is not None:
            return cut
    return member_line(text)


def _forwarded(text: str) -> Peeled | None:
    """The record of fluent-bit's or a logfmt line, else None."""
    if text[:1] == "[":
        return fluent_record(text)
    if LOGFMT_START.match(text) is not None:
        return _logfmt(text)
    return None


def _row(text: str, peeled: Peeled) -> str:
    """``text`` without a store's row before its message (a CSV download's time and severity
    columns, a leading time and what follows it), the row's time given to ``peeled``."""
    csv = _CSV_TIME.match(text)
    if csv is not None:
        rest = csv.group("rest")
        severity = _CSV_SEVERITY.match(rest)
        if severity is not None:  # a severity column between the time and the message
            rest = rest[severity.end() :]
            peeled.severe = severity.group("severity") in SEVERE_LEVELS
            peeled.mild = severity.group("severity") in MILD_LEVELS
        if rest.startswith('"') and rest.endswith('"') and len(rest) >= 2:
            rest = rest[1:-1].replace('""', '"')
        stamp(peeled, csv.group("time"))
        peeled.wall_text = None  # a table's clock (the browser's zone), not the host's
        return rest
    lead = LEAD.match(text)
    if lead is None or not lead.group("time") or _sglang_like(text):
        return text
    stamp(peeled, lead.group("time"))
    peeled.severe = lead.group("severity") in SEVERE_LEVELS
    peeled.mild = lead.group("severity") in MILD_LEVELS
    if text[lead.end() - 1 : lead.end()] != " ":
        peeled.wall_text = None  # a table's time column: the browser's clock, not the host's
    comma = text[lead.end() - 1 : lead.end()] == ","
    rest = text[lead.end() :]
    again = LEAD.match(rest)
    if (
        again is not None
        and again.group("time")
        and rest[again.end() - 1 : again.end()] in ("\t", ",")
        and not _sglang_like(rest)
    ):  # a second time column (epoch milliseconds, then RFC 3339): the latter is shown
        moment = time_of(again.group("time"))
        if moment is not None:
            peeled.time, peeled.time_text = moment, again.group("time")
        comma = rest[again.end() - 1 : again.end()] == ","
        rest = rest[again.end() :]
    return _after_time(rest, comma, "," in lead.group("time"), peeled)


def _after_time(rest: str, comma: bool, python_time: bool, peeled: Peeled) -> str:
    """``rest`` (what follows a row's time; ``comma``: in a CSV row; ``python_time``: a time
    with a comma before its milliseconds) without the columns between the time and the
    message: a CSV download's host and service, a level, a store's fields, journald's host and
    identifier, an ``aws logs tail`` stream (named as the stream)."""
    columns = CSV_COLUMNS.match(rest) if comma and rest[-1:] == '"' else None
    if columns is not None:  # a CSV download's host and service before the message
        rest = rest[columns.end() :]
    if comma and len(rest) >= 2 and rest[0] == rest[-1] == '"':
        rest = rest[1:-1].replace('""', '"')  # a CSV download's quoted message
    level = _LEVEL_COLUMN.match(rest)
    if level is None and python_time:
        level = SUPERVISOR_LEVEL.match(rest)  # supervisord's, Python logging's
    if level is not None:
        rest = rest[level.end() :]
        peeled.severe = peeled.severe or level.group(0).strip().upper() in SEVERE_LEVELS
        peeled.mild = level.group(0).strip().upper() in MILD_LEVELS
    fields = STORE_FIELDS.match(rest)
    if fields is not None:
        rest = rest[fields.end() :]
    journald = _JOURNALD.match(rest)
    if journald is not None and not rest.startswith(("File ", "Traceback")):
        return rest[journald.end() :]
    aws = _AWS_STREAM.match(rest)
    if aws is not None:
        peeled.stream = aws.group(0).strip()
        rest = rest[aws.end() :]
    return rest


def _logfmt(text: str) -> Peeled | None:
    """The message of a logfmt line, with its time; None for another line."""
    found = logfmt_message(text)
    if found is None:
        return None
    message, when = found
    peeled = record_lines(message)
    if when is not None:
        stamp(peeled, when)
    return peeled


def _sglang_like(text: str) -> bool:
    """A line that is sglang's own prefix at its start is never peeled as a row's time."""
    return text.startswith("[")
