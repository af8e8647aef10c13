"""The words replay, the wires and ``check-observer`` share, one enum each: how the last stage
fills the dict it sends (:class:`Sender`), how the dict travels to rank 0 (:class:`Transport`),
and whose ``add``/``pop`` run (:class:`Impl`).

They are ``str`` enums: ``Transport("wire")`` and ``Transport(Transport.WIRE)`` are the same
member, and a member compares equal to its value. This module imports nothing (not torch), so
every area may use it.
"""

from __future__ import annotations

import enum

__all__ = ["Impl", "Sender", "Transport"]


class Sender(str, enum.Enum):
    """How the last stage puts the auxiliary output into the dict it sends."""

    VALIDATING = "validating"
    LEGACY = "legacy"


class Transport(str, enum.Enum):
    """How the dict travels from the last stage to rank 0."""

    NONE = "none"
    WIRE = "wire"
    TORCH_DISTRIBUTED = "torch-distributed"
    SGLANG = "sglang"


class Impl(str, enum.Enum):
    """Whose ``add``/``pop`` run: ppaux's reference transport, sglang's own module, or both."""

    REFERENCE = "reference"
    SGLANG = "sglang"
    BOTH = "both"
