"""The report every format writes: each of its strings shown as :func:`ppaux.text.shown` shows it.

Escaping happens here, when a report is rendered: a command builds its messages with a file's
text cut to a bound (:func:`ppaux.text.cut`), not escaped, and a report gathers text from many
places (findings, their ``extra``, ``location``, message id and suggestions, tables, notes, the
JSON ``data``), where one missed path would let a dump put an escape sequence, a newline or a
bidi override into a terminal, a workflow command, an XML report or a web page. So
:func:`shown_report` gives every format a copy of the report in which every string (and every
string key) is printable text, before the format adds its own quoting. Showing shown text again
changes nothing, so text escaped earlier is not escaped twice.

Values that no encoder could write are also made safe here: an integer too long for JSON numbers
(Python refuses to print one past 4300 digits) becomes a string, and a key that is not a string,
number, boolean or None (JSON has no tuple keys) becomes its shown ``repr``; a finding's source
``location`` whose line number no format can write is dropped.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ppaux.report.document import InputProblem, Report, Table
from ppaux.report.findings import Finding, Location
from ppaux.suggestions import RaiseLimit, Setting, Suggestion
from ppaux.text import shown

__all__ = ["shown_report", "shown_value"]

#: Bits of the longest integer a report keeps as a number: JSON readers lose precision past 53
#: bits, but sizes and offsets up to 2**64 are still written as the numbers they are.
_MAX_NUMBER_BITS = 64
#: Bits of the longest integer written out in decimal; longer ones are described.
_MAX_DECIMAL_BITS = 256


def _number(value: int) -> int | str:
    bits = value.bit_length()
    if bits <= _MAX_NUMBER_BITS:
        return value
    if bits <= _MAX_DECIMAL_BITS:
        return str(value)
    return f"<int of {bits} bits>"


def _key(key: object) -> Any:
    if isinstance(key, str):
        return shown(key, None)
    if key is None or isinstance(key, (bool, float)):
        return key
    if isinstance(key, int):
        return _number(key)
    return shown(_repr(key), None)


def _repr(value: object) -> str:
    try:
        text = repr(value)
    except Exception:  # a value whose repr fails (or an int past Python's digit limit)
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 200 else f"{text[:200]}..."


def shown_value(value: object) -> Any:
    """``value`` with every string in it (dict keys too, through mappings, lists and tuples) shown
    by :func:`ppaux.text.shown`, over-long integers made strings and tuples made lists."""
    if isinstance(value, str):
        return shown(value, None)
    if value is None or isinstance(value, (bool, float)):
        return value
    if isinstance(value, int):
        return _number(value)
    if isinstance(value, Mapping):
        done = {_key(k): shown_value(v) for k, v in value.items()}
        key = value.get("key")
        if isinstance(key, str) and done.get("key") != key:
            # A key shown escaped (a NUL, DEL, a lone surrogate) is also given exactly, as its
            # code points: the escaped text cannot be told from a key spelled that way.
            done["key_code_points"] = [ord(c) for c in key]
        return done
    if isinstance(value, (list, tuple)):
        return [shown_value(v) for v in value]
    return value


def _location(location: Location | None) -> Location | None:
    # Every format reads a location's file, line and function: one whose line no format can
    # write (a capture file's or a target's own number) is dropped rather than half-written.
    if location is None or not 0 < location.line < 2**31:
        return None
    file, function = shown(location.file, None), shown(location.function, None)
    return Location(file, location.line, function, location.decompressed)


def _finding(item: Finding) -> Finding:
    return dataclasses.replace(
        item,
        message=shown(item.message, None),
        path=shown(item.path, None),
        key=None if item.key is None else shown(item.key, None),
        sglang_error=None if item.sglang_error is None else shown(item.sglang_error, None),
        hint=shown(item.hint, None),
        extra=shown_value(item.extra),
        location=_location(item.location),
        suggestions=_suggestions(item.suggestions),
        message_id=shown(item.message_id, None),
    )


def _suggestions(suggestions: tuple[Suggestion, ...]) -> tuple[Suggestion, ...]:
    # The JSON formats carry suggestions as data: their names and values are shown too.
    return tuple(
        Setting(
            shown(s.name, None),
            None if s.value is None else shown(s.value, None),
            shown(s.what, None),
        )
        if isinstance(s, Setting)
        else RaiseLimit(shown(s.name, None), s.value)
        for s in suggestions
    )


def _table(table: Table) -> Table:
    return dataclasses.replace(
        table,
        title=shown(table.title, None),
        columns=tuple(shown(c, None) for c in table.columns),
        rows=tuple(tuple(shown(c, None) for c in row) for row in table.rows),
    )


def shown_report(report: Report) -> Report:
    """A copy of ``report`` whose every string is printable (see the module's docstring)."""
    return dataclasses.replace(
        report,
        command=shown(report.command, None),
        findings=tuple(_finding(f) for f in report.findings),
        problems=tuple(
            InputProblem(shown(p.path, None), shown(p.message, None), _suggestions(p.suggestions))
            for p in report.problems
        ),
        data=shown_value(report.data),
        tables=tuple(_table(t) for t in report.tables),
        notes=tuple(_note(n) for n in report.notes),
    )


def _note(note: str) -> str:
    """A note, shown: one whose first line is a heading (it ends with ``:`` and holds no other
    ``: ``, as ``the target printed:``) followed by further lines keeps them as lines, each
    shown on its own (its control characters, ``\r`` among them, still escaped); any other
    note is shown as one line."""
    head, newline, _ = note.partition("\n")
    if newline and head.endswith(":") and ": " not in head:
        return "\n".join(shown(line, None) for line in note.split("\n"))
    return shown(note, None)
