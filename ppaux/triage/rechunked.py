"""A raw stream made of the chunks another stream's bytes become: the base of the readers that
change a log's bytes as they are read (decoded from UTF-16, carriage returns made line ends)."""

from __future__ import annotations

import io
from typing import Protocol

__all__ = ["Rechunked"]


class _Closable(Protocol):
    def close(self) -> None: ...


class Rechunked(io.RawIOBase):
    """Hands out the chunks :meth:`chunk` makes, in order, whatever the reader's buffer size;
    closing it closes ``inner``."""

    def __init__(self, inner: _Closable) -> None:
        self._inner = inner
        self._pending = memoryview(b"")

    def chunk(self) -> bytes | None:
        """The next chunk of bytes (empty ones are skipped), or None at the end."""
        raise NotImplementedError

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self._pending:
            data = self.chunk()
            if data is None:
                return 0
            self._pending = memoryview(data)
        count = min(len(buffer), len(self._pending))
        buffer[:count] = self._pending[:count]
        self._pending = self._pending[count:]
        return count

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            super().close()
