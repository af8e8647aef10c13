"""The pickle machine's state and the steps every opcode is made of.

:class:`PickleState` is three parts and the stack: the input and the position in it
(:mod:`ppaux.dump.pickle_input`), the bounds spent (:mod:`ppaux.dump.pickle_spending`), what the
pickle showed of its writer (:mod:`ppaux.dump.writer_record`), and here the stack, its marks and
the memo with the steps that push, pop and store. :mod:`ppaux.dump.pickle_vm` runs the opcodes on
it.
"""

from __future__ import annotations

from typing import Any

from ppaux.dump.pickle_spending import PickleSpending
from ppaux.dump.writer_record import WriterRecord
from ppaux.errors import LimitExceeded
from ppaux.limits import Limits

__all__ = ["PickleState"]


class PickleState(PickleSpending, WriterRecord):
    """One pickle's state while it runs from ``data[start:]``, and the steps that change it."""

    def __init__(self, data: bytes, *, path: str, limits: Limits, start: int = 0) -> None:
        PickleSpending.__init__(self, data, path=path, limits=limits, start=start)
        WriterRecord.__init__(self)
        self.stack: list[Any] = []
        self.metastack: list[list[Any]] = []
        self.memo: dict[int, Any] = {}

    def push(self, value: object) -> None:
        """Push ``value``, counted against max_items."""
        self.items += 1  # _count() inline: push runs for nearly every opcode
        if self.items > self.limits.max_items:
            self._count(0)
        self.stack.append(value)

    def pop(self) -> Any:
        """Pop the top of the stack."""
        if not self.stack:
            raise self.error("stack underflow")
        return self.stack.pop()

    def top(self) -> Any:
        """The top of the stack, left on it."""
        if not self.stack:
            raise self.error("stack underflow")
        return self.stack[-1]

    def mark(self) -> None:
        """Open a mark: a new stack, the old one kept under it (bounded by max_depth)."""
        if len(self.metastack) >= self.limits.max_depth:
            raise LimitExceeded(
                self.path, "max_depth", self.limits.max_depth, "the pickle nests too deeply"
            )
        self.metastack.append(self.stack)
        self.stack = []

    def pop_mark(self) -> list[Any]:
        """Close the last mark: the items pushed since it, and the stack under it back."""
        if not self.metastack:
            raise self.error("no mark to pop")
        items = self.stack
        self.stack = self.metastack.pop()
        return items

    def memo_put(self, index: int) -> None:
        """Store the top of the stack as memo entry ``index`` (bounded by max_memo)."""
        memo = self.memo
        if len(memo) >= self.limits.max_memo and index not in memo:
            raise LimitExceeded(
                self.path,
                "max_memo",
                self.limits.max_memo,
                "the pickle stores too many memo entries",
            )
        if not self.stack:
            raise self.error("stack underflow")
        memo[index] = self.stack[-1]

    def memo_get(self, index: int) -> None:
        """Push memo entry ``index``."""
        try:
            value = self.memo[index]
        except KeyError:
            raise self.error(f"memo entry {index} was never stored") from None
        self.fetched[id(value)] = value
        self.push(value)
