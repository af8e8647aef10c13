"""The lines of a source file that may spell a word, read from its bytes before any parse: the
analysis's walks look only at the nodes on them (a syntax tree's node lies on the lines of its
tokens), which makes a walk for a few names cost what those lines hold, not the whole file.
"""

from __future__ import annotations

import re

__all__ = ["rows_naming"]

#: A run of bytes that are not ASCII.
_NOT_ASCII = re.compile(rb"[\x80-\xff]+")


def rows_naming(data: bytes | None, words: tuple[str, ...]) -> list[int] | None:
    """The lines (1-based, sorted) on which a file without a coding declaration may spell one of
    ``words`` (ASCII): those that hold one as text, and those that hold a byte that is not ASCII
    (an identifier's characters that NFKC makes ASCII ones). None for a file whose first two
    lines say ``coding`` (its codec may spell a word in any bytes), or no file. Lines end as
    CPython's tokenizer ends them: LF, CRLF or CR."""
    if data is None:
        return None
    text = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    if b"coding" in b"\n".join(text.split(b"\n", 2)[:2]):
        return None
    places = [match.start() for match in _NOT_ASCII.finditer(text)]
    for word in words:
        spelled = word.encode("ascii")
        at = text.find(spelled)
        while at >= 0:
            places.append(at)
            at = text.find(spelled, at + len(spelled))
    rows: list[int] = []
    row, counted = 1, 0
    for place in sorted(places):
        row += text.count(b"\n", counted, place)
        counted = place
        if not rows or rows[-1] != row:
            rows.append(row)
    return rows
