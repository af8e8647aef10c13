"""Where a step's requests are cut into records: at most
:data:`~ppaux.observer.protocol.REQUESTS_PER_RECORD` requests of each path a record, and fewer
where their descriptions are large, so that no record the check itself sends comes near the
parent's bounds (``Limits.max_record_bytes``, 16 MiB, and what a record may cost once read, four
times that). A ``consume`` that writes hundreds of values per request (a hidden-state tap, a dict
of scores per token) is described in more records, never in one record the parent refuses and
blames on the target (PP715 ``flooded``): the bounds are for what the target itself writes on
the records' descriptor.

Runs in the check's child and in rank 0's process; imports nothing heavy.
"""

from __future__ import annotations

from typing import Any

from ppaux.observer.framing import encode, read_cost
from ppaux.observer.protocol import REQUESTS_PER_RECORD

__all__ = ["RECORD_BYTES", "RECORD_COST", "request_cuts"]

#: The most bytes of JSON one record of the check's own holds, where it holds more than one
#: request of each path: a quarter of ``Limits.max_record_bytes``'s default.
RECORD_BYTES = 4 << 20
#: The most one such record may cost once read (:func:`~.framing.read_cost`): half of the
#: parent's least bound (four times ``Limits.max_record_bytes``'s default).
RECORD_COST = 32 << 20
#: Under this many leaves in all, the requests of a step are cut by their number alone: no
#: leaf's record comes near 1 KiB of JSON nor 2 KiB of cost, so they fit with room to spare
#: (and a small check does not encode its requests twice).
_FEW_LEAVES = 2048


def request_cuts(head: dict[str, Any], single: list[Any], pp: list[Any]) -> list[tuple[int, int]]:
    """The ``(first, end)`` of each record of ``single`` and ``pp`` (the requests' descriptions of
    the two paths, one a request) after ``head``, in order: every request in one, no record
    beyond :data:`RECORD_BYTES` nor :data:`RECORD_COST` unless it holds one request of each
    path (a request is never split), nor of more than ``REQUESTS_PER_RECORD`` requests."""
    count = max(len(single), len(pp))
    most = REQUESTS_PER_RECORD
    if sum(len(d) for d in single) + sum(len(d) for d in pp) <= _FEW_LEAVES:
        return [(first, min(first + most, count)) for first in range(0, max(count, 1), most)]
    cuts: list[tuple[int, int]] = []
    first, used = 0, _size(head)
    for index in range(count):
        size, cost = _size(single[index : index + 1] + pp[index : index + 1])
        full = index - first >= most or (
            index > first and (used[0] + size > RECORD_BYTES or used[1] + cost > RECORD_COST)
        )
        if full:
            cuts.append((first, index))
            first, used = index, (256, 4096)  # a ``reqs`` record's own fields
        used = (used[0] + size, used[1] + cost)
    cuts.append((first, count))
    return cuts


def _size(value: object) -> tuple[int, int]:
    """The bytes of ``value``'s JSON as a record holds it, and what they cost once read."""
    body = encode({"v": value})
    return len(body), read_cost(body)
