"""The frames the check's child process sends its parent: a 4-byte big-endian length, then that
many bytes of UTF-8 JSON (an object). Only JSON crosses: nothing the child sends is unpickled or
run. Imports nothing beyond the standard library.
"""

from __future__ import annotations

import json
import struct
from typing import Any

__all__ = ["MAX_FRAME", "FrameError", "FrameReader", "encode"]

#: The largest frame a parent accepts (the child bounds what it describes far below this).
MAX_FRAME = 64 << 20
_HEADER = struct.Struct(">I")


#: Bytes on the results pipe that are not a frame of a JSON object (a plain ``ValueError``:
#: the parent reports it as the target's doing, never to a caller).
FrameError = ValueError


#: The encoder, made and bound when this module is imported: in the check's child that is
#: before the target loads, so that a target replacing ``json.dumps`` (or ``JSONEncoder``'s
#: methods) afterwards does not change the records. A target that sets out to rewrite the
#: records can still do so (see docs/observers.md, "What runs where").
# ASCII: a str the target made that UTF-8 cannot encode (a lone surrogate in a key) crosses as
# JSON's own escape, and is read back as the same str.
_ENCODER = json.JSONEncoder(ensure_ascii=True, allow_nan=False)
_ENCODE = _ENCODER.encode
_ENCODER.iterencode = _ENCODER.iterencode  # type: ignore[method-assign]  # bound on the object
_PACK = _HEADER.pack


def encode(message: dict[str, Any]) -> bytes:
    """``message`` framed: its length, then its JSON."""
    body = _ENCODE(message).encode("utf-8")
    return _PACK(len(body)) + body


class FrameReader:
    """Reassembles frames from bytes as they arrive: :meth:`feed` returns the messages that
    are complete; an oversized or malformed frame raises :class:`FrameError`."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        """The complete messages once ``data`` is appended."""
        self._buffer += data
        out: list[dict[str, Any]] = []
        while len(self._buffer) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(self._buffer)
            if size > MAX_FRAME:
                raise FrameError(f"a frame of {size} bytes (the most is {MAX_FRAME})")
            if len(self._buffer) < _HEADER.size + size:
                break
            body = bytes(self._buffer[_HEADER.size : _HEADER.size + size])
            del self._buffer[: _HEADER.size + size]
            try:
                message = json.loads(body.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as exc:
                raise FrameError(f"a frame that is not JSON ({exc})") from None
            if not isinstance(message, dict):
                raise FrameError("a frame that is not a JSON object")
            out.append(message)
        return out

    @property
    def pending(self) -> int:
        """Bytes of an incomplete frame still held."""
        return len(self._buffer)
