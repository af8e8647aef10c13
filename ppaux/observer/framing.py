"""The frames the check's child process sends its parent: a 4-byte big-endian length, then that
many bytes of UTF-8 JSON (an object). Only JSON crosses: nothing the child sends is unpickled or
run. Imports nothing beyond the standard library.

Which hook the child is running does not cross as frames (two per hook call, nine hook calls a
step: most of what a long check sent): the child writes it into the *hook slot*, a page it
shares with its parent (:data:`SLOT_SIZE` bytes: the ``time.monotonic()`` of the write, a
4-byte length, then JSON of ``{"event": "hook", "method", "where"}``, ``method`` None between
hooks), overwritten at each hook's start and end. The parent reads it once the child has ended
(the hook it was in); nothing in it moves the parent's deadlines.
"""

from __future__ import annotations

import json
import struct
from typing import Any

__all__ = [
    "MAX_FRAME",
    "SLOT_SIZE",
    "FrameError",
    "FrameReader",
    "encode",
    "read_cost",
    "read_slot",
    "read_slot_step",
    "slot_bytes",
    "slot_entry",
    "slot_step",
]

#: The length no frame reaches: a larger one is no record of any size the child may be allowed
#: (four bytes of text read as a length are 512 MiB or more), but the records' descriptor
#: written over. What a reader takes is bounded further by its ``most``
#: (``Limits.max_record_bytes`` in the check's parent).
MAX_FRAME = 1 << 28
_HEADER = struct.Struct(">I")
#: The hook slot's size, in bytes (one page): a hook's name and where it is defined; a longer
#: record is written without where.
SLOT_SIZE = 4096
_SLOT_HEAD = struct.Struct(">dI")
#: The slot's last bytes: the batch size and the step the child is at (both 0 until the first
#: step), written apart from the hook's record (:func:`slot_step`).
_SLOT_STEP = struct.Struct(">qq")
_STEP_AT = SLOT_SIZE - _SLOT_STEP.size


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


def slot_entry(message: dict[str, Any]) -> bytes:
    """The body written into the hook slot for ``message``, cut to fit (see the module's
    docstring); :func:`slot_write` puts the time before it."""
    body = _ENCODE(message).encode("utf-8")
    if len(body) > _STEP_AT - _SLOT_HEAD.size:
        cut = {"event": "hook", "method": str(message.get("method"))[:200]}
        body = _ENCODE(cut).encode("utf-8")
    return body


def slot_bytes(body: bytes, when: float) -> bytes:
    """What the child writes into the slot: ``when``, ``body``'s length, then ``body``."""
    return _SLOT_HEAD.pack(when, len(body)) + body


def slot_step(batch_size: int, index: int) -> tuple[int, bytes]:
    """Where in the slot, and what, the child writes as it begins step ``index`` of
    ``batch_size``: its parent then says at which step the child ended."""
    return _STEP_AT, _SLOT_STEP.pack(batch_size, index + 1)


def read_slot_step(data: bytes) -> tuple[int, int] | None:
    """The batch size and the step in the slot's bytes ``data``; None before the first step
    (or where the target wrote over it)."""
    if len(data) < SLOT_SIZE:
        return None
    batch_size, index = _SLOT_STEP.unpack_from(data, _STEP_AT)
    if not (0 < batch_size < 1 << 31 and 0 < index < 1 << 31):
        return None
    return batch_size, index - 1


def read_slot(data: bytes) -> tuple[float, dict[str, Any] | None]:
    """The time and the record in the slot's bytes ``data``: (0.0, None) where nothing was
    written; the record None where it does not read (a target that wrote over it)."""
    if len(data) < _SLOT_HEAD.size:
        return 0.0, None
    when, size = _SLOT_HEAD.unpack_from(data)
    # NaN, empty, or cut:
    if when != when or size == 0 or size > min(len(data), _STEP_AT) - _SLOT_HEAD.size:
        return (0.0 if when != when else when), None
    try:
        message = json.loads(data[_SLOT_HEAD.size : _SLOT_HEAD.size + size].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):  # nested past the parser's depth
        return when, None
    return when, message if isinstance(message, dict) else None


#: What reading JSON may cost per byte of its text, at most, and per container and per item:
#: a dict (``{``), a list (``[``), an item of either (``,`` and ``:``); Python's objects on a
#: 64-bit build, a dict with its first entries and an item with its object and its slot.
_COST_PER = ((b"{", 232), (b"[", 72), (b",", 64), (b":", 64))


def read_cost(data: bytes | bytearray, start: int = 0, end: int | None = None) -> int:
    """An upper bound on the bytes ``json.loads`` builds from ``data[start:end]``, counted
    before it is read (a record of tiny objects, ``[{},{},...]``, costs about twenty times its
    length; a real record, long strings and numbers, about four times)."""
    end = len(data) if end is None else end
    return end - start + sum(data.count(mark, start, end) * each for mark, each in _COST_PER)


class FrameReader:
    """Reassembles frames from bytes as they arrive: :meth:`feed` returns the messages that
    are complete; a frame longer than ``most`` bytes raises :class:`FrameError` as soon as its
    length is read (so the buffer never holds more than ``most`` bytes and the last read), and
    ``too_large`` is then its length; a malformed one raises :class:`FrameError` too."""

    def __init__(self, most: int = MAX_FRAME, most_cost: int | None = None) -> None:
        self._buffer = bytearray()
        self.most = min(most, MAX_FRAME)
        #: The most a frame may cost once read (:func:`read_cost`), or None: no bound.
        self.most_cost = most_cost
        self._failed: FrameError | None = None
        #: The length of a frame refused for being longer than ``most``, or None.
        self.too_large: int | None = None
        #: What a frame refused for costing more than ``most_cost`` would cost, or None.
        self.too_costly: int | None = None

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        """The complete messages once ``data`` is appended. A frame that cannot be taken
        after some that can is raised by the next call (or :meth:`check`), once those are
        taken: what came before it is taken in its place in the stream."""
        self.check()
        self._buffer += data
        out: list[dict[str, Any]] = []
        while len(self._buffer) >= _HEADER.size:
            try:
                message = self._next()
            except FrameError as exc:
                if not out:
                    raise
                self._failed = exc
                break
            if message is None:
                break
            out.append(message)
        return out

    def check(self) -> None:
        """Raise the frame that could not be taken, if one is waiting (see :meth:`feed`)."""
        failed, self._failed = self._failed, None
        if failed is not None:
            self._buffer.clear()
            raise failed

    def _next(self) -> dict[str, Any] | None:
        """The buffer's first message, taken from it; None while it is incomplete."""
        (size,) = _HEADER.unpack_from(self._buffer)
        if size >= MAX_FRAME:
            raise FrameError(f"a frame of {size:,} bytes, a length no record has")
        if size > self.most:
            self.too_large = size
            raise FrameError(f"a record of {size:,} bytes (the most is {self.most:,})")
        if len(self._buffer) < _HEADER.size + size:
            return None
        if self.most_cost is not None:
            # Counted in place: a record refused costs no copy of it.
            cost = read_cost(self._buffer, _HEADER.size, _HEADER.size + size)
            if cost > self.most_cost:
                self.too_costly = cost
                del self._buffer[: _HEADER.size + size]
                raise FrameError(f"a record that would cost {cost:,} bytes to read")
        try:
            # Decoded in place (no copy of the bytes), and the bytes let go before parsing.
            with memoryview(self._buffer) as view:
                text = str(view[_HEADER.size : _HEADER.size + size], "utf-8")
        except UnicodeDecodeError as exc:
            del self._buffer[: _HEADER.size + size]
            raise FrameError(f"a frame that is not JSON ({exc})") from None
        del self._buffer[: _HEADER.size + size]
        try:
            message = json.loads(text)
        except ValueError as exc:
            raise FrameError(f"a frame that is not JSON ({exc})") from None
        except RecursionError:
            raise FrameError("a frame of JSON nested deeper than it can be read") from None
        if not isinstance(message, dict):
            raise FrameError("a frame that is not a JSON object")
        return message

    @property
    def pending(self) -> int:
        """Bytes of an incomplete frame still held."""
        return len(self._buffer)
