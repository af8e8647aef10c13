"""The words of a :class:`~ppaux.sglang_source.capability.Capability`'s verdicts, one enum each:
whether the transport is there (:class:`Presence`), whether it is a release's
(:class:`TransportMatch`), whether the wire code is (:class:`WireMatch`).

They are ``StrEnum`` members: each is its value wherever a string is wanted (a fingerprint's
JSON, a report's cell), and ``Presence("present")`` is ``Presence.PRESENT``. This module
imports nothing.
"""

from __future__ import annotations

import enum

__all__ = ["Presence", "TransportMatch", "WireMatch"]


class Presence(enum.StrEnum):
    """Whether a tree holds the transport's add and pop."""

    PRESENT = "present"
    ABSENT = "absent"
    UNKNOWN = "unknown"


class TransportMatch(enum.StrEnum):
    """Whether the transport is a release's: its file's bytes (``release``), only add, pop and
    the Protocols (``functions``), neither (``modified``); ``absent`` where there is none."""

    RELEASE = "release"
    FUNCTIONS = "functions"
    MODIFIED = "modified"
    ABSENT = "absent"
    UNKNOWN = "unknown"


class WireMatch(enum.StrEnum):
    """Whether the wire code (``_split_tensor_dict`` and the send and receive functions) is a
    release's."""

    RELEASE = "release"
    MODIFIED = "modified"
    ABSENT = "absent"
    UNKNOWN = "unknown"
