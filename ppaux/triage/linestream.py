"""A binary stream given out one bounded line at a time, for the readers that rewrite a log's
lines (a table's rows, a wrapped paste's pieces joined, a paste's marks peeled).

:class:`LineStream` reads ``inner`` with ``readline`` bounded at ``max_line + 1`` bytes (a
longer line comes in pieces, the last one ending it), asks its subclass for each line to give
out, and fills each read with as many of them as the buffer holds: a reader's head is one read,
and what tells a log's shape is read from the head.
"""

from __future__ import annotations

import io
from typing import BinaryIO

__all__ = ["LineStream"]


class LineStream(io.RawIOBase):
    """``inner``'s lines as :meth:`_line_out` rewrites them; closing it closes ``inner``."""

    def __init__(self, inner: BinaryIO, max_line: int) -> None:
        super().__init__()
        self._inner = inner
        self._max_line = max_line
        self._out = b""  # what is left of the line being given out

    def readable(self) -> bool:
        return True

    def _read_line(self) -> bytes:
        """``inner``'s next line, or its next ``max_line + 1`` bytes; empty at its end."""
        return self._inner.readline(self._max_line + 1)

    def _line_out(self) -> bytes | None:
        """The next bytes to give out (a line, perhaps empty), or None at the end."""
        raise NotImplementedError

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        """As many lines as ``buffer`` holds (a reader's head is one read)."""
        filled = 0
        while filled < len(buffer):
            if not self._out:
                line = self._line_out()
                if line is None:
                    break
                self._out = line
            size = min(len(buffer) - filled, len(self._out))
            buffer[filled : filled + size] = self._out[:size]
            self._out = self._out[size:]
            filled += size
        return filled

    def close(self) -> None:
        if not self.closed:
            self._inner.close()
        super().close()
