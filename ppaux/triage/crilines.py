"""A container runtime's line (CRI's ``<time> <stream> <F|P> <text>``) carried inside another
collector's record: a node agent that forwards the runtime's file as it stands (Cloud Logging's
``textPayload``, Loki's values, CloudWatch's events, journald's ``MESSAGE``, Docker's ``log``)
keeps the runtime's own prefix in the message. The prefix is taken off as a CRI log's is, and
its time, the runtime's, is the line's. A line the runtime split (``P`` pieces, then the ``F``
one that ends it) is joined as in a CRI log: within one message here, across messages by the
reader, which holds a message's last piece until the one that ends it comes.
"""

from __future__ import annotations

from ppaux.triage.lineshapes import CRI

__all__ = ["CriLines", "cri_lines"]


class CriLines:
    """The texts of a message's CRI lines (a split line's pieces joined), the first one's time
    as written and its stream; ``partial``: the last text is a piece the next message ends."""

    __slots__ = ("partial", "stream", "texts", "time_text")

    def __init__(self, texts: list[str], time_text: str, stream: str, partial: bool) -> None:
        self.texts = texts
        self.time_text = time_text
        self.stream = stream
        self.partial = partial


def cri_lines(lines: list[str]) -> CriLines | None:
    """``lines`` without the runtime's prefix when every one that is not blank has it; None
    when one does not (a message that only quotes such a line stays as written)."""
    texts: list[str] = []
    first = None
    partial = False
    for line in lines:
        if not line.strip():
            texts.append(line)
            partial = False
            continue
        match = CRI.match(line.rstrip("\r"))
        if match is None:
            return None
        first = first or match
        text = match.group("text") or ""
        if partial:  # the piece before was not the line's last: this one goes on with it
            texts[-1] += text
        else:
            texts.append(text)
        partial = match.group("tag") == "P"
    if first is None:
        return None
    return CriLines(texts, first.group("time"), first.group("stream"), partial)
