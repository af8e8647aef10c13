"""A serving framework's log records flattened onto one line: vLLM's logger writes its prefix
(``ERROR 11-04 18:02:56 [v1/executor/multiproc_executor.py:597] ``) before each line of a
traceback, and a paste that lost the newlines keeps the prefixes. Where a line holds the
prefix twice, or once after other text (the line before it joined to it), each prefix begins a
line of its own again: the traceback's frames,
code and exception line come back as the logger wrote them.
"""

from __future__ import annotations

from ppaux.patterns import lazy

__all__ = ["logger_records"]

#: vLLM's logger prefix anywhere in a line (its file named alone or by a path in the package).
_PREFIX = lazy(
    r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,6})? "
    r"\[?[\w.-]{1,200}(?:/[\w.-]{1,200}){0,16}:\d{1,9}\] "
)
#: Records taken from one line (a hostile line does not cost more).
_MAX_RECORDS = 400


def logger_records(text: str) -> list[str] | None:
    """The records flattened into ``text`` (the text before the first prefix, if any, then
    each record's message without its prefix), or None where ``text`` holds no prefix, or one
    at its start."""
    if "] " not in text:
        return None
    found = []
    for match in _PREFIX.finditer(text):
        found.append(match)
        if len(found) >= _MAX_RECORDS:
            break
    if not found or (len(found) < 2 and not text[: found[0].start()].strip()):
        return None  # one record, at the line's start: a line as the logger wrote it
    before, label = _labelled(text[: found[0].start()])
    records = [before] if before.strip() else []
    for index, match in enumerate(found):
        end = found[index + 1].start() if index + 1 < len(found) else len(text)
        message, after = _labelled(text[match.end() : end])
        records.append(label + message)
        label = after
    return records


#: A worker's label before a logger's prefix (``(VllmWorkerProcess pid=351) ERROR ...``): the
#: record that follows is that worker's, wherever the line put the label.
_LABEL = lazy(r"\((?:[^()\n]{0,120}\b)?pid=\d{1,9}[^()\n]{0,120}\)\s*$")


def _labelled(piece: str) -> tuple[str, str]:
    """(``piece`` without the worker's label that ends it, that label and a space; '' when
    it ends in none)."""
    label = _LABEL.search(piece)
    if label is None:
        return piece.rstrip(), ""
    return piece[: label.start()].rstrip(), label.group(0).rstrip() + " "
