"""What the checkpoints remember of an output message they follow: its hops so far.

A message followed clean is remembered as an int (one bit per hop it passed, see
:mod:`ppaux.capture.checkpoints`); once it is seen dirty, as a :class:`Trail`, which the capture
of the failure writes out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypedDict

from ppaux.capture.hops import HOP_TEXT

__all__ = ["Followed", "HopRecord", "Trail"]


class HopRecord(TypedDict):
    """One hop of a trail, as the capture file holds it."""

    hop: str
    #: The hop in words.
    at: str
    state: Literal["clean", "dirty"]
    #: ``"name (type)"`` of each value that is not a tensor there.
    keys: list[str]


class Trail:
    """The hops one dirty message passed: clean ones first, then from the first dirty hop on."""

    def __init__(self, clean: list[str]) -> None:
        self.hops: list[HopRecord] = [
            {"hop": h, "at": HOP_TEXT[h], "state": "clean", "keys": []} for h in clean
        ]
        self.culprit: dict[str, Any] | None = None
        self.captured = False

    def add(self, hop: str, dirty: Sequence[tuple[str, str]]) -> None:
        """Record ``hop`` (clean when ``dirty`` is empty)."""
        self.hops.append(
            {
                "hop": hop,
                "at": HOP_TEXT[hop],
                "state": "dirty" if dirty else "clean",
                "keys": [f"{name} ({kind})" for name, kind in dirty],
            }
        )

    def extra(self) -> dict[str, Any]:
        """The capture fields: ``trail`` and, when one was found, ``culprit``."""
        out: dict[str, Any] = {"trail": [dict(h) for h in self.hops]}
        if self.culprit is not None:
            out["culprit"] = dict(self.culprit)
        return out


#: What the checkpoints hold per followed message (by its dict's id): hop bits while it is
#: clean, its trail once it was seen dirty.
Followed = int | Trail
