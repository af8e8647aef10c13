"""Log lines held in a collector's JSON record, one record per line.

Docker's json-file (``log``), Google Cloud Logging (``textPayload``, ``jsonPayload.message``),
journald ``-o json`` (``MESSAGE``, ``__REALTIME_TIMESTAMP``; an array of byte values where the
message is not UTF-8), AWS CloudWatch ``get-log-events``/exports (``message``, ``timestamp`` in
milliseconds), Grafana/Loki (``line``), Splunk's export (``result._raw``), fluent-bit's
``stdout`` record; a pretty-printed export's ``"line": "..."`` member on a line of its own; a
record cut at ``Limits.max_log_line``, read as far as its message goes. A record's message may
hold several lines (a whole traceback), and may itself be a record (Docker's json-file line
forwarded by another collector).
"""

from __future__ import annotations

import json

from ppaux.patterns import lazy
from ppaux.triage.crilines import cri_lines
from ppaux.triage.forwarders import fluent_entry
from ppaux.triage.peeled import Peeled, record_lines, stamp, time_of, written

__all__ = [
    "MESSAGE_KEYS",
    "cut_record",
    "export_structure",
    "fluent_record",
    "json_record",
    "member_line",
    "nested_record",
]

_JSON_MEMBER = lazy(
    r'^\s*"(?:line|message|textPayload|MESSAGE|log|msg)"\s*:\s*(?P<value>"(?:[^"\\]|\\.)*")\s*,?\s*$'
)
#: A line of a pretty-printed JSON export that holds no log line: brackets, and members
#: other than the line (``"tsNs": "..."``, ``"labels": {``).
_JSON_FRAME = lazy(
    r'^\s*(?:[\[\]{}],?|"[\w@.]{1,64}"\s*:\s*(?:"(?:[^"\\]|\\.){0,200}"|-?\d{1,30}|true|false|null|[\[{]))\s*,?\s*$'
)
#: A JSON record's message member, looked for in the first characters of a record that does
#: not parse (one cut at ``Limits.max_log_line``), and its time member.
_CUT_SEARCH = 4096
_CUT_MESSAGE = lazy(r'"(?:log|line|textPayload|MESSAGE|message|msg|Line|@message)"\s*:\s*"')
_CUT_TIME = lazy(r'"(?:time|timestamp|@timestamp|ts)"\s*:\s*"?([\w:.+-]{10,64})"?[,}]')
#: A JSON string's characters up to its closing quote (or the line's end).
_STRING_PART = lazy(r'(?P<body>(?:[^"\\]|\\.)*)\\?')
#: Decodes a JSON string that holds control characters as they came (a tab).
_LENIENT = json.JSONDecoder(strict=False)
#: A ``\u`` escape cut short at the end of a cut string, or the first half of a surrogate pair.
_CUT_ESCAPE = lazy(r"\\u(?:[0-9A-Fa-f]{0,3}|[dD][89abAB][0-9A-Fa-f]{2})$")
#: A Kubernetes object's name (a DNS label or subdomain).
_NAME = lazy(r"[A-Za-z0-9][\w.-]{0,252}")
#: A CloudWatch log stream's name as a record names it (512 characters at most, no ':' or '*').
_AWS_NAME = lazy(r"[\w.\[\]$/#=@+-]{1,512}")
#: The members of a JSON record that hold its log line, in the order they are tried.
MESSAGE_KEYS = (
    "log",
    "line",
    "textPayload",
    "MESSAGE",
    "message",
    "msg",
    "Line",
    "@message",
    "_raw",
)
#: Messages one level down: Cloud Logging's ``jsonPayload``, Elastic Common Schema's
#: ``log.original`` and ``event.original``.
_NESTED_MESSAGES = (
    ("jsonPayload", ("message", "msg", "log")),
    ("log", ("original",)),
    ("event", ("original",)),
)
_TIME_KEYS = ("time", "timestamp", "@timestamp", "ts", "Time", "receiveTimestamp", "_time")
#: How many records deep a message is read (a collector's record of another's record of
#: Docker's json-file line).
_MAX_NESTED = 3


def json_record(text: str) -> Peeled | None:
    """The line(s) of the JSON record ``text``, with its time and stream; None when ``text``
    is no record that holds a message."""
    try:
        record = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(record, dict):
        return None
    result = record.get("result")
    if isinstance(result, dict) and isinstance(result.get("_raw"), str):
        record = result  # Splunk's JSON export: each event under 'result'
    return _record_of(record)


def _message_of(record: dict[str, object]) -> tuple[str | None, bool]:
    """A record's message, and whether it was journald's array of bytes."""
    for key in MESSAGE_KEYS:
        value = record.get(key)
        if isinstance(value, str):
            return value, False
        if key == "MESSAGE" and isinstance(value, list):  # journald: bytes that are not UTF-8
            raw = bytes(v for v in value[: 1 << 16] if isinstance(v, int) and 0 <= v < 256)
            return raw.decode("utf-8", "backslashreplace"), True
    for nest, keys in _NESTED_MESSAGES:
        payload = record.get(nest)
        if isinstance(payload, dict):
            for key in keys:
                if isinstance(payload.get(key), str):
                    return str(payload[key]), False
    return None, False


def _record_of(record: dict[str, object], depth: int = 0) -> Peeled | None:
    """The line(s) of a collector's ``record``; a message that is itself a record (Docker's
    json-file line forwarded by another collector) gives its own message, at most
    ``_MAX_NESTED`` records deep."""
    message, decoded = _message_of(record)
    if message is None:
        return None
    nested = nested_record(message, depth + 1)
    peeled = record_lines(message)
    if nested is not None:
        peeled.lines = nested.lines
    peeled.stream = _pod_of(record) or _aws_stream(record)
    peeled.decoded = decoded
    when = None
    for key in _TIME_KEYS:
        value = record.get(key)
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            when = str(value)
            break
    realtime = record.get("__REALTIME_TIMESTAMP")
    if when is None and isinstance(realtime, str) and realtime.isdigit():
        when = realtime
    if when is not None and len(when) <= 64:
        moment = time_of(when)
        if moment is not None:
            peeled.time, peeled.time_text = moment, written(when, moment)
    _off_cri(peeled)
    if nested is not None and nested.runtime:  # the runtime's time, under the collectors'
        peeled.time, peeled.time_text, peeled.runtime = nested.time, nested.time_text, True
    if nested is not None and nested.cri:
        peeled.cri, peeled.partial = True, nested.partial
    return peeled


def _off_cri(peeled: Peeled) -> None:
    """Take a container runtime's prefix off the lines of ``peeled`` where each has it; the
    runtime's time is the line's, as in a CRI log."""
    cri = cri_lines(peeled.lines)
    if cri is None:
        return
    peeled.lines = cri.texts
    peeled.stream = peeled.stream or cri.stream
    peeled.cri, peeled.partial = True, cri.partial
    moment = time_of(cri.time_text)
    if moment is not None:
        peeled.time, peeled.time_text, peeled.runtime = moment, cri.time_text, True


def nested_record(message: str, depth: int = 1) -> Peeled | None:
    """The line(s) of the record ``message`` holds whole (``{"log": "...", ...}``), else
    None; ``depth``: how many records deep ``message`` already is."""
    body = message.rstrip("\r\n")
    if depth > _MAX_NESTED or body[:2] != '{"' or body[-1:] != "}":
        return None
    try:
        record = json.loads(body)
    except (ValueError, RecursionError):
        return None
    return _record_of(record, depth) if isinstance(record, dict) else None


def _pod_of(record: dict[str, object]) -> str | None:
    """``pod/<pod>/<container>`` where a record's labels (Loki's stream labels, Cloud
    Logging's ``resource.labels``) name a pod; ``pod/<pod>`` where they name no container."""
    labels = record.get("labels")
    resource = record.get("resource")
    if not isinstance(labels, dict) and isinstance(resource, dict):
        labels = resource.get("labels")
    if not isinstance(labels, dict):
        return None
    pod = labels.get("pod", labels.get("pod_name"))
    container = labels.get("container", labels.get("container_name", ""))
    if not isinstance(pod, str) or not isinstance(container, str):
        return None
    if _NAME.fullmatch(pod) is None or (container and _NAME.fullmatch(container) is None):
        return None
    return f"pod/{pod}/{container}" if container else f"pod/{pod}"


def _aws_stream(record: dict[str, object]) -> str | None:
    """AWS CloudWatch's ``logStreamName`` of an event (``filter-log-events`` mixes streams)."""
    name = record.get("logStreamName")
    if isinstance(name, str) and _AWS_NAME.fullmatch(name) is not None:
        return name
    return None


def cut_record(text: str) -> Peeled | None:
    """The start of a JSON record's message where the record does not parse (a line cut at
    ``Limits.max_log_line``: its message is read as far as it goes, its escapes undone); None
    when ``text`` holds no message member."""
    member = _CUT_MESSAGE.search(text, 0, _CUT_SEARCH)
    if member is None:
        return None
    chars = _STRING_PART.match(text, member.end())
    body = chars.group("body") if chars is not None else ""  # an escape cut in two left out
    try:
        body = _CUT_ESCAPE.sub("", _CUT_ESCAPE.sub("", body))  # '\\ud800\\u' loses both
        message = _LENIENT.decode('"' + body + '"')
    except ValueError:
        return None
    if not isinstance(message, str):
        return None
    peeled = record_lines(message)
    found = _CUT_TIME.search(text, 0, _CUT_SEARCH)
    if found is not None:
        stamp(peeled, found.group(1))
    return peeled


def member_line(text: str) -> Peeled | None:
    """The line(s) of a pretty-printed export's message member on a line of its own
    (``"line": "..."``), else None."""
    if text[:1] not in (" ", '"') or '"' not in text[:24]:
        return None
    member = _JSON_MEMBER.match(text)
    if member is None:
        return None
    try:
        value = json.loads(member.group("value"))
    except ValueError:
        return None
    return record_lines(value) if isinstance(value, str) else None


def export_structure(text: str) -> bool:
    """Whether ``text`` is a line of a pretty-printed export that holds no log line (its
    brackets, members other than the line)."""
    return _JSON_FRAME.match(text) is not None


def fluent_record(text: str) -> Peeled | None:
    """The record of a fluent-bit ``stdout`` line, with its time; None for another line."""
    entry = fluent_entry(text)
    if entry is None:
        return None
    record, moment, shown = entry
    peeled = _record_of(record)
    if peeled is not None and moment is not None:
        peeled.time, peeled.time_text = moment, shown
    return peeled
