"""How many values an auxiliary value holds once the lists it shares are written out, as
``torch.tensor`` writes them out, bounded before any tensor is built."""

from __future__ import annotations

from ppaux.errors import LimitExceeded
from ppaux.limits import Limits

__all__ = ["check_expanded"]


def check_expanded(value: object, limits: Limits, path: str, key: str) -> None:
    """Raise :class:`LimitExceeded` when ``value`` holds more than ``max_items`` values once
    the lists and tuples it shares are repeated, as ``torch.tensor`` repeats them. A pickle
    stores a list once and refers to it again in two bytes: forty lists, each holding the
    next one twice, are 2**40 numbers in under 2 KB, which no tensor holds. The count takes
    each list once (its total kept), so it costs what the file holds."""
    totals: dict[int, int] = {}

    def total(node: object) -> int:
        if not isinstance(node, (list, tuple)):
            return 1
        known = totals.get(id(node))
        if known is None:  # walk() bounded the depth: the recursion stays within max_depth
            known = totals[id(node)] = 1 + sum(total(item) for item in node)
        return known

    count = total(value)
    if count > limits.max_items:
        raise LimitExceeded(
            path,
            "max_items",
            limits.max_items,
            f"the auxiliary value {key} holds {count:,} values once the lists it "
            "repeats are written out, as a tensor would hold them",
        )
