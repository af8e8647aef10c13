"""bzip2 and xz logs of several streams, read stream after stream (``cat a.xz b.xz``, a
rotated log appended to): a later stream that is corrupt, cut, or bytes after the last stream
that begin none, end the log with an error (:class:`ValueError`, :class:`EOFError`) where the
library's own file readers would drop them unsaid. xz's stream padding (NUL bytes, a multiple of
four, after a stream) is part of a valid file.
"""

from __future__ import annotations

import bz2
import io
import lzma
from typing import Any, BinaryIO

__all__ = ["TRAILING", "MultiStream"]

#: What the error says of bytes after a complete stream that begin no stream of the kind: the
#: text inflated before them is sound (as gzip's "Not a gzipped file").
TRAILING = "bytes after the last complete stream begin no stream"

#: The first bytes of a stream of each kind.
_MAGIC = {"bzip2": b"BZh", "xz": b"\xfd7zXZ\x00"}

#: Compressed bytes read from the file at a time.
_CHUNK = 1 << 16


class MultiStream(io.RawIOBase):
    """The text of every bzip2 or xz (``kind``) stream in ``raw``, one after another; each
    read inflates at most the size asked for."""

    def __init__(self, raw: BinaryIO, kind: str) -> None:
        self._raw = raw
        self._kind = kind
        self._decompressor: Any = self._new()
        self._fed = False  # the current decompressor was given bytes
        self._pending = b""  # compressed bytes read and not yet given to a decompressor

    def _new(self) -> Any:
        return bz2.BZ2Decompressor() if self._kind == "bzip2" else lzma.LZMADecompressor()

    def readable(self) -> bool:
        return True

    def _read(self) -> bytes:
        return self._raw.read(_CHUNK) or b""

    def _next_stream(self) -> bool:
        """After a stream's end: begin the next one (True), or find the file at its end
        (False). Raises :class:`ValueError` for what begins no stream, or padding of a length xz
        forbids."""
        rest = self._decompressor.unused_data + self._pending
        self._pending = b""
        padding = 0
        while True:
            if self._kind == "xz":
                stripped = rest.lstrip(b"\x00")
                padding += len(rest) - len(stripped)
                rest = stripped
            magic = _MAGIC[self._kind]
            if len(rest) >= len(magic) or (rest and not magic.startswith(rest)):
                break
            more = self._read()
            if not more:
                break
            rest += more
        if padding % 4:
            raise ValueError(f"{TRAILING} ({padding} NUL bytes: xz pads in fours)")
        if not rest:
            return False
        if not rest.startswith(_MAGIC[self._kind]):
            raise ValueError(TRAILING)
        self._decompressor = self._new()
        self._fed = False
        self._pending = rest
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        size = len(buffer)
        while True:
            decompressor = self._decompressor
            if decompressor.eof:
                if not self._next_stream():
                    return 0
                continue
            if decompressor.needs_input:
                data = self._pending or self._read()
                self._pending = b""
                if not data:
                    if self._fed:
                        raise EOFError(
                            "Compressed file ended before the end-of-stream marker was reached"
                        )
                    return 0
                self._fed = True
            else:
                data = b""
            out = decompressor.decompress(data, max_length=size)
            if out:
                buffer[: len(out)] = out
                return len(out)

    def close(self) -> None:
        super().close()
