"""Recognising one of sglang's nine transport messages (:mod:`ppaux.sglang.messages`) in
text pasted from a log or a traceback: :func:`match_message` finds one, name and quotes
included, whatever a logger or a JSON encoder put around it; :func:`raised_as` and
:func:`sglang_raised` tell which exception type a line says raised it.

Torch-free, and it imports nothing outside the standard library but
:mod:`ppaux.sglang.messages`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ppaux.patterns import lazy
from ppaux.sglang.messages import MESSAGES, NAME_FIELD, SglangMessage

__all__ = [
    "MessageMatch",
    "match_message",
    "message_shape",
    "pasted_texts",
    "raised_as",
    "raised_otherwise",
    "relay_quote",
    "search_message",
    "search_pasted",
    "sglang_raised",
    "sglang_raised_in",
]


#: A quoted part of a pasted sentence (a name, as the messages quote it).
_QUOTED = lazy(r"""(['"]).*?\1""")
_RAISED = lazy(r"^\s*RuntimeError\s*:\s*")


def message_shape(text: str) -> str:
    """``text`` in the shape of a message's template, for comparing a misspelled or cut message
    with :data:`MESSAGES`: every quoted part stands as ``{name!r}``; a leading ``RuntimeError:``,
    the blanks around and trailing full stops are dropped."""
    return _RAISED.sub("", _QUOTED.sub(NAME_FIELD, text)).strip().rstrip(". ")


@dataclass(frozen=True)
class MessageMatch:
    """A message recognised in a text: which one, and the name it carries (None if none)."""

    message: SglangMessage
    name: str | None
    start: int
    end: int


#: A Python string literal as repr writes one: single or double quotes, backslash escapes.
# Possessive (``++``, ``*+``): a literal is matched in one pass without a backtracking stack
# that grows with its length (a 1 MB name would cost some 340 MB with a plain ``*``).
_REPR = r"""(?P<repr>'(?:[^'\\\n]++|\\.)*+'|"(?:[^"\\\n]++|\\.)*+")"""


def _pattern(message: SglangMessage) -> str:
    before, _, after = message.template.partition(NAME_FIELD)
    if not message.takes_name:
        return re.escape(message.template)
    return re.escape(before) + _REPR + re.escape(after)


#: One alternative per message; no two can match at the same place (a name's quote follows
#: ``auxiliary PP output ``, never a word).
_SEARCH = lazy(
    "|".join(
        f"(?P<m{index}>{_pattern(message)})".replace("(?P<repr>", f"(?P<r{index}>")
        for index, message in enumerate(MESSAGES)
    )
)
_PREFIX = lazy(r"\s*(?:RuntimeError\s*:\s*)?")
#: The words each message begins with, before its name (all of it, where it takes none).
_LEADS = tuple(dict.fromkeys(m.template.partition(NAME_FIELD)[0] for m in MESSAGES))


#: Past this many characters a quoted name is read without Python's parser, whose memory grows
#: some 350 times the literal's length (a 1 MB name pasted into ``explain`` would cost 340 MB).
_PARSED_NAME = 64 * 1024


def _unrepr(literal: str) -> str | None:
    """The string a ``repr`` literal (``'scores'``, ``"it's"``) spells, or None."""
    import ast

    if len(literal) > _PARSED_NAME:
        return _unrepr_long(literal)
    try:
        value = ast.literal_eval(literal)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, str) else None


def _unrepr_long(literal: str) -> str | None:
    """:func:`_unrepr` for a long literal: its quotes, then its escapes decoded as Python's
    (``unicode_escape`` over the text with every other character itself escaped)."""
    import codecs

    quote, body = literal[:1], literal[1:-1]
    if quote not in ("'", '"') or literal[-1:] != quote or len(literal) < 2:
        return None
    if "\\" not in body:
        return None if quote in body else body
    try:
        raw = body.encode("latin-1", "backslashreplace")
        value = codecs.decode(raw, "unicode_escape")
    except (UnicodeDecodeError, ValueError):
        return None
    return str(value)


def search_message(text: str) -> MessageMatch | None:
    """The first of the nine messages found anywhere in ``text`` (a log line, a traceback).

    A message with a name needs the name quoted as repr writes it (``'scores'``, or
    ``"it's"``); the name found is the string that literal spells.
    """
    return next(_messages(text), None)


def _first_place(text: str) -> int:
    """Where the first of the nine messages may begin in ``text``: the first place of any
    message's words before its name (its whole text, where it takes none), which every match
    begins with; -1 where none is in it. Found by plain substring search, so that a text
    holding none of them (any other failure pasted into ``explain``) is not searched with the
    nine patterns at every character."""
    places = [text.find(lead) for lead in _LEADS]
    return min((p for p in places if p >= 0), default=-1)


def _messages(text: str) -> Iterator[MessageMatch]:
    """Each of the nine messages found in ``text``, in its order (see :func:`search_message`)."""
    first = _first_place(text)
    if first < 0:
        return
    for found in _SEARCH.finditer(text, first):
        for index, message in enumerate(MESSAGES):
            if found.group(f"m{index}") is None:
                continue
            name = None
            if message.takes_name:
                name = _unrepr(found.group(f"r{index}"))
                if name is None:
                    break
            yield MessageMatch(message, name, found.start(), found.end())
            break


#: A JSON string's escapes (a Loki or CloudWatch record pasted raw; Go's encoder writes a
#: quote ``'`` as ``\\u0027``).
_JSON_ESCAPE = lazy(r'\\(?:u(?P<code>[0-9a-fA-F]{4})|(?P<char>["\\/bfnrt]))')
_JSON_CHARS = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
#: Characters before a message looked at for its exception type (a dotted name and a colon:
#: far shorter), so that a long line costs no more.
_TYPE_SEEN = 512
#: An exception type (a dotted name ending as Python's do) and its colon, with the blanks
#: around it.
_TYPE_AND_COLON = (
    r"(?<![\w.])(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*"
    r"(?:Error|Exception|Warning|Exit|Interrupt|Fault|Failure))\s*:\s*"
)
#: An exception type written just before a message (``ValueError:``), as a traceback's last
#: line shows it.
_RAISED_AS = lazy(_TYPE_AND_COLON + "$")
#: The first exception type written on a line (after a log's prefix), and the blanks after
#: its colon.
_LINE_TYPE = lazy(_TYPE_AND_COLON)


def _json_unescaped(text: str) -> str:
    """``text`` with a JSON string's escapes undone."""

    def one(found: re.Match[str]) -> str:
        code = found.group("code")
        if code is not None:
            return chr(int(code, 16))
        char = found.group("char")
        return _JSON_CHARS.get(char, char)

    return _JSON_ESCAPE.sub(one, text)


def raised_as(text: str, found: MessageMatch) -> str | None:
    """The exception type ``text`` writes just before the message ``found`` in it (on the
    same line: ``ValueError: ...``), or None when none stands there. sglang raises its nine
    messages as ``RuntimeError``; the same words under another type are someone else's."""
    start = max(text.rfind("\n", 0, found.start) + 1, found.start - _TYPE_SEEN)
    before = _RAISED_AS.search(text, start, found.start)
    return None if before is None else before.group("type")


def sglang_raised(exception: str | None, message: str) -> MessageMatch | None:
    """The one of the nine messages that an exception of type ``exception`` (None: no type
    written) with ``message`` is, as sglang raises them: a ``RuntimeError`` (or no type)
    whose message begins with the words of one, as written or with a JSON string's escapes
    undone (a record's ``\\u0027scores\\u0027`` or ``\\"it's\\"``); None otherwise. Both
    ``triage`` (an exception line of a log) and ``explain`` (a pasted line) decide by it."""
    raised = sglang_raised_in(exception, message)
    return None if raised is None else raised[0]


def sglang_raised_in(exception: str | None, message: str) -> tuple[MessageMatch, str] | None:
    """:func:`sglang_raised`, with the text the match's place is in (``message``, or it with
    a JSON string's escapes undone)."""
    if exception is not None and _raised_type(exception) != "RuntimeError":
        return None
    texts = [message, _json_unescaped(message)] if "\\" in message else [message]
    for text in texts:
        found = _begun(text)
        if found is not None:
            return found, text
    return None


def _raised_type(exception: str) -> str:
    """The class name of ``exception`` as written, or of the cause a wrapper's type carries
    (Ray's ``RayTaskError(RuntimeError)`` re-raises the actor's ``RuntimeError``)."""
    if exception.endswith(")") and "(" in exception:
        exception = exception[exception.index("(") + 1 : -1]
    return exception.rsplit(".", 1)[-1]


#: The quotes a logger may put around a whole message (``RuntimeError: "..."``, as a repr or
#: a formatter writes it).
_WHOLE_QUOTES = ("'", '"')


def _begun(text: str) -> MessageMatch | None:
    """The one of the nine messages that ``text`` begins with, after blanks (``RuntimeError:``
    then two spaces, or none), or that a pair of quotes around its start holds whole
    (``"received a non-tensor auxiliary PP output"``); None otherwise. The match's place is in
    ``text``."""
    body = text.lstrip(" \t")
    skipped = len(text) - len(body)
    found = search_message(body)
    if found is not None and found.start == 0:
        return MessageMatch(found.message, found.name, skipped, skipped + found.end)
    quote = body[:1]
    if quote not in _WHOLE_QUOTES:
        return None
    found = search_message(body[1:])
    if found is None or found.start != 0 or body[1 + found.end : 2 + found.end] != quote:
        return None
    start = skipped + 1
    return MessageMatch(found.message, found.name, start, start + found.end)


def _line_type(text: str, found: MessageMatch) -> tuple[str, int] | None:
    """(the exception type, where its message begins) of the line of ``text`` that holds
    ``found``: the first type written on that line before it (``ValueError: wrapped: ...``
    is a ``ValueError``, as triage reads the line), or None when none is."""
    reach = max(0, found.start - _TYPE_SEEN)
    start = max(text.rfind("\n", reach, found.start) + 1, reach)
    written = _LINE_TYPE.search(text, start, found.start)
    if written is None:
        return None
    return written.group("type"), written.end()


#: Characters before a message looked at for the start of its line, on a frame's source line.
_SOURCE_SEEN = 4096
#: Characters after a message looked at for the rest of its line (a relay's closing quote and
#: its ``, please check``: a quoted error is at most 2000 characters).
_REST_SEEN = 4096
#: A traceback's frame line (``File "...", line N``), behind whatever margin or prefix: the
#: line after it is the frame's source, code that may spell a message it does not raise.
_FRAME_LINE = lazy(r'File "[^"\n]{0,4000}", line \d{1,9}(?:, in [^\n]{0,400})?\s*$')


def _in_source(text: str, found: MessageMatch) -> bool:
    """True where ``found`` stands on a frame's source line (the line after a frame line,
    not itself shaped as an exception line): ``raise RuntimeError("duplicate ...")`` is the
    code of a frame, and the message it spells is raised, if at all, where its exception line
    says so."""
    # A frame's source line is code, far shorter than this: a longer line is none, and a
    # long line's start is not looked for at each match in it.
    start = text.rfind("\n", max(0, found.start - _SOURCE_SEEN), found.start) + 1
    if start == 0:
        return False
    previous = text[text.rfind("\n", 0, start - 1) + 1 : start - 1]
    if _FRAME_LINE.search(previous[-5000:]) is None:
        return False
    return _line_type(text, found) is None


#: The quotes a relay may hold the error it relays in, each opening one with its closing one:
#: vLLM writes ``'``; a paste retyped, a JSON record or a web page gives ``"`` or curly ones.
RELAY_QUOTES = {"'": "'", '"': '"', "\u2018": "\u2019", "\u201c": "\u201d"}
#: vLLM's relay of a worker's error, quoting the error's text (``str`` of the exception). The
#: error may hold quotes of its own (``'logits' is not a tensor``): it ends at the closing quote
#: before ``, please check`` or at the line's end, the first such quote of the line.
_RELAYED = lazy(
    "^Worker failed with error (?:"
    + "|".join(
        f"{re.escape(opening)}(?P<q{k}>[^\n]{{1,2000}}?){re.escape(closing)}"
        for k, (opening, closing) in enumerate(RELAY_QUOTES.items())
    )
    + ")(?:, please check|$)",
    re.M,
)


def relay_quote(message: str) -> tuple[str, int] | None:
    """(the error text, where it begins in ``message``) that a relay's ``message`` quotes
    (vLLM's ``Worker failed with error '<e>', please check ...``, in any of
    :data:`RELAY_QUOTES`), or None."""
    relayed = _RELAYED.match(message)
    if relayed is None:
        return None
    group = next(g for g in relayed.groupdict() if relayed[g] is not None)
    return relayed[group], relayed.start(group)


def _sglang_s(text: str, found: MessageMatch | None) -> bool:
    if found is None or _in_source(text, found):
        return False
    written = _line_type(text, found)
    if written is None:
        return True
    exception, begins = written
    # The message's own line only (none of the nine spans two): a copy of the text's rest at
    # each match would cost the square of a paste that repeats one.
    end = text.find("\n", found.end, found.end + _REST_SEEN)
    line = text[begins : min(len(text), found.end + _REST_SEEN) if end < 0 else end]
    if sglang_raised(exception, line) is not None:
        return True
    # a relay quoting one of the nine word for word: sglang raised it, as a RuntimeError
    quoted = relay_quote(line)
    if quoted is None or begins + quoted[1] != found.start:
        return False
    return sglang_raised("RuntimeError", quoted[0]) is not None


def _joined(text: str, joint: str) -> str:
    """``text`` with each line end and the blanks around it (a terminal or a web page wrapped
    the message) made ``joint``: in one pass, where a pattern searched from every blank would
    cost the square of a long run of them."""
    pieces = text.split("\n")
    last = len(pieces) - 1
    for k, piece in enumerate(pieces):
        if k < last:
            piece = (piece[:-1] if piece.endswith("\r") else piece).rstrip(" \t")
        if k > 0:
            piece = piece.lstrip(" \t")
        pieces[k] = piece
    return joint.join(pieces)


def pasted_texts(text: str) -> list[str]:
    """The texts :func:`search_pasted` searches in ``text`` as pasted, in order: as it is, with
    a JSON string's escapes undone (a record's ``\\"it's\\"`` or ``\\u0027``), then with the
    line ends of a message wrapped over two lines taken out (cut inside a word, or at a
    space)."""
    candidates = [text]
    if "\\" in text:
        candidates.append(_json_unescaped(text))
    if "\n" in text:
        candidates += [_joined(text, ""), _joined(text, " ")]
    return candidates


def search_pasted(text: str) -> MessageMatch | None:
    """:func:`search_message` on ``text`` as pasted (each of :func:`pasted_texts` in turn),
    where the message is sglang's: raised as ``RuntimeError`` or under no type written before
    it (``ValueError: <the words of one>`` is not, as triage reads a log). The match's place
    is in the text searched, which may differ from ``text``."""
    for candidate in pasted_texts(text):
        for found in _messages(candidate):
            # The first that sglang raised: the same words under another type before it (a
            # chain's cause re-raised as a ValueError) are not sglang's, as triage reads them.
            if _sglang_s(candidate, found):
                return found
    return None


def raised_otherwise(text: str) -> tuple[str, MessageMatch] | None:
    """(exception type, match) where ``text`` as pasted holds the words of one of the nine
    messages under another exception type than sglang's ``RuntimeError``; None otherwise."""
    for candidate in pasted_texts(text):
        found = search_message(candidate)
        if found is None:
            continue
        written = _line_type(candidate, found)
        raiser = None if written is None else written[0]
        if raiser is not None and _raised_type(raiser) != "RuntimeError":
            return raiser, found
    return None


def match_message(text: str) -> MessageMatch | None:
    """The message ``text`` is, pasted whole: surrounding blanks, an optional ``RuntimeError:``
    in front and a trailing full stop are allowed, nothing else.

    ``match_message("duplicate auxiliary PP tensor 'scores'")`` gives :data:`ADD_DUPLICATE`
    with the name ``scores``.
    """
    head = _PREFIX.match(text)
    start = head.end() if head else 0
    found = search_message(text[start:])
    if found is None or found.start != 0:
        return None
    if text[start + found.end :].strip().rstrip(".").strip():
        return None
    return MessageMatch(found.message, found.name, start, start + found.end)
