"""Where the pickle machine reads: the input, the position in it, and errors that name a byte.

:class:`PickleInput` holds the bytes, the offset of the next one and of the opcode being run,
and whether the pickle wanted bytes past the end; its steps read bytes, lines and packed
integers. The machine's other parts (:mod:`ppaux.dump.pickle_spending`,
:mod:`ppaux.dump.pickle_state`) build on it.
"""

from __future__ import annotations

import struct

from ppaux.errors import DumpError
from ppaux.limits import Limits

__all__ = ["PickleInput"]


class PickleInput:
    """The bytes of one pickle read from ``data[start:]``, and the position in them."""

    def __init__(self, data: bytes, *, path: str, limits: Limits, start: int = 0) -> None:
        self.data = data
        self.path = path
        self.limits = limits
        self.pos = start
        #: Where the opcode being run starts: errors and deviations name that byte.
        self.op_pos = start
        #: Whether the pickle wanted bytes past the end of ``data`` (a cut pickle).
        self.ran_out = False

    def error(self, reason: str) -> DumpError:
        """A DumpError that names the byte offset of the opcode being run."""
        return DumpError(self.path, f"malformed pickle at byte {self.op_pos}: {reason}")

    def read(self, n: int) -> bytes:
        """The next ``n`` bytes of the pickle (a cut pickle raises, noting that it ran out)."""
        end = self.pos + n
        if n < 0 or end > len(self.data):
            self.ran_out = n >= 0
            raise DumpError(
                self.path,
                f"truncated pickle: {n} bytes wanted at byte {self.pos}, "
                f"{max(len(self.data) - self.pos, 0)} left",
            )
        chunk = self.data[self.pos : end]
        self.pos = end
        return chunk

    def readline(self) -> bytes:
        """The next line of a text opcode, without its newline."""
        end = self.data.find(b"\n", self.pos)
        if end < 0:
            self.ran_out = True
            raise DumpError(self.path, f"truncated pickle: line at byte {self.pos} never ends")
        line = self.data[self.pos : end]
        self.pos = end + 1
        return line

    def unpack(self, n: int, fmt: str) -> int:
        """The next ``n`` bytes read as the one integer ``fmt`` (a struct format) packs."""
        end = self.pos + n
        if end > len(self.data):
            self.read(n)  # raises, naming what ran out
        value: int = struct.unpack_from(fmt, self.data, self.pos)[0]
        self.pos = end
        return value

    def read_byte(self) -> int:
        """The next byte of the pickle, as an int (a cut pickle raises as :meth:`read`)."""
        pos = self.pos
        if pos >= len(self.data):
            self.read(1)  # raises, naming what ran out
        self.pos = pos + 1
        return self.data[pos]
