"""The text a tool ppaux does not know puts before a traceback's lines (a *lead*): how far a
line begins as a lead learned at a header does (:func:`lead_length`), and what process a lead
names (:func:`named`), its times taken out.
"""

from __future__ import annotations

from ppaux.patterns import lazy

__all__ = ["lead_length", "named"]

#: What changes from line to line of one process in a lead: a date, a clock, a long number (an
#: epoch time, a counter, nanoseconds), a day's or a month's name. The rest names the process.
_LEAD_TIME = lazy(
    r"\d{4}-\d\d-\d\d|\d{1,2}:\d\d(?::\d\d)?(?:[.,]\d{1,9})?|\d{5,}|"
    r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun|Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\b"
)


#: sglang's words before a header, which name no process of a lead.
_HIT = lazy(r"\w{1,64} hit an exception: *$")


def named(lead: str) -> str:
    """What ``lead`` names, its times and sglang's words before a header taken out (``<w1>
    12:00:01 `` names ``<w1>``)."""
    return " ".join(_LEAD_TIME.sub(" ", _HIT.sub("", lead)).split())


#: Numbers, with the spaces before each, and the names of days and months: what may differ
#: from line to line in a lead (its time).
_NUMBERS = lazy(r"(?: *+\d)+")
_SPACES = lazy(r" +")
_NAMES = lazy(r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun|Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\b")


def lead_length(text: str, lead: str) -> int:
    """The length of the start of ``text`` that stands where ``lead`` does, 0 when ``text``
    does not begin as ``lead`` does: the same characters, but for numbers (with the spaces
    before them), which may be other numbers of another length (a time, a counter, a pid,
    ctime's day padded to two places: ``Dec  9`` then ``Dec 10``), and the name of a day or
    a month, which may be another (``Wed Dec  9`` then ``Thu Dec 10``)."""
    at = 0
    place = 0
    while place < len(lead):
        char = lead[place]
        varying = _NUMBERS if char == " " or char.isdigit() else _NAMES if char.isupper() else None
        want = None if varying is None else varying.match(lead, place)
        if want is None and char == " ":
            # Spaces before no number: the same run of them, taken at once (a run looked at
            # again from each of its spaces would cost the square of its length).
            run = _SPACES.match(lead, place)
            assert run is not None
            if text[at : at + run.end() - place] != run.group():
                return 0
            at, place = at + run.end() - place, run.end()
        elif want is not None and varying is not None:
            got = varying.match(text, at)
            if got is None:
                return 0
            at, place = got.end(), want.end()
        elif at < len(text) and text[at] == char:
            at += 1
            place += 1
        else:
            return 0
    return at
