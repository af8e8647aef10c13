"""What a relay carries of its own.

A relay (:func:`~ppaux.triage.deaths.relay`) says that another process failed and points
elsewhere for the cause. Two exceptions use a relay's words and are no relay:

- one whose own chain holds a failure of a kind triage tells apart (memory, communication,
  a shape or a kernel, one of sglang's nine messages): Python's chain is the same process's,
  so the relay was raised about that failure, and that failure is the root (``RuntimeError:
  received a non-tensor auxiliary PP output``, then ``The above exception was the direct
  cause of the following exception``, then ``RuntimeError: WorkerProc initialization failed
  ... See stack trace for root cause.``);
- one whose own words, before the relay's, are such a failure (``RuntimeError: received a
  non-tensor auxiliary PP output; see the stack trace above for the root cause``).

A relay that quotes the error it relays (vLLM's ``Worker failed with error '<error>', please
check ...``) stays a relay: the error is the failed worker's, not the relay's process's.
"""

from __future__ import annotations

import re

from ppaux.triage.kinds import OTHER, UNKNOWN, kind_of, quoted_relay
from ppaux.triage.records import Failure

__all__ = ["carries_own"]


def _told(exception: str, message: str) -> bool:
    """True when an exception of type ``exception`` with ``message`` is of a kind triage
    tells apart (neither 'other' nor 'unknown')."""
    alone = Failure("", 0, None, None, None, None, None, 0, exception, message)
    return kind_of(alone) not in (OTHER, UNKNOWN)


def carries_own(failure: Failure, words_at: int, relay_words: re.Pattern[str]) -> bool:
    """True when ``failure``, whose message holds a relay's words from ``words_at``, carries
    a failure of its own: in its chain (an exception whose message holds no relay's words,
    ``relay_words`` being the pattern of them), or in its own message before the words. A
    relay quoting the error it relays carries none."""
    before = failure.message[:words_at].rstrip(" ;,.:-")
    if failure.exception is None or not (failure.chain or before):
        return False  # nothing of its own to carry (the cheap test first: relays are many)
    if quoted_relay(failure.message) is not None:
        return False
    for exception, message in failure.chain:
        if relay_words.search(message[:2000]) is None and _told(exception, message):
            return True
    return bool(before) and _told(failure.exception, before)
