"""What a traceback's line is, told by its shape alone (indentation may be lost, or added to a
whole paste): an exception line (:func:`raised`: ``dotted.NameError: message``, and the shapes
other tools give one), a frame (:func:`is_frame`), a frame's source line whose frame the log
lost (:func:`lost_source`), a header cut short (:func:`cut_header`). ``triage`` and
``explain`` read a line by these.
"""

from __future__ import annotations

from ppaux.patterns import lazy

__all__ = [
    "EXCEPTION",
    "FRAME",
    "HEADER",
    "MAX_MESSAGE",
    "WRAPPED",
    "cut_header",
    "is_frame",
    "lost_source",
    "raised",
    "unfolded",
    "wrapped",
]

#: Characters of an exception message kept.
MAX_MESSAGE = 4000
#: A traceback's first line, wherever it stands in the line (behind a pasted character), and
#: even when the paste cut it after ``Traceback (m``.
HEADER = "Traceback (m"
#: A frame line, indented or not (web UIs strip indentation); its line number is bounded.
FRAME = lazy(r'^\s*File "(?P<file>[^"]*)", line (?P<line>\d+)(?:, in (?P<function>.*))?$')
#: An exception line where the paste's indentation puts it: any dotted name, a colon and the
#: message (or nothing).
EXCEPTION = lazy(r"^(?P<type>[A-Za-z_][\w.]*)(?::(?: (?P<message>.*))?)?$")
#: An exception line by its shape alone: a dotted name ending as exception classes do, then a
#: colon and the message, or nothing, or the empty call of a repr (``AssertionError()``, as
#: a logger writes an exception raised without a message). Told apart from a frame's source
#: line without indentation. Triton's ``OutOfResources`` (a kernel's resource limit) is named
#: as it is, its type ending in none of those words.
_RAISED = lazy(
    r"^(?P<type>(?:[A-Za-z_]\w{0,100}\.){0,10}(?:[A-Za-z_]\w{0,100}"
    r"(?:Error|Exception|ExceptionGroup|Interrupt|Exit|Failure|Fault|Timeout|Warning|Abort|"
    r"StopIteration)|Exception(?:Group)?|OutOfResources))"
    r"(?: ?:(?: ?(?P<message>.*))?|\(\))?$"
)
#: An exception line whose type carries its cause: ``ray.exceptions.RayTaskError(OutOfMemoryError):
#: ...``.
WRAPPED = lazy(r"^(?P<type>[A-Za-z_][\w.]{0,200}\([\w.]{1,200}\)):(?: ?(?P<message>.*))?$")
#: What may stand before an exception line that is not its own: pytest's failure marker
#: (``E   RuntimeError: ...``), a runner's ``Error: `` before the exception it reports.
_NOT_ITS_OWN = lazy(r"^(?:E {1,8}|Error: )(?=[A-Za-z_][\w.]{0,200}(?:Error|Exception)\b)")
#: The message of a bare ``Exception`` that is another exception's repr, as a wrapper logs
#: what it caught (``Exception: RuntimeError('...')``): that exception is the one raised.
_REPRED = lazy(
    r"^(?P<type>[A-Za-z_][\w.]{0,200})"
    r"\((?P<repr>'(?:[^'\\\n]|\\.){0,4000}'|\"(?:[^\"\\\n]|\\.){0,4000}\")\)$"
)


#: A run of backticks, as code spans are opened and closed.
_TICKS = lazy(r"`+")


def _quoting(text: str) -> bool:
    """True for a line that opens a code span, closes every span its opening run of backticks
    opens, and goes on in words after the last: a sentence quoting a message (a README's
    '`RuntimeError: X` or one of its eight siblings.'), not a record pasted behind a backtick
    ('`RuntimeError: X', '`RuntimeError: X`', '``RuntimeError: X', or a message's own quoted
    '`x`' inside the span)."""
    width = len(text) - len(text.lstrip("`"))
    same = [m for m in _TICKS.finditer(text) if len(m.group()) == width]
    if not width or len(same) % 2:
        return False
    after = text[same[-1].end() :]
    return "`" not in after and any(c.isalnum() for c in after)


#: Markdown's emphasis around a whole line: a run of one to three asterisks at each end.
_EMPHASIS = lazy(r"^(?P<marks>\*{1,3})(?=\S)(?P<inner>.*?\S)(?P=marks)$")


def _unemphasised(text: str) -> str:
    """``text`` without the Markdown emphasis a paste put around the whole line
    (``**RuntimeError: ...**``, ``*RuntimeError: ...*``, around a code span or not): the line
    the log held. A line that only opens or only closes one is kept as it is."""
    found = _EMPHASIS.match(text)
    return text if found is None else found.group("inner")


def raised(text: str) -> tuple[str, str] | None:
    """(type, message) of a line shaped as an exception line (``tvm.error.InternalError: ...``),
    whatever its indentation, Markdown's emphasis and the backticks of an inline-code span
    around it; None otherwise."""
    text = _unemphasised(text.strip())
    if text[:1] == "`":  # pasted as inline code (or a fence run into it): the marks around it
        if _quoting(text):
            return None  # prose quoting a message: '`RuntimeError: X` or one of its siblings'
        text = text.lstrip("`").rstrip("`").strip()
    elif text[-1:] == "`" and text.count("`") % 2:  # the close of a span opened lines above
        text = text[:-1].rstrip()
    lead = _NOT_ITS_OWN.match(text)
    if lead is not None:
        text = text[lead.end() :]
    match = _RAISED.match(text) or WRAPPED.match(text)
    if match is None:
        return _repr_line(text)
    exception, message = match.group("type"), unfolded(match.group("message") or "")
    if exception == "Exception":
        inner = _REPRED.match(message)
        if inner is not None:
            said = _literal(inner.group("repr"))
            if said is not None:
                return inner.group("type"), said
    return exception, message


def _repr_line(text: str) -> tuple[str, str] | None:
    """(type, first line of the message) of a line that is an exception's ``repr()`` whole
    (``RuntimeError('Got the following error ...: IndexError: ...\\n\\nAt:\\n ...')``, as a
    driver logs the error it caught), its type shaped as an exception's; None otherwise."""
    inner = _REPRED.match(text)
    if inner is None or _RAISED.match(inner.group("type")) is None:
        return None
    said = _literal(inner.group("repr"))
    return None if said is None else (inner.group("type"), said.split("\n", 1)[0])


#: Ray's note at a line's end that it folded the same line of several workers into this one.
_FOLD = lazy(r"\s{0,8}\[repeated \d{1,9}x across cluster\]\s{0,8}$")


def unfolded(message: str) -> str:
    """An exception's ``message`` without Ray's fold note at its end (``[repeated 14x across
    cluster]``: how many workers printed it, not the error's words), at most
    :data:`MAX_MESSAGE` characters."""
    message = message[:MAX_MESSAGE]
    if message.endswith("]"):
        message = _FOLD.sub("", message)
    return message


def wrapped(text: str) -> bool:
    """True for an exception line whose type carries its cause
    (``ray.exceptions.RayTaskError(OutOfMemoryError): ...``, :data:`WRAPPED`)."""
    return WRAPPED.match(text.strip()) is not None


def _literal(text: str) -> str | None:
    """The string a quoted literal as ``repr`` writes it spells (read, never run), or None."""
    import ast

    try:
        value = ast.literal_eval(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, str) else None


#: What a traceback's header line ends with, sglang's and Python's own: a paste may cut it.
_HEADERS = (
    "Scheduler hit an exception: Traceback (most recent call last):",
    "Traceback (most recent call last):",
)
#: Characters of a header, at the least, that a cut header line ends with.
_MIN_CUT_HEADER = 4


def cut_header(text: str) -> bool:
    """True for a line that ends with the start of a traceback's header, cut before
    ``Traceback (m`` (``Scheduler hit an exc``, ``Trac``): its frames follow."""
    text = text.rstrip()
    for header in _HEADERS:
        for size in range(min(len(header), len(text)), _MIN_CUT_HEADER - 1, -1):
            if header.startswith(text[-size:]):
                before = text[-size - 1 : -size] if size < len(text) else ""
                if before in ("", " ", ":", "]"):
                    return True
    return False


def lost_source(text: str) -> str:
    """The code ``text`` holds when it is shaped as a frame's source line (indented, neither a
    frame, an exception line, a header nor a caret line), else ''."""
    code = text.strip()
    if not code or not text[:1].isspace() or set(code) <= set("^~ "):
        return ""
    if FRAME.match(text) is not None or raised(code) is not None or code.startswith(HEADER):
        return ""
    return code[:200]


def is_frame(text: str) -> bool:
    """True for a traceback's frame line, indented or not."""
    return FRAME.match(text) is not None
