"""The zone a user gives to sglang's own times (``local_zone``), which the logs never carry.

sglang writes the local time of its host without a zone, so triage compares such times only
within one log. When the user knows the zone of the hosts (every log of the run written in
it), ``local_zone`` makes them instants: compared across logs and with a collector's times.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone, tzinfo

from ppaux.errors import SettingError
from ppaux.patterns import lazy
from ppaux.suggestions import keyword

__all__ = ["LocalZone", "TriageConfigError", "local_zone"]

_OFFSET = lazy(r"^(?P<sign>[+-])(?P<hours>\d\d)(?::?(?P<minutes>\d\d))?$")


class TriageConfigError(SettingError):
    """A triage setting that cannot be used: ``option`` names it as :func:`triage_paths` does
    (``local_zone``), ``value`` is what was given, ``reason`` why; ``str()`` is
    '<option>="<value>": <reason>'. A front end spells ``option`` its own way."""

    def __init__(self, option: str, value: str, reason: str) -> None:
        super().__init__(option, value, reason, f"{keyword(option, value)}: {reason}")


@dataclass(frozen=True)
class LocalZone:
    """A zone given to times that have none: ``label`` as shown ('UTC', '+09:00',
    'Europe/Paris'), ``zone`` the ``tzinfo`` that places a wall-clock time in it."""

    label: str
    zone: tzinfo

    def instant(self, wall: datetime) -> float:
        """Seconds since the epoch of the naive wall-clock time ``wall`` in this zone (a time
        that a change of clock makes ambiguous is taken at its first occurrence)."""
        return wall.replace(tzinfo=self.zone, fold=0).timestamp()


def local_zone(text: str) -> LocalZone:
    """The :class:`LocalZone` of ``text``: 'UTC' (or 'Z'), an offset ('+09:00', '-0500',
    '+05'), or a name of the IANA database ('Europe/Paris'); :class:`TriageConfigError`
    for anything else."""
    given = text.strip()
    if given.upper() in ("UTC", "Z"):
        return LocalZone("UTC", UTC)
    match = _OFFSET.match(given)
    if match is not None:
        hours, minutes = int(match["hours"]), int(match["minutes"] or 0)
        if hours > 23 or minutes > 59:
            raise TriageConfigError("local_zone", text, "an offset is at most 23:59")
        offset = timedelta(hours=hours, minutes=minutes)
        sign = match["sign"]
        return LocalZone(
            f"{sign}{hours:02d}:{minutes:02d}", timezone(-offset if sign == "-" else offset)
        )
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        # ZoneInfo refuses absolute paths and '..' itself: only the zone database is read.
        return LocalZone(given, ZoneInfo(given))
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise TriageConfigError(
            "local_zone",
            text,
            "not a zone: give UTC, an offset such as +09:00, or a name such as Europe/Paris",
        ) from None
