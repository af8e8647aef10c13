"""A record written after other text on the same line: a progress bar that ends in a carriage
return or in nothing at all, then a rank's one-line exception.

A terminal shows such a line as the bar, overwritten; the file holds both in one line, and the
record's own start is inside it. Only torch's ``[rankN]:`` tag is taken for a record's start:
an exception's name after other text may be prose that names it, or a prefix no layer knows
(which the traceback reader's margins take off), and stays in its line; so does a tag inside
a string literal on the line (a request's echo of text someone sent).
"""

from __future__ import annotations

import dataclasses
import re

from ppaux.triage.flattened import quoted_spans
from ppaux.triage.lineformat import LogLine, peel
from ppaux.triage.lineshapes import Launcher

__all__ = ["glued_at", "unglued"]

#: torch's rank tag, followed as torch writes it: a space, a name, or its C++ line's bracket.
_RANK_TAG = re.compile(r"\[rank\d{1,6}\]:(?=[ \[A-Za-z_])")


def glued_at(text: str) -> int | None:
    """Where a rank's record glued after other text starts in ``text``; None when none does
    (a record at the line's start is no glued one)."""
    spans: list[tuple[int, int]] | None = None
    for match in _RANK_TAG.finditer(text, 1):
        start = match.start()
        before = text[:start]
        if not before.strip() or before.endswith(":"):  # ``[rank1]:[rank1]:`` is one tag
            continue
        if spans is None:
            spans = quoted_spans(text)
        if not any(begin <= start < end for begin, end in spans):  # an echo's text is text
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
