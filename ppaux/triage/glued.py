"""Records written after other text on the same line: a progress bar that ends in a carriage
return or in nothing at all, then a rank's one-line exception, or an exception with no rank's
tag at all; and several ranks' records glued one after the other.

A terminal shows such a line as the bar, overwritten; the file holds both in one line, and the
record's own start is inside it. A record starts at torch's ``[rankN]:`` tag, or right after a
progress bar's last update (tqdm's ``... | 5/10 [00:01<00:01, 3.2it/s]``) where an exception's
line or a traceback's header follows it at once. An exception's name after other text may be
prose that names it, or a prefix no layer knows (which the traceback reader's margins take
off), and stays in its line; so does a tag or a bar inside a string literal on the line (a
request's echo of text someone sent).
"""

from __future__ import annotations

import dataclasses

from ppaux.patterns import lazy
from ppaux.triage.flattened import quoted_spans
from ppaux.triage.lineformat import LogLine, peel
from ppaux.triage.lineshapes import Launcher

__all__ = ["glued_at", "glued_starts", "unglued"]

#: torch's rank tag, followed as torch writes it: a space, a name, or its C++ line's bracket.
_RANK_TAG = lazy(r"\[rank\d{1,6}\]:(?=[ \[A-Za-z_])")
#: A rank's tag that ends the text before another: the two are one tag.
_TAG_END = lazy(r"\[rank\d{1,6}\]: ?$")
#: The rank :func:`~ppaux.triage.lineformat.ranked_stream` puts at a stream's end.
_RANKED = lazy(r"(?:^|, )rank \d{1,6}$")
#: Characters a progress bar's body is drawn with: rich's and pip's lines, tqdm's blocks.
_CELLS = "━╸╺█▉▊▋▌▍▎▏"
#: Where a progress bar's update may end with a record right after it: after a bracket (tqdm,
#: Keras), a digit or '%' (rich's time or percentage, Keras' last metric), a bar's cell or
#: edge, or a rate's unit; the record is an exception's line (a dotted name that ends as
#: exceptions' names do, then ':' or the line's end) or a traceback's header.
_BAR_THEN_RECORD = lazy(
    rf"(?:(?<=[\]\d%|{_CELLS}])|(?<=step)|(?<=it/s)|(?<=s/it))"
    r"(?=Traceback \(most recent call last\):|"
    r"(?:[A-Za-z_]\w{0,100}\.){0,10}[A-Za-z_]\w{0,100}(?:Error|Exception|Interrupt|Failure)"
    r"(?::|$))"
)
#: What may hint at a progress bar in a line: no other line is searched for one.
_BAR_HINT = lazy(rf"[\]{_CELLS}]")
#: What a record after a bar holds: no other line is searched for a bar's end.
_RECORD_HINT = lazy(r"Error|Exception|Interrupt|Failure|Traceback \(m")
#: A bar's body: a run of cells (rich, pip, tqdm), or Keras' ``120/500 [====>....]``.
_BAR_BODY = lazy(rf"[{_CELLS}]+|\d/\d{{1,15}} \[[=>.]{{1,200}}\]")
#: What a bar writes after its body: counts, sizes, rates, times and metrics, no sentence.
_BAR_STATS = lazy(r"[\w .:/%<>,=?|+-]{0,200}")
#: tqdm's update up to its closing bracket: its count (``1/10``, ``1.5k/?``; ``5it`` where the
#: total is unknown), then ``[elapsed<remaining, rate, postfix]``.
_BAR_TAIL = lazy(
    r"(?:\d{1,15}(?:\.\d{1,3})?[kMGTPEZY]?/(?:\d{1,15}(?:\.\d{1,3})?[kMGTPEZY]?|\?)"
    r"|\d{1,15}(?:\.\d{1,3})?[kMGTPEZY]?[A-Za-z]{1,12}) "
    r"\[(?:\d{1,6}:)?\d\d:\d\d(?:<(?:(?:\d{1,6}:)?\d\d:\d\d|\?))?(?:,[^\r\n\[\]]{0,300})?\]$"
)
#: Characters before a bar's closing bracket that its count and bracket may take.
_BAR_REACH = 400
#: Brackets tried as a bar's end in one line: a line is read in time linear in its length.
_MAX_BAR_TRIES = 16


def _bar_ends(text: str) -> list[int]:
    """Where a record starts right after a progress bar's update in ``text``."""
    ends: list[int] = []
    for tries, match in enumerate(_BAR_THEN_RECORD.finditer(text)):
        if tries >= _MAX_BAR_TRIES:
            break
        end = match.end()
        if _BAR_TAIL.search(text, max(0, end - _BAR_REACH), end) is not None or _drawn(text, end):
            ends.append(end)
    return ends


def _drawn(text: str, end: int) -> bool:
    """Whether a bar's body (rich, pip, Keras, tqdm's cells) and only its figures stand
    just before ``end`` in ``text``."""
    last = -1
    for body in _BAR_BODY.finditer(text, max(0, end - _BAR_REACH), end):
        last = body.end()
    return last >= 0 and _BAR_STATS.fullmatch(text, last, end) is not None


def glued_starts(text: str) -> list[tuple[int, bool]]:
    """Where each record glued after other text starts in ``text``, in order, each with
    whether a rank's tag starts it (else a progress bar ends just before it); empty when none
    does (a record at the line's start is no glued one)."""
    starts: list[tuple[int, bool]] = []
    for match in _RANK_TAG.finditer(text, 1):
        start = match.start()
        before = text[:start]
        # ``[rank1]:[rank1]:`` is one tag, as is a launcher's ``host:`` or ``[default1]:``
        # before it; after a record's text (``Traceback (most recent call last):``) the tag
        # starts a record
        one_tag = _TAG_END.search(before, max(0, start - 16)) is not None or (
            before.endswith(":") and (before.endswith("]:") or " " not in before.strip())
        )
        if before.strip() and not one_tag:
            starts.append((start, True))
    if _BAR_HINT.search(text) is not None and _RECORD_HINT.search(text) is not None:
        starts += [(end, False) for end in _bar_ends(text) if end < len(text)]
    if not starts:
        return []
    spans = quoted_spans(text)
    # an echo's text is text
    kept = [s for s in starts if not any(begin <= s[0] < end for begin, end in spans)]
    return sorted(set(kept))


def glued_at(text: str) -> int | None:
    """Where the first record glued after other text starts in ``text``; None when none
    does."""
    starts = glued_starts(text)
    return starts[0][0] if starts else None


def unglued(line: LogLine) -> list[LogLine]:
    """``line``, or the text before the first glued record and each record (a rank's tag read
    as :func:`peel` reads one at a line's start; a record after a bar keeps the stream of the
    text it follows), each keeping the line's number and time."""
    starts = glued_starts(line.text)
    if not starts:
        return [line]
    text = line.text
    # the process a launcher or envelope names, without the rank a tag at the line's start gave
    base = (_RANKED.sub("", line.stream) or None) if line.stream is not None else None
    parts = [dataclasses.replace(line, text=text[: starts[0][0]].rstrip())]
    bounds = [*starts[1:], (len(text), False)]
    for (start, tagged), (end, _) in zip(starts, bounds, strict=True):
        piece = text[start:end].rstrip() if end < len(text) else text[start:]
        if tagged:
            record = peel(line.number, piece, None, None, base, Launcher.NONE)
        else:
            record = LogLine(line.number, piece, None, None, None, parts[-1].stream)
        parts.append(
            dataclasses.replace(
                record,
                time=line.time,
                time_text=line.time_text,
                zone=line.zone,
                partial=line.partial,
            )
        )
    return parts
