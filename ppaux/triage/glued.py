"""A record written after other text on the same line: a progress bar that ends in a carriage
return or in nothing at all, then a rank's one-line exception.

A terminal shows such a line as the bar, overwritten; the file holds both in one line, and the
record's own start is inside it. Only a start of a record's own shape is looked for: torch's
``[rankN]:`` tag, or a qualified exception name written straight after a bar's closing
bracket or bar (``...s/it]torch.OutOfMemoryError: ...``). Prose that names an exception after a
space stays prose.
"""

from __future__ import annotations

import dataclasses
import re

from ppaux.triage.lineformat import LogLine, peel
from ppaux.triage.lineshapes import Launcher

__all__ = ["glued_at", "unglued"]

#: torch's rank tag, followed as torch writes it: a space, a name, or its C++ line's bracket.
_RANK_TAG = re.compile(r"\[rank\d{1,6}\]:(?=[ \[A-Za-z_])")
#: An exception's qualified name and its colon, right after a bar's ``]`` or ``|``.
_EXCEPTION = re.compile(r"(?<=[\]|])(?:[A-Za-z_]\w{0,63}\.){1,8}[A-Z]\w{0,63}(?:Error|Exception): ")


def glued_at(text: str) -> int | None:
    """Where a record glued after other text starts in ``text``; None when none does (a
    record at the line's start is no glued one)."""
    for pattern in (_RANK_TAG, _EXCEPTION):
        for match in pattern.finditer(text, 1):
            start = match.start()
            before = text[:start]
            if before.strip() and not before.endswith(":"):  # ``[rank1]:[rank1]:`` is one tag
                return start
    return None


def unglued(line: LogLine) -> list[LogLine]:
    """``line``, or the text before a glued record and the record (its rank tag read as
    :func:`peel` reads one at a line's start), each keeping the line's number and time."""
    at = glued_at(line.text)
    if at is None:
        return [line]
    before = dataclasses.replace(line, text=line.text[:at].rstrip())
    record = peel(line.number, line.text[at:], None, None, line.stream, Launcher.NONE)
    record = dataclasses.replace(
        record, time=line.time, time_text=line.time_text, zone=line.zone, partial=line.partial
    )
    return [before, record]
