"""What a line's envelope said (:class:`Peeled`), and the collectors' times it holds.

Times are read with :meth:`datetime.fromisoformat` (RFC 3339, nanoseconds cut to
microseconds) or as epoch numbers (milliseconds to nanoseconds); a time a collector wrote as a
number is shown as RFC 3339 in UTC.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from ppaux.patterns import lazy

__all__ = [
    "LEAD",
    "MAX_RECORD_LINES",
    "MILD_LEVELS",
    "SEVERE_LEVELS",
    "SEVERITY",
    "TIME_TEXT",
    "Peeled",
    "record_lines",
    "rfc3339",
    "stamp",
    "time_of",
    "written",
]

#: Lines of one JSON record's message kept (a whole traceback fits; a hostile record does not
#: make a line cost more than this).
MAX_RECORD_LINES = 400
#: Digits of an epoch time accepted (milliseconds to nanoseconds); more is no time.
_MAX_EPOCH_DIGITS = 19

_ISO = r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|z|[+-]\d\d:?\d\d|\s?UTC)?"
#: A collector's time as a row writes it: RFC 3339 (or its space form), or epoch digits.
TIME_TEXT = rf"{_ISO}|\d{{13,{_MAX_EPOCH_DIGITS}}}"
#: A time without a zone (``YYYY-MM-DD HH:MM:SS``, its fraction after a dot or a comma).
_WALL = lazy(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?")
SEVERITY = r"(?:DEFAULT|DEBUG|INFO|NOTICE|WARNING|WARN|ERROR|CRITICAL|ALERT|EMERGENCY|[DIWEF])"
#: A row's leading time, with a severity word before it (Google Cloud Logging's text form).
LEAD = lazy(rf"^(?:(?P<severity>{SEVERITY})\s+)?(?P<time>{TIME_TEXT})(?:\t| |,|$)")
#: The levels (as a row or a logger writes them) of a record that reports a failure.
SEVERE_LEVELS = frozenset(
    {"ERROR", "ERRO", "CRITICAL", "CRIT", "FATAL", "ALERT", "EMERGENCY", "E", "F"}
)
#: Levels that report no failure: a record of one is never a failure's own words.
MILD_LEVELS = frozenset({"DEBUG", "DEBG", "TRAC", "INFO", "NOTICE", "WARNING", "WARN", "D", "I"})


class Peeled:
    """What a line's envelope said: ``lines`` (one, or a record's several), the collector's
    ``time`` (seconds since the epoch) and ``time_text`` as written, and ``stream`` (a pod, a
    service, a Slurm task, a Ray actor) where one is named."""

    __slots__ = (
        "cri",
        "decoded",
        "lines",
        "mild",
        "partial",
        "runtime",
        "severe",
        "stream",
        "time",
        "time_text",
        "wall_text",
    )

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.time: float | None = None
        self.time_text: str | None = None
        self.stream: str | None = None
        #: The message was journald's array of bytes, decoded here (the raw line hid its text).
        self.decoded = False
        #: The time is a container runtime's, written with the line (not a collector's later).
        self.runtime = False
        #: The lines are a container runtime's, its prefix taken off (``ppaux.triage.crilines``);
        #: ``partial``: the last is a piece of a line the runtime split, ended in a later record.
        self.cri = False
        self.partial = False
        #: A row's time without a zone, as written (Python logging's ``2024-11-20 14:37:16,123``,
        #: a table download's): the local time of the host that wrote it, zone unknown.
        self.wall_text: str | None = None
        #: The row's level, taken off, was ERROR, CRITICAL or FATAL (or their short forms).
        self.severe = False
        #: The level taken off reported no failure (DEBUG, INFO, WARNING: :data:`MILD_LEVELS`).
        self.mild = False


def record_lines(message: str) -> Peeled:
    """The lines of a record's ``message`` (at most :data:`MAX_RECORD_LINES`)."""
    return Peeled(message.rstrip("\r\n").split("\n")[:MAX_RECORD_LINES])


def rfc3339(text: str) -> float | None:
    """Seconds since the epoch of an RFC 3339 or ISO 8601 time with a zone (a time without
    one is taken as UTC only when it says so); None when it is not one."""
    head = text.strip().replace(",", ".").replace(" UTC", "Z").replace("UTC", "Z")
    fraction = 0.0
    match = re.match(r"^(.{10}[T ]\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(.*)$", head)
    if match is None:
        return None
    base, digits, zone = match.groups()
    if digits:
        fraction = int(digits) / 10 ** len(digits)
    if not zone:
        return None
    try:
        moment = datetime.fromisoformat(base + ("+00:00" if zone in ("Z", "z") else zone))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return moment.timestamp() + fraction


def _epoch(digits: str) -> float | None:
    if len(digits) > _MAX_EPOCH_DIGITS:
        return None
    value = int(digits)
    scale = {13: 1e3, 16: 1e6, 19: 1e9}.get(len(digits))
    return None if scale is None else value / scale


def time_of(text: str) -> float | None:
    """Seconds since the epoch of a collector's time: epoch digits or RFC 3339."""
    return _epoch(text) if text.isdigit() else rfc3339(text)


def written(text: str, moment: float) -> str:
    """How a collector's time is shown: as written, an epoch number as RFC 3339 in UTC."""
    if not text.isdigit():
        return text
    shown = datetime.fromtimestamp(moment, tz=UTC).isoformat(timespec="milliseconds")
    return shown.replace("+00:00", "Z")


def stamp(peeled: Peeled, text: str) -> None:
    """Give ``peeled`` the time ``text`` says, unless it has one already; a time without a
    zone is kept as written (:attr:`Peeled.wall_text`), no instant."""
    moment = time_of(text)
    if moment is not None and peeled.time is None:
        peeled.time, peeled.time_text = moment, written(text, moment)
    elif moment is None and peeled.wall_text is None and _WALL.fullmatch(text) is not None:
        peeled.wall_text = text
