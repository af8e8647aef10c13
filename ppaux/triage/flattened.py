"""A traceback flattened onto one line, given back as the lines it was.

A traceback pasted into a quote or a chat loses its newlines: ``... Traceback (most recent call
last): File "a.py", line 3, in f x = g() File "b.py", line 9, in g RuntimeError: boom``. Its
shape still tells the pieces apart: each frame starts at ``File "<path>", line <n>, in
<function>``, the code follows its frame, and the exception is the last ``Name: message`` (or a
bare ``Name``) whose name is an exception's (``...Error``, ``...Exception``, ...) after the last
frame's code. :func:`unflatten` splits such a line; a line of any other shape is left alone.
A JSON record's message pasted raw keeps its newlines as two characters (``\\n``, quotes as
``\\"``): :func:`unescaped` gives its lines back.

A header inside a quoted value of an object's repr on the line (sglang's echo of a request,
``Receive: obj=GenerateReqInput(text='... Traceback (most recent call last): ...')``) is text
someone sent, never a traceback of the process: :func:`in_repr_value` tells it.
"""

from __future__ import annotations

import re

from ppaux.patterns import lazy
from ppaux.triage.loggerrecords import logger_records
from ppaux.triage.paddedlines import exception_lines, head_lines

__all__ = [
    "ESCAPED",
    "escaped",
    "flattened",
    "in_group_note",
    "in_repr_value",
    "outside_quotes",
    "quoted_spans",
    "split_lines",
    "unescaped",
    "unflatten",
]

_HEADER = "Traceback (most recent call last):"
#: At most this many frames taken from one line (a hostile line does not cost more).
_MAX_FRAMES = 200
_FRAME = lazy(r'File "(?P<file>[^"\n]{1,4096})", line (?P<line>\d{1,9}), in (?P<func>\S{1,512})')
#: The exception that ends the last frame's code: a dotted name ending as exceptions' do.
_EXCEPTION = lazy(
    r"(?:^|\s)(?P<exc>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit|Failure))"
    r"(?::\s.*|:?$)"
)


#: A traceback header followed by a JSON string's escaped newline, two characters: a record's
#: message pasted raw.
ESCAPED = "call last):\\n"
_ESCAPED_CRLF = "call last):\\r\\n"
_STRING = lazy(r'(?:[^"\\]|\\.)*')
_ESCAPE = lazy(r'\\(["\\/nrt])')
_ESCAPES = {"n": "\n", "r": "", "t": "\t", '"': '"', "\\": "\\", "/": "/"}
#: The escapes ``repr()`` writes in a string (its quotes, if escaped at all, are its own).
_REPR_ESCAPE = lazy(r"\\([nrt'\"\\])")
_REPR_ESCAPES = {"n": "\n", "r": "", "t": "\t", '"': '"', "'": "'", "\\": "\\"}
#: A frame right after an escaped newline, its quote not escaped: ``repr()``'s form.
_BARE_FRAME = '  File "'
#: A header's end, then (its newline become spaces, or a terminal's padding up to its width)
#: the first frame.
_HEADER_END = "call last):"
_NEXT_FRAME = lazy(r'\s{1,400}File "')


def unescaped(text: str) -> list[str] | None:
    """The lines of a traceback whose newlines (and quotes) are written as a JSON string
    writes them (``\\n``, ``\\"``), up to the string's closing quote; None when ``text``
    holds no such header. A traceback that ``repr()`` or a logger's ``%r`` wrote keeps its
    double quotes as they are (``\\n  File "a.py"``): it is read to the quote that opened it
    (``'Traceback ...'``), or to the line's end."""
    at = text.find(ESCAPED)
    size = len(ESCAPED)
    if at < 0:
        at, size = text.find(_ESCAPED_CRLF), len(_ESCAPED_CRLF)
        if at < 0:
            return None
    after = at + size
    if text.startswith(_BARE_FRAME, after) or text.startswith(_BARE_FRAME.lstrip(), after):
        return _unrepr(text, at)
    string = _STRING.match(text, at)  # up to the string's closing quote, when it has one
    end = string.end() if string is not None else len(text)
    plain = _ESCAPE.sub(lambda m: _ESCAPES[m.group(1)], text[:end])
    return plain.split("\n")


def _unrepr(text: str, at: int) -> list[str]:
    """The lines of a traceback written by ``repr()`` (its header's escaped newline at
    ``at``): from its header to the quote that opened it, its escapes undone."""
    start = text.rfind("Traceback", 0, at)
    start = at if start < 0 else start
    quote = text[start - 1 : start] if start > 0 else ""
    end = len(text)
    if quote in ("'", '"'):
        closing = text.rfind(quote, at)
        end = closing if closing > at else end
        head = text[: start - 1]
    else:
        head = text[:start]
    body = _REPR_ESCAPE.sub(lambda m: _REPR_ESCAPES[m.group(1)], text[start:end])
    return (head + body).split("\n")


def escaped(text: str) -> bool:
    """True when ``text`` holds a traceback's header and its newline written as an escape
    (``\\n``, or ``\\r\\n`` from a Windows side)."""
    return ESCAPED in text or _ESCAPED_CRLF in text


def flattened(text: str) -> bool:
    """True when ``text`` holds a traceback's header followed, on the same line, by its first
    frame (its newlines became spaces)."""
    at = text.find(_HEADER_END)
    return at >= 0 and _NEXT_FRAME.match(text, at + len(_HEADER_END)) is not None


#: What stands right before a string literal's opening quote in a repr or a JSON text:
#: ``text='``, ``('``, ``['``, ``{"``, ``, '`` (a dict's value: ``': '``, after a closed one).
_OPENERS = "=([{,"
#: The letters of a string literal's prefix (``r"...``, ``b'...``, ``rb"...``, ``f"...``).
_PREFIXES = "rRbBfFuU"
#: Spaces looked past between the opener and the quote.
_GAP = 4


def quoted_spans(text: str) -> list[tuple[int, int]]:
    """The spans (start, end) of ``text`` inside the string literals a repr or a JSON text
    wrote on the line, quotes excluded: a quote opens one where it follows ``=``, ``(``,
    ``[``, ``{`` or ``,`` (spaces between, a literal's prefix ``r``, ``b``, ``f`` too), or
    follows ``:`` after another literal's closing quote (spaces between), and it closes at
    the next same quote no backslash escapes. A quote that never closes opens nothing (an
    apostrophe in prose). Linear in the line's length."""
    spans: list[tuple[int, int]] = []
    if "'" not in text and '"' not in text:
        return spans
    unclosed: set[str] = set()  # a quote with no closing left on the line
    closed_at = -1  # where the last literal's closing quote stands
    at = 0
    size = len(text)
    while at < size:
        char = text[at]
        if char not in "'\"" or char in unclosed or not _opens(text, at, closed_at):
            at += 1
            continue
        end = _closing(text, at + 1, char)
        if end < 0:
            unclosed.add(char)
            at += 1
            continue
        spans.append((at + 1, end))
        closed_at = end
        at = end + 1
    return spans


def _opens(text: str, at: int, closed_at: int) -> bool:
    """True when the quote at ``at`` opens a string literal (see :func:`quoted_spans`); a
    literal's prefix (``r"``, ``b'``, ``rb"``, ``f"``) stands between the opener and it."""
    before = at - 1
    prefix = 0
    while prefix < 2 and before >= 0 and text[before] in _PREFIXES:
        before -= 1
        prefix += 1
    if prefix and (before < 0 or text[before].isalnum() or text[before] == "_"):
        return False  # the end of a word before the quote (``it's``), no literal's prefix
    while before >= 0 and at - before <= _GAP and text[before] == " ":
        before -= 1
    if before < 0:
        return False
    mark = text[before]
    if mark != ":":
        return mark in _OPENERS
    # A dict's value: the colon follows another literal's closing quote (``"a": "b"``), spaces
    # between them too (``"a" : "b"``, as some JSON writers put them).
    key = before - 1
    while key > closed_at and before - key <= _GAP and text[key] == " ":
        key -= 1
    return closed_at >= 0 and key == closed_at


def _closing(text: str, start: int, quote: str) -> int:
    """Where the first ``quote`` from ``start`` that no backslash escapes stands, or -1."""
    at = text.find(quote, start)
    while at >= 0:
        slashes = 0
        while at - 1 - slashes >= start and text[at - 1 - slashes] == "\\":
            slashes += 1
        if slashes % 2 == 0:
            return at
        at = text.find(quote, at + 1)
    return -1


def outside_quotes(text: str) -> str:
    """``text`` with what its string literals hold (:func:`quoted_spans`) made spaces, its
    length kept: the line's own words, none of the text it echoes."""
    spans = quoted_spans(text)
    if not spans:
        return text
    pieces: list[str] = []
    last = 0
    for start, end in spans:
        pieces += [text[last:start], " " * (end - start)]
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


def in_repr_value(text: str) -> bool:
    """True when ``text``'s traceback header stands inside a string literal a repr or a JSON
    text wrote on the line (``Name(..., text='... Traceback (most recent call last): ...``,
    ``{"text": "... Traceback ..."}``): text a request carried, not a traceback. A traceback
    a logger gave whole to ``%r`` (``exception: 'Traceback ...'``) is no such literal."""
    at = text.find("Traceback (m")
    if at < 0:
        return False
    return any(start <= at < end for start, end in quoted_spans(text))


#: A group's margin mark right before a header: ``  | Traceback (most recent call last):``.
_MARGIN_MARK = lazy(r"(?:^|\s)\| $")
#: What follows a real traceback's escaped header: a frame (its quote escaped or not), or a
#: group's margin.
_AFTER_HEADER = lazy(r'(?:\\r)?\\n\s{0,64}(?:File (?:"|\\")|\|)')


def in_group_note(text: str) -> bool:
    """True when ``text``'s escaped header stands behind an exception group's margin mark
    (``  | Traceback (most recent call last):\\nRuntimeError: ...``) and no frame or margin
    follows its escaped newline: a note the group carries (``add_note``) whose text holds the
    two characters ``\\n``, one line of the group, not a traceback written as a JSON string."""
    at = text.find(ESCAPED)
    if at < 0:
        at = text.find(_ESCAPED_CRLF)
        if at < 0:
            return False
    start = text.rfind("Traceback", 0, at)
    if start < 0 or _MARGIN_MARK.search(text[max(0, start - 3) : start]) is None:
        return False
    return _AFTER_HEADER.match(text, at + len(_HEADER_END)) is None


def split_lines(text: str) -> list[str]:
    """The lines ``text`` holds: a traceback's escaped newlines undone, one flattened onto
    the line split back; ``[text]`` for any other line, for one whose header is text a
    repr's value holds (:func:`in_repr_value`) and for a group's note holding an escaped
    header (:func:`in_group_note`)."""
    if in_repr_value(text):
        return [text]
    records = logger_records(text)
    if records is not None:
        return [line for record in records for line in _record_lines(record)]
    parts = (unescaped(text) or [text]) if escaped(text) and not in_group_note(text) else [text]
    if any(flattened(part) for part in parts):
        parts = [line for part in parts for line in (unflatten(part) or [part])]
    return parts


#: A worker's label that :func:`logger_records` put before a record's message.
_WORKER = lazy(r"\((?:[^()\n]{0,120}\b)?pid=\d{1,9}[^()\n]{0,120}\) ")


def _record_lines(record: str) -> list[str]:
    """The lines of one logger's record: a traceback flattened into it split back, each line
    behind the worker's label the record has."""
    label = _WORKER.match(record)
    body = record if label is None else record[label.end() :]
    if not flattened(body):
        return [record]
    lead = "" if label is None else label.group(0)
    return [f"{lead}{line}" for line in unflatten(body) or [body]]


def unflatten(text: str) -> list[str] | None:
    """The lines of the traceback flattened into ``text`` (what precedes its header first), or
    None when ``text`` is not one."""
    start = text.find(_HEADER)
    if start < 0:
        return None
    after = text[start + len(_HEADER) :]
    if text.count("`", 0, start) % 2:
        # an inline code span opened before the header ends the traceback where it closes:
        # what follows is the comment's own words (``... no attribute 'x'` @user is this ...``)
        closed = after.find("`")
        after = after if closed < 0 else after[:closed]
    frames = list(_FRAME.finditer(after, 0, len(after)))[:_MAX_FRAMES]
    if not frames or after[: frames[0].start()].strip():
        return None
    lines = head_lines(text[: start + len(_HEADER)])
    for index, frame in enumerate(frames):
        end = frames[index + 1].start() if index + 1 < len(frames) else len(after)
        lines.append(f'  File "{frame["file"]}", line {frame["line"]}, in {frame["func"]}')
        rest = after[frame.end() : end].strip().rstrip("`").rstrip()
        chained = _CHAINED.search(rest) if index + 1 < len(frames) else None
        if chained is not None:
            # A chained traceback: this one's exception, the sentence, the next header.
            lines += _ending(rest[: chained.start()].rstrip())
            lines += ["", chained.group("sentence"), "", _HEADER]
        elif index + 1 == len(frames):
            lines += _ending(rest)
        elif rest:
            lines.append(f"    {rest}")
    return lines


#: What Python writes between the tracebacks of a chain, then the next one's header (its
#: newlines become spaces): it ends the code after a traceback's last frame.
_CHAINED = lazy(
    r"(?:^|\s)(?P<sentence>During handling of the above exception, another exception "
    r"occurred:|The above exception was the direct cause of the following exception:)\s*"
    + re.escape(_HEADER)
    + r"$"
)


def _ending(rest: str) -> list[str]:
    """The lines of what follows a traceback's last frame: its code, then its exception
    line, when one ends it."""
    exception = _EXCEPTION.search(rest)
    if exception is None:
        return [f"    {rest}"] if rest else []
    code = rest[: exception.start()].strip()
    return ([f"    {code}"] if code else []) + exception_lines(rest[exception.start("exc") :])
