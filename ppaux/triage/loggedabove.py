"""A logger's record just above a traceback's header that names the exception it caught, in the
words of ``logger.exception("... exception: %s", e)``, one of vLLM's (and its plugins')::

    (Worker_DP1_TP14_EP30 pid=2493) ERROR <time> [mooncake_connector.py:246] Mooncake
    KVCacheSendingThread exception: Address already in use (addr='tcp://10.0.0.1:20012')
    (Worker_DP1_TP14_EP30 pid=2493) ERROR <time> [mooncake_connector.py:246] Traceback (most ...

Where the traceback below is cut before its exception line, the record's words are the only
ones the log gives of it: they are said in its place (:attr:`~ppaux.triage.records.Failure.
said`), never as an exception type the log does not show."""

from __future__ import annotations

from ppaux.patterns import lazy
from ppaux.triage.lineformat import LogLine
from ppaux.triage.quotedvalues import unquoted_values
from ppaux.triage.records import Failure
from ppaux.triage.tracelines import raised

__all__ = ["logged_before", "rank_before", "said_above"]

#: The logger's words: ``exception: <message>``, the message to the line's end (a carriage
#: return, or one written as ``^M``, left out).
_LOGGED = lazy(r"\b[Ee]xception: (?P<message>[^\s^][^\r\n]{0,400}?)\s*(?:\^M|\r)?$")


#: A record that names the rank whose traceback follows: lmdeploy's model agent logs
#: ``Rank[2] failed.`` at ERROR, then the exception's traceback (``logger.exception``).
_RANK_FAILED = lazy(r"\bRank\[(?P<rank>\d{1,6})\] failed\.?\s*$")


def rank_before(before: LogLine | None, header: LogLine) -> str | None:
    """'rank 2' where ``before``, the line just above the traceback's header ``header`` and of
    the same process, is a record that says rank 2 failed (lmdeploy's ``ERROR - Rank[2]
    failed.``), at no level that reports no failure; None otherwise."""
    if before is None or before.number not in (0, header.number - 1):  # 0: a line passed over
        return None
    if (before.stream, before.ranks) != (header.stream, header.ranks) or before.mild:
        return None
    found = _RANK_FAILED.search(before.text[:600])
    return None if found is None else f"rank {int(found.group('rank'))}"


def logged_before(before: LogLine | None, header: LogLine) -> str | None:
    """What the record ``before``, on the line just above the traceback's header ``header`` and
    of the same process, says of the exception it caught; None where it is no such record (or
    an exception line of its own, read as such)."""
    if before is None or before.number not in (0, header.number - 1):  # 0: a line passed over
        return None
    if (before.stream, before.ranks) != (header.stream, header.ranks) or before.mild:
        return None  # another process's, or a record of no failure's level (INFO's prompt)
    text = before.text[:600]
    # the logger's own words: ``exception:`` inside a value it quotes (a request's prompt)
    # is the value's, never the logger's (the blanked text keeps every character's place)
    found = _LOGGED.search(unquoted_values(text))
    if found is None or raised(before.text) is not None or "Traceback" in before.text:
        return None
    said = text[found.start("message") : found.end("message")]
    return f"{said} (the exception its logger named on the line above)"


def said_above(failure: Failure, before: LogLine | None, header: LogLine) -> None:
    """Keep in ``failure``, whose traceback's header is ``header``, what the record ``before``
    just above it says: the exception its logger named, the rank it names as failed."""
    failure.said = logged_before(before, header) or failure.said
    failure.named_rank = rank_before(before, header)
