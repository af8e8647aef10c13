"""Failures of different logs that no time orders: where neither the root of one log nor a
failure of another carries a time (a paste stripped of its prefixes, two issues' logs given
together), nothing says which came first, so neither is said to follow the other. The first
failure of such a log whose exception the log shows, and that is not a communication failure
in flight (what a rank dies of when a peer died first), is that log's own root.
"""

from __future__ import annotations

from collections.abc import Collection

from ppaux.triage.kinds import COMMUNICATION, kind_of
from ppaux.triage.records import Failure

__all__ = ["own_log_root"]


def own_log_root(failure: Failure, root: Failure, rooted: Collection[str]) -> bool:
    """True where ``failure`` is the root of its own log rather than what followed ``root``:
    the two are of different logs, neither has a time, ``failure``'s exception is in its log
    and is no communication failure in flight, and no root is yet of its log (``rooted``: the
    logs that hold one)."""
    return (
        failure.source != root.source
        and failure.source not in rooted
        and failure.time is None
        and root.time is None
        and failure.exception is not None
        and kind_of(failure) != COMMUNICATION
    )
