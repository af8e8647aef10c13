"""Pieces of a line a container runtime split (CRI's ``P``, then the ``F`` that ends it) carried
inside another collector's records, one piece a record (Loki's values, Cloud Logging's
``textPayload``, CloudWatch's events): joined as a CRI log's pieces are, so that a split inside a
rank's tag or an exception's name keeps the record.

A record whose last line is a piece is held, per stream, until the record that ends it comes;
the line it makes keeps the first piece's number and time. A record of that stream that holds
no runtime's lines ends what was held as it stands; so does the log's end.
"""

from __future__ import annotations

from ppaux.triage.peeled import Peeled

__all__ = ["HeldPieces"]


class HeldPieces:
    """The pieces held, per stream, each with the number of the line it began on; a joined
    line is kept to ``max_line`` characters (further pieces are counted, not copied)."""

    __slots__ = ("_held", "_max_line")

    def __init__(self, max_line: int) -> None:
        self._max_line = max_line
        self._held: dict[str | None, tuple[int, Peeled]] = {}

    def __bool__(self) -> bool:
        return bool(self._held)

    def take(self, number: int, peeled: Peeled) -> list[tuple[int, Peeled]]:
        """The records to read now, each with its line's number, once ``peeled`` (on line
        ``number``) is taken: what was held for its stream, joined to its first line where it
        goes on with it, then its own lines but a last piece, which is held."""
        ready: list[tuple[int, Peeled]] = []
        held = self._held.pop(peeled.stream, None)
        if held is not None:
            first, piece = held
            if peeled.cri and peeled.lines:
                if len(piece.lines[0]) < self._max_line:
                    joined = (piece.lines[0] + peeled.lines[0])[: self._max_line]
                    piece.lines = [joined]
                if len(peeled.lines) == 1 and peeled.partial:  # a piece in the middle
                    self._held[peeled.stream] = (first, piece)
                    return []
                ready.append((first, piece))
                peeled.lines = peeled.lines[1:]
            else:
                ready.append((first, piece))
        if peeled.cri and peeled.partial and peeled.lines:
            piece = _alike(peeled, [peeled.lines[-1]])
            peeled.lines = peeled.lines[:-1]
            self._held[peeled.stream] = (number, piece)
        if peeled.lines or not peeled.cri:
            ready.append((number, peeled))
        return ready

    def rest(self) -> list[tuple[int, Peeled]]:
        """What is still held at the log's end, each read as it stands."""
        rest = sorted(self._held.values(), key=lambda held: held[0])
        self._held.clear()
        return rest


def _alike(peeled: Peeled, lines: list[str]) -> Peeled:
    """A record of ``lines`` with ``peeled``'s time and stream."""
    alike = Peeled(lines)
    alike.time, alike.time_text, alike.stream = peeled.time, peeled.time_text, peeled.stream
    alike.runtime, alike.cri, alike.decoded = peeled.runtime, peeled.cri, peeled.decoded
    return alike
