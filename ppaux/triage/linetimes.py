"""The times of a log line: a collector's, which carries its zone (an instant), and sglang's
own, which carries none (the wall clock of the host that wrote it).
"""

from __future__ import annotations

import functools
import re
from datetime import datetime

from ppaux.patterns import lazy

__all__ = ["WALL_EPOCH", "collector_time", "sglang_time", "wall_time", "zone_of"]

_TIME = lazy(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
_WALL = lazy(r"(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d)(?:[.,](\d{1,9}))?")
_ZONE = lazy(r"(?:Z|[+-]\d\d:?\d\d)$", re.IGNORECASE)


def collector_time(text: str) -> float | None:
    """Seconds since the epoch of an RFC 3339 time (nanoseconds cut to microseconds)."""
    match = re.match(r"^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:?\d\d)$", text)
    if match is None:
        return None
    head, fraction, zone = match.groups()
    zone = "+00:00" if zone == "Z" else zone
    try:
        moment = datetime.fromisoformat(f"{head}{zone}")
    except ValueError:
        return None
    return moment.timestamp() + (float(f"0.{fraction}") if fraction else 0.0)


def sglang_time(text: str, ms: str | None = None) -> float | None:
    """Seconds of the wall clock of sglang's ``%Y-%m-%d %H:%M:%S`` time, counted from
    1970-01-01 00:00:00 of the same clock.

    sglang writes the host's local time without a zone, so this is no instant: it orders the
    times of one log (one host's clock), and is never compared with a time that has a zone
    nor, by triage, with another log's.
    """
    seconds = _seconds(text)
    if seconds is None:
        return None
    return seconds + (int(ms) / 1000 if ms else 0.0)


def wall_time(text: str) -> float | None:
    """Seconds of the wall clock, as :func:`sglang_time` counts them, of a time without a zone
    that another logger wrote (``2024-11-20 14:37:16,123``, ``2024-11-20T14:37:16.123456``)."""
    match = _WALL.fullmatch(text)
    if match is None:
        return None
    seconds = _seconds(f"{match.group(1)} {match.group(2)}")
    if seconds is None:
        return None
    fraction = match.group(3)
    return seconds + (int(fraction) / 10 ** len(fraction) if fraction else 0.0)


#: Where :func:`sglang_time` counts from: a naive time, as sglang's are.
WALL_EPOCH = datetime(1970, 1, 1)


@functools.lru_cache(maxsize=256)
def _seconds(text: str) -> float | None:
    """``%Y-%m-%d %H:%M:%S`` as naive wall-clock seconds, without strptime (the slowest step of
    a line: a log's lines share their seconds, and the format is fixed)."""
    if _TIME.fullmatch(text) is None:
        return None
    try:
        moment = datetime(
            int(text[0:4]),
            int(text[5:7]),
            int(text[8:10]),
            int(text[11:13]),
            int(text[14:16]),
            int(text[17:19]),
        )
    except ValueError:
        return None
    # Naive arithmetic: no zone (least of all the machine's running ppaux) is assumed.
    return (moment - WALL_EPOCH).total_seconds()


def zone_of(time_text: str | None) -> str | None:
    """The zone at the end of a collector's time as written ('Z', '+02:00')."""
    match = _ZONE.search(time_text or "")
    return match.group(0) if match else "Z"
