"""A container runtime's line (CRI's ``<time> <stream> <F|P> <text>``) carried inside another
collector's record: a node agent that forwards the runtime's file as it stands (Cloud Logging's
``textPayload``, Loki's values, CloudWatch's events, journald's ``MESSAGE``, Docker's ``log``)
keeps the runtime's own prefix in the message. The prefix is taken off as a CRI log's is, and
its time, the runtime's, is the line's.
"""

from __future__ import annotations

from ppaux.triage.lineshapes import CRI

__all__ = ["CriLines", "cri_lines"]


class CriLines:
    """The texts of a message's CRI lines, the first one's time as written and its stream."""

    __slots__ = ("stream", "texts", "time_text")

    def __init__(self, texts: list[str], time_text: str, stream: str) -> None:
        self.texts = texts
        self.time_text = time_text
        self.stream = stream


def cri_lines(lines: list[str]) -> CriLines | None:
    """``lines`` without the runtime's prefix when every one that is not blank has it; None
    when one does not (a message that only quotes such a line stays as written)."""
    texts: list[str] = []
    first = None
    for line in lines:
        if not line.strip():
            texts.append(line)
            continue
        match = CRI.match(line.rstrip("\r"))
        if match is None:
            return None
        first = first or match
        texts.append(match.group("text") or "")
    if first is None:
        return None
    return CriLines(texts, first.group("time"), first.group("stream"))
