"""Stand-ins for objects whose class a dump names but ppaux never imports: an instance of a
class named like the saved one, holding what the reader recorded, which the wire pickles back
through ppaux rather than through the class. Torch-free."""

from __future__ import annotations

from typing import Any

from ppaux.dump import Opaque

__all__ = ["StandIn", "stand_in"]


class StandIn:
    """Base of the stand-ins for objects whose class was never imported (see :func:`stand_in`)."""

    __slots__ = ("source",)

    def __init__(self, source: Opaque) -> None:
        self.source = source

    def __repr__(self) -> str:
        return f"<{self.source.name} object, not imported>"

    # The wire pickles non-tensors: rebuild through ppaux, not the class.
    def __reduce__(self) -> tuple[Any, ...]:
        return (stand_in, (self.source,))


_STAND_IN_TYPES: dict[str, type[StandIn]] = {}


def stand_in(value: Opaque) -> StandIn:
    """A StandIn whose class is named like the saved one (no module is imported)."""
    cls = _STAND_IN_TYPES.get(value.name)
    if cls is None:
        module, _, short = value.name.rpartition(".")
        cls = type(short or value.name, (StandIn,), {"__slots__": (), "__module__": module or "?"})
        _STAND_IN_TYPES[value.name] = cls
    return cls(value)
