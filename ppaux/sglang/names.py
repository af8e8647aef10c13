"""sglang's own names that ppaux uses: the keys of its pipeline-parallel messages, the module,
files and functions of its auxiliary-output transport, and its plugin entry-point group.

The nine messages of sglang's transport live here too, the one spelling of them in ppaux: each
is a :class:`SglangMessage` with a stable identifier (``POP_NON_TENSOR.id`` is
``"pop-non-tensor"``), its text or its ``{name!r}`` template (:meth:`SglangMessage.format`),
and :func:`match_message` recognises one pasted from a log, name and quotes included.

Facts from sglang 0.5.19 - 0.5.23 (``srt/sampling/sampling_observer_pp.py`` and
``srt/managers/scheduler_pp_mixin.py``; the plugin group from ``srt/plugins/__init__.py``,
0.5.15 and later). Torch-free, and it imports nothing outside the standard library.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = [
    "ADD",
    "ADD_BAD_NAME",
    "ADD_DUPLICATE",
    "ADD_EMPTY",
    "ADD_NOT_TENSOR",
    "ADD_UNSUPPORTED",
    "ENTRY_POINT",
    "GROUP_CLASS",
    "HOOK_REGISTRY_FILE",
    "MESSAGES",
    "MSG_TYPE_KEY",
    "OUTPUT_MSG_TYPE",
    "OUTPUT_PREFIX",
    "PARALLEL_STATE_MODULE",
    "PLUGIN_GROUP",
    "PLUGIN_NAME",
    "POP",
    "POP_NON_TENSOR",
    "POP_NOT_RECONSTRUCTED",
    "POP_NO_OBSERVER",
    "POP_UNSUPPORTED",
    "PROXY_KEYS",
    "SCHEDULER_CLASS",
    "SCHEDULER_FILE",
    "SCHEDULER_MODULE",
    "TRANSPORT_FILE",
    "TRANSPORT_MODULE",
    "TRANSPORT_PATH",
    "MessageMatch",
    "SglangMessage",
    "aux_name",
    "match_message",
    "message_by_id",
    "message_shape",
    "pasted_texts",
    "raised_as",
    "raised_otherwise",
    "search_message",
    "search_pasted",
    "sglang_raised",
    "sglang_raised_in",
]

#: The transport's sender (last stage) and receiver (first stage) functions.
ADD = "add_auxiliary_output_to_pp_tensors"
POP = "pop_auxiliary_output_from_pp_tensors"

#: The module that holds the PP auxiliary transport (0.5.19 and later).
TRANSPORT_MODULE = "sglang.srt.sampling.sampling_observer_pp"
#: Its file, relative to the ``sglang`` package directory.
TRANSPORT_FILE = "srt/sampling/sampling_observer_pp.py"
#: Its file inside a wheel or site-packages (``python/sglang/...`` in git).
TRANSPORT_PATH = f"sglang/{TRANSPORT_FILE}"

#: The scheduler mixin that calls add (last stage) and pop (first stage).
SCHEDULER_MODULE = "sglang.srt.managers.scheduler_pp_mixin"
#: Its file, relative to the ``sglang`` package directory.
SCHEDULER_FILE = "srt/managers/scheduler_pp_mixin.py"

#: The entry-point group of sglang's general plugins (``load_plugins()``, 0.5.15 and later).
PLUGIN_GROUP = "sglang.srt.plugins"
#: ppaux's entry in that group: its name, which is what ``SGLANG_PLUGINS`` lists, and the
#: entry point declared in ppaux's metadata (pyproject.toml).
PLUGIN_NAME = "ppaux_capture"
ENTRY_POINT = "ppaux.capture.plugin:register"
#: The file of the plugins' ``HookRegistry``, relative to the ``sglang`` package directory.
HOOK_REGISTRY_FILE = "srt/plugins/hook_registry.py"

#: Every auxiliary tensor travels under this prefix plus its name.
OUTPUT_PREFIX = "__sampling_observer_output__."

#: Key that the last stage adds before sending a message to the first stage.
MSG_TYPE_KEY = "__msg_type__"

#: Value of ``MSG_TYPE_KEY`` on the output message, the only one rank 0 pops.
OUTPUT_MSG_TYPE = "output"

#: Keys of the separate "proxy" message (hidden states between stages); aux keys never belong there.
PROXY_KEYS = ("hidden_states", "residual")


def aux_name(key: object) -> str | None:
    """Return the auxiliary name that pop would see for ``key``, or None if pop ignores it."""
    if isinstance(key, str) and key.startswith(OUTPUT_PREFIX):
        return key[len(OUTPUT_PREFIX) :]
    return None


# The pipeline-parallel output path, hop by hop (sglang 0.5.19 - 0.5.23): the last stage's
# scheduler prepares the output message and sends it through its PP group; rank 0 receives it.

#: The scheduler mixin's class, which builds, sends and receives PP messages.
SCHEDULER_CLASS = "SchedulerPPMixin"
#: The module and class of the PP group's wire (``send_tensor_dict`` / ``recv_tensor_dict``).
PARALLEL_STATE_MODULE = "sglang.srt.distributed.parallel_state"
GROUP_CLASS = "GroupCoordinator"


# The nine messages of sampling_observer_pp.py (0.5.19 - 0.5.23, all RuntimeError), in the order
# add and then pop check them.

_NAME_FIELD = "{name!r}"


@dataclass(frozen=True)
class SglangMessage:
    """One message of sglang's PP auxiliary transport.

    ``id`` is ppaux's stable identifier for it (used by error pages and ``explain``);
    ``template`` is sglang's text, with ``{name!r}`` where sglang puts the tensor's name;
    ``function`` is :data:`ADD` or :data:`POP`, the function that raises it.
    """

    id: str
    template: str
    function: str

    @property
    def takes_name(self) -> bool:
        """Whether the message carries an auxiliary tensor's name."""
        return _NAME_FIELD in self.template

    @property
    def text(self) -> str:
        """The message as sglang raises it; a message that takes a name shows ``{name!r}``."""
        return self.template

    def format(self, name: str, quote: Callable[[str], str] = repr) -> str:
        """The message sglang raises for the tensor ``name``.

        ``quote`` spells the name; the default, :func:`repr`, is sglang's own ``{name!r}``. A
        report that shows a name from an untrusted file passes its bounded quoting instead.
        """
        if not self.takes_name:
            raise ValueError(f"sglang's message {self.id!r} carries no name")
        return self.template.replace(_NAME_FIELD, quote(name))


ADD_UNSUPPORTED = SglangMessage(
    "add-unsupported", "auxiliary output does not support pipeline-parallel transport", ADD
)
ADD_EMPTY = SglangMessage("add-empty", "auxiliary PP output must contain at least one tensor", ADD)
ADD_BAD_NAME = SglangMessage(
    "add-bad-name", "auxiliary PP tensor names must be non-empty strings", ADD
)
ADD_NOT_TENSOR = SglangMessage(
    "add-not-tensor", "auxiliary PP output {name!r} is not a tensor", ADD
)
ADD_DUPLICATE = SglangMessage("add-duplicate", "duplicate auxiliary PP tensor {name!r}", ADD)
POP_NO_OBSERVER = SglangMessage(
    "pop-no-observer", "received auxiliary PP output without a sampling observer", POP
)
POP_UNSUPPORTED = SglangMessage(
    "pop-unsupported", "sampling observer does not support pipeline-parallel transport", POP
)
POP_NON_TENSOR = SglangMessage("pop-non-tensor", "received a non-tensor auxiliary PP output", POP)
POP_NOT_RECONSTRUCTED = SglangMessage(
    "pop-not-reconstructed", "sampling observer did not reconstruct its PP output", POP
)

#: The nine, in the order add and then pop check them.
MESSAGES: tuple[SglangMessage, ...] = (
    ADD_UNSUPPORTED,
    ADD_EMPTY,
    ADD_BAD_NAME,
    ADD_NOT_TENSOR,
    ADD_DUPLICATE,
    POP_NO_OBSERVER,
    POP_UNSUPPORTED,
    POP_NON_TENSOR,
    POP_NOT_RECONSTRUCTED,
)


def message_by_id(message_id: str) -> SglangMessage:
    """The message whose stable identifier is ``message_id``; KeyError if there is none."""
    for message in MESSAGES:
        if message.id == message_id:
            return message
    raise KeyError(message_id)


#: A quoted part of a pasted sentence (a name, as the messages quote it).
_QUOTED = re.compile(r"""(['"]).*?\1""")
_RAISED = re.compile(r"^\s*RuntimeError\s*:\s*")


def message_shape(text: str) -> str:
    """``text`` in the shape of a message's template, for comparing a misspelled or cut message
    with :data:`MESSAGES`: every quoted part stands as ``{name!r}``; a leading ``RuntimeError:``,
    the blanks around and trailing full stops are dropped."""
    return _RAISED.sub("", _QUOTED.sub(_NAME_FIELD, text)).strip().rstrip(". ")


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
    before, _, after = message.template.partition(_NAME_FIELD)
    if not message.takes_name:
        return re.escape(message.template)
    return re.escape(before) + _REPR + re.escape(after)


#: One alternative per message; no two can match at the same place (a name's quote follows
#: ``auxiliary PP output ``, never a word).
_SEARCH = re.compile(
    "|".join(
        f"(?P<m{index}>{_pattern(message)})".replace("(?P<repr>", f"(?P<r{index}>")
        for index, message in enumerate(MESSAGES)
    )
)
_PREFIX = re.compile(r"\s*(?:RuntimeError\s*:\s*)?")


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


def _messages(text: str) -> Iterator[MessageMatch]:
    """Each of the nine messages found in ``text``, in its order (see :func:`search_message`)."""
    for found in _SEARCH.finditer(text):
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
_JSON_ESCAPE = re.compile(r'\\(?:u(?P<code>[0-9a-fA-F]{4})|(?P<char>["\\/bfnrt]))')
_JSON_CHARS = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
#: Characters before a message looked at for its exception type (a dotted name and a colon:
#: far shorter), so that a long line costs no more.
_TYPE_SEEN = 512
#: An exception type written just before a message (``ValueError:``), as a traceback's last
#: line shows it.
_RAISED_AS = re.compile(
    r"(?<![\w.])(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*"
    r"(?:Error|Exception|Warning|Exit|Interrupt|Fault|Failure))\s*:\s*$"
)


#: The first exception type written on a line (after a log's prefix), and the blanks after
#: its colon.
_LINE_TYPE = re.compile(
    r"(?<![\w.])(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*"
    r"(?:Error|Exception|Warning|Exit|Interrupt|Fault|Failure))\s*:\s*"
)


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
    start = max(text.rfind("\n", 0, found.start) + 1, found.start - _TYPE_SEEN)
    written = _LINE_TYPE.search(text, start, found.start)
    if written is None:
        return None
    return written.group("type"), written.end()


#: A traceback's frame line (``File "...", line N``), behind whatever margin or prefix: the
#: line after it is the frame's source, code that may spell a message it does not raise.
_FRAME_LINE = re.compile(r'File "[^"\n]{0,4000}", line \d{1,9}(?:, in [^\n]{0,400})?\s*$')


def _in_source(text: str, found: MessageMatch) -> bool:
    """True where ``found`` stands on a frame's source line (the line after a frame line,
    not itself shaped as an exception line): ``raise RuntimeError("duplicate ...")`` is the
    code of a frame, and the message it spells is raised, if at all, where its exception line
    says so."""
    start = text.rfind("\n", 0, found.start) + 1
    if start == 0:
        return False
    previous = text[text.rfind("\n", 0, start - 1) + 1 : start - 1]
    if _FRAME_LINE.search(previous[-5000:]) is None:
        return False
    return _line_type(text, found) is None


def _sglang_s(text: str, found: MessageMatch | None) -> bool:
    if found is None or _in_source(text, found):
        return False
    written = _line_type(text, found)
    if written is None:
        return True
    exception, begins = written
    return sglang_raised(exception, text[begins:]) is not None


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
