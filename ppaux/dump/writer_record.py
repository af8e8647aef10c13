"""What a pickle showed of its writer, recorded while the machine runs it.

The protocol it declared, the globals it named (and whether each was allowlisted), the tensors
and OrderedDicts it built as torch.save writes them, and the first value torch.save never writes
(a deviation, which :mod:`ppaux.dump.grammar` and the file readers turn into a finding).
"""

from __future__ import annotations

from typing import Any

__all__ = ["WriterRecord"]


class WriterRecord:
    """The record of one pickle's writer; ``op_pos`` is the byte of the opcode being run."""

    #: Where the opcode being run starts (kept by the machine's input).
    op_pos: int

    def __init__(self) -> None:
        self.globals_seen: dict[str, bool] = {}
        #: Every storage-backed tensor the pickle builds, kept or not: torch.load builds (and
        #: may fail on) each one, even those a later entry replaces.
        self.tensors_built: list[Any] = []
        #: (offset, tensor) of each packed tensor (sparse, nested, quantized per channel)
        #: built: its index values are checked once the storages are known.
        self.packed: list[tuple[int, Any]] = []
        self.protocol = 0
        #: The first value the pickle builds that torch.save never writes (where, what, severe):
        #: see :mod:`ppaux.dump.grammar`.
        self.deviation: tuple[str, str, bool] | None = None
        #: ids of the dicts made by collections.OrderedDict (BUILD may set their attributes).
        self.ordered_dicts: set[int] = set()
        #: The OrderedDicts built as torch.save writes backward hooks (GLOBAL, EMPTY_TUPLE,
        #: REDUCE), by id; held so that no id is reused.
        self.torch_hooks: dict[int, Any] = {}
        #: (offset, hooks) of each tensor rebuilt with such hooks: torch keeps the dict itself,
        #: so one filled later in the pickle gives the tensor hooks (checked at STOP).
        self.hooks_given: list[tuple[int, Any]] = []
        #: The values a memo GET fetched, by id (the memo holds them, so no id is reused):
        #: torch.save writes a tensor's size, stride, hooks and a Parameter's data afresh.
        self.fetched: dict[int, Any] = {}
        #: The tuples made by torch.Size, by id; held so that no id is reused. torch.save
        #: writes a tensor's size as a plain tuple, never a torch.Size.
        self.torch_sizes: dict[int, Any] = {}

    def deviate(self, what: str, severe: bool = True) -> None:
        """Record the first value that torch.save's pickler never writes; a later one where
        torch's reading could differ replaces one where it reads alike (the finding's level
        is the worse)."""
        if self.deviation is None or (severe and not self.deviation[2]):
            self.deviation = (f"byte {self.op_pos}", what, severe)
