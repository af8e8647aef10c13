"""The envelopes people export and paste, told line by line from the line's own shape.

A log copied out of a web UI or a log store arrives with each line wrapped in what that store
adds, and a paste may mix them. Each line is peeled here, layer after layer, whatever the rest
of the file looks like:

- JSON records: Docker's json-file (``log``), Google Cloud Logging (``textPayload``,
  ``jsonPayload.message``), journald ``-o json`` (``MESSAGE``, ``__REALTIME_TIMESTAMP``), AWS
  CloudWatch ``get-log-events``/exports (``message``, ``timestamp`` in milliseconds), Grafana/
  Loki (``line``); a pretty-printed export's ``"line": "..."`` member on a line of its own. A
  record's message may hold several lines (a whole traceback): :func:`peel_envelope` returns
  them all.
- text rows: a leading time (RFC 3339, or ``YYYY-MM-DD HH:MM:SS[.fff]``, or epoch
  milliseconds), with a severity word before it (Google Cloud Logging's ``ERROR <time>``) or a
  level column after it (Grafana's table), Loki's ``{label="..."}`` set, Cloud Logging's
  ``[key: value]`` groups, a journald ``short-iso`` ``host ident[pid]:``, an ``aws logs tail``
  stream name, tab- or comma-separated columns (a table or CSV download);
- syslog's and journald's default ``short`` form (``Jun 17 06:48:30 host ident[pid]:``), and a
  serving framework's own logger before each line (vLLM's ``ERROR 03-12 15:02:44 file.py:N]``,
  ``[file.py:N]`` since vLLM 0.8);
- launchers: ``kubectl logs --prefix``'s ``[pod/<pod>/<container>]``, docker compose's padded
  ``<service>  |``, Ray's ``(... pid=N ...)``, Slurm ``srun --label``'s ``<task>:``; Ray's and
  compose's also behind a backtick or an indentation that a paste put before them.

Times are read with :meth:`datetime.fromisoformat` (RFC 3339, nanoseconds cut to
microseconds). Nothing here fails on a line: a line that has none of these shapes is returned
as it came.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

from ppaux.triage.forwarders import (
    CSV_COLUMNS,
    LOGFMT_START,
    STORE_FIELDS,
    SUPERVISOR_LEVEL,
    fluent_entry,
    host_or_fields,
    logfmt_message,
    supervised,
    tagged_rank,
    wrapper_prefix,
)

__all__ = [
    "MAX_RECORD_LINES",
    "MESSAGE_KEYS",
    "Peeled",
    "cut_record",
    "nested_record",
    "peel_envelope",
    "rfc3339",
]

#: Lines of one JSON record's message kept (a whole traceback fits; a hostile record does not
#: make a line cost more than this).
MAX_RECORD_LINES = 400
#: Digits of an epoch time accepted (milliseconds to nanoseconds); more is no time.
_MAX_EPOCH_DIGITS = 19

_ISO = r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|z|[+-]\d\d:?\d\d|\s?UTC)?"
_SEVERITY = r"(?:DEFAULT|DEBUG|INFO|NOTICE|WARNING|WARN|ERROR|CRITICAL|ALERT|EMERGENCY|[DIWEF])"
#: A row's leading time, with a severity word before it (Google Cloud Logging's text form).
_LEAD = re.compile(
    rf"^(?:{_SEVERITY}\s+)?(?P<time>{_ISO}|\d{{13,{_MAX_EPOCH_DIGITS}}})(?:\t| |,|$)"
)
_CSV_TIME = re.compile(rf'^"(?P<time>{_ISO}|\d{{13,{_MAX_EPOCH_DIGITS}}})",(?P<rest>.*)$')
_CSV_SEVERITY = re.compile(rf'^"{_SEVERITY}",')
_LEVEL_COLUMN = re.compile(
    r"^(?:info|error|warning|warn|debug|critical|unknown|INFO|ERROR|WARNING|WARN|DEBUG)\t"
)
_LABELS = re.compile(r'^\{(?:[\w.]+\s*=~?\s*"(?:[^"\\]|\\.)*"\s*,?\s*)*\}\s?')
#: The pod and container a Loki label set names (``{namespace="llm", pod="sglang-0"}``).
_LABEL_POD = re.compile(r'[{,\s]pod(?:_name)?\s*=\s*"([A-Za-z0-9][\w.-]{0,252})"')
_LABEL_CONTAINER = re.compile(r'[{,\s]container(?:_name)?\s*=\s*"([A-Za-z0-9][\w.-]{0,252})"')
_KEY_GROUP = re.compile(r"^\[[\w.]+: [^\[\]]*\]\s?")
#: journald ``short-iso``: ``<time> <host> <identifier>[<pid>]: `` (after the time).
_JOURNALD = re.compile(r"^[\w.-]+ [\w.@/-]+(?:\[\d{1,10}\])?: ")
#: ``aws logs tail``: ``<time> <stream> <message>``; a stream name holds a '/'.
#: A CloudWatch log stream's name as a record names it (512 characters at most, no ':' or '*').
_AWS_NAME = re.compile(r"[\w.\[\]$/#=@+-]{1,512}")
_AWS_STREAM = re.compile(r"^[\w.-]+(?:/[\w.\[\]$-]+)+ ")
_KUBECTL = re.compile(r"^\[(?P<who>pod/[^/\]\s]+/[^/\]\s]*)\] ")
#: syslog's and journald's default (``short``) form: ``Jun 17 06:48:30 host ident[pid]: ``.
_SYSLOG = re.compile(
    r"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d{1,9})? [\w.-]+ [\w.@/-]+(?:\[\d{1,10}\])?: "
)
#: A Python serving framework's own logger (vLLM's): ``ERROR 03-12 15:02:44 file.py:581] ``, and
#: since vLLM 0.8 with the place in brackets, ``ERROR 08-06 22:23:09 [file.py:487] ``.
_FRAMEWORK = re.compile(
    r"^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,6})? "
    r"\[?[\w.-]{1,200}:\d{1,9}\] "
)
_COMPOSE = re.compile(r"^(?P<who>[A-Za-z0-9][\w.-]*) +\| ?")
#: docker compose's prefix as it pads a service's name: at least two spaces before the bar.
_PADDED_COMPOSE = re.compile(r"^(?P<who>[A-Za-z0-9][\w.-]*[-_]\d+) {2,}\| ?")
#: Characters a paste may put before a launcher's prefix (a backtick, an indentation).
_MAX_STRAY = 8
_RAY = re.compile(r"^\((?P<who>[^()]{0,200}\bpid=\w+[^()]{0,200})\) ?")
_SLURM = re.compile(r"^ {0,8}(?P<task>\d{1,7}): ")
_JSON_MEMBER = re.compile(
    r'^\s*"(?:line|message|textPayload|MESSAGE|log|msg)"\s*:\s*(?P<value>"(?:[^"\\]|\\.)*")\s*,?\s*$'
)
#: A line of a pretty-printed JSON export that holds no log line: brackets, and members
#: other than the line (``"tsNs": "..."``, ``"labels": {``).
_JSON_FRAME = re.compile(
    r'^\s*(?:[\[\]{}],?|"[\w@.]{1,64}"\s*:\s*(?:"(?:[^"\\]|\\.){0,200}"|-?\d{1,30}|true|false|null|[\[{]))\s*,?\s*$'
)
#: A JSON record's message member, looked for in the first characters of a record that does
#: not parse (one cut at ``Limits.max_log_line``), and its time member.
_CUT_SEARCH = 4096
_CUT_MESSAGE = re.compile(r'"(?:log|line|textPayload|MESSAGE|message|msg|Line|@message)"\s*:\s*"')
_CUT_TIME = re.compile(r'"(?:time|timestamp|@timestamp|ts)"\s*:\s*"?([\w:.+-]{10,64})"?[,}]')
#: A JSON string's characters up to its closing quote (or the line's end).
_STRING_PART = re.compile(r'(?P<body>(?:[^"\\]|\\.)*)\\?')
#: Decodes a JSON string that holds control characters as they came (a tab).
_LENIENT = json.JSONDecoder(strict=False)
#: A ``\u`` escape cut short at the end of a cut string, or the first half of a surrogate pair.
_CUT_ESCAPE = re.compile(r"\\u(?:[0-9A-Fa-f]{0,3}|[dD][89abAB][0-9A-Fa-f]{2})$")
#: A Kubernetes object's name (a DNS label or subdomain).
_NAME = re.compile(r"[A-Za-z0-9][\w.-]{0,252}")
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


class Peeled:
    """What a line's envelope said: ``lines`` (one, or a record's several), the collector's
    ``time`` (seconds since the epoch) and ``time_text`` as written, and ``stream`` (a pod, a
    service, a Slurm task, a Ray actor) where one is named."""

    __slots__ = ("decoded", "lines", "stream", "time", "time_text")

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.time: float | None = None
        self.time_text: str | None = None
        self.stream: str | None = None
        #: The message was journald's array of bytes, decoded here (the raw line hid its text).
        self.decoded = False


def rfc3339(text: str) -> float | None:
    """Seconds since the epoch of an RFC 3339 or ISO 8601 time with a zone (a time without
    one is taken as UTC only when it says so); None when it is not one."""
    head = text.strip().replace(",", ".").replace(" UTC", "Z").replace("UTC", "Z")
    fraction = 0.0
    match = re.match(r"^(.{10}[T ]\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(.*)$", head)
    if match is None:
        return None
    base, digits, zone = match.groups()
    if digits:
        fraction = int(digits) / 10 ** len(digits)
    if not zone:
        return None
    try:
        moment = datetime.fromisoformat(base + ("+00:00" if zone in ("Z", "z") else zone))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return moment.timestamp() + fraction


def _epoch(digits: str) -> float | None:
    if len(digits) > _MAX_EPOCH_DIGITS:
        return None
    value = int(digits)
    scale = {13: 1e3, 16: 1e6, 19: 1e9}.get(len(digits))
    return None if scale is None else value / scale


def _time_of(text: str) -> float | None:
    return _epoch(text) if text.isdigit() else rfc3339(text)


def _written(text: str, moment: float) -> str:
    """How a collector's time is shown: as written, an epoch number as RFC 3339 in UTC."""
    if not text.isdigit():
        return text
    shown = datetime.fromtimestamp(moment, tz=UTC).isoformat(timespec="milliseconds")
    return shown.replace("+00:00", "Z")


def _json_record(text: str) -> Peeled | None:
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


def _record_of(record: dict[str, object], depth: int = 0) -> Peeled | None:
    """The line(s) of a collector's ``record``; a message that is itself a record (Docker's
    json-file line forwarded by another collector) gives its own message, at most
    ``_MAX_NESTED`` records deep."""
    message = None
    decoded = False
    for key in MESSAGE_KEYS:
        value = record.get(key)
        if isinstance(value, str):
            message = value
            break
        if key == "MESSAGE" and isinstance(value, list):  # journald: bytes that are not UTF-8
            raw = bytes(v for v in value[: 1 << 16] if isinstance(v, int) and 0 <= v < 256)
            message = raw.decode("utf-8", "backslashreplace")
            decoded = True
            break
    for nest, keys in _NESTED_MESSAGES:
        payload = record.get(nest)
        if message is None and isinstance(payload, dict):
            for key in keys:
                if isinstance(payload.get(key), str):
                    message = payload[key]
                    break
    if message is None:
        return None
    nested = nested_record(message, depth + 1)
    peeled = Peeled(message.rstrip("\r\n").split("\n")[:MAX_RECORD_LINES])
    if nested is not None:
        peeled.lines = nested.lines
    peeled.stream = _pod_of(record) or _aws_stream(record)
    peeled.decoded = decoded
    stamp = None
    for key in _TIME_KEYS:
        value = record.get(key)
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            stamp = str(value)
            break
    realtime = record.get("__REALTIME_TIMESTAMP")
    if stamp is None and isinstance(realtime, str) and realtime.isdigit():
        stamp = realtime
    if stamp is not None and len(stamp) <= 64:
        moment = _time_of(stamp)
        if moment is not None:
            peeled.time, peeled.time_text = moment, _written(stamp, moment)
    return peeled


#: How many records deep a message is read (a collector's record of another's record of
#: Docker's json-file line).
_MAX_NESTED = 3


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
    Logging's ``resource.labels``) name a pod."""
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
    return f"pod/{pod}/{container}"


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
    peeled = Peeled(message.rstrip("\r\n").split("\n")[:MAX_RECORD_LINES])
    stamp = _CUT_TIME.search(text, 0, _CUT_SEARCH)
    if stamp is not None:
        _stamp(peeled, stamp.group(1))
    return peeled


def peel_envelope(text: str) -> Peeled:
    """The line(s) inside ``text``'s envelope, with the envelope's time and stream."""
    if text[:1] == "{" and text.rstrip()[-1:] == "}":
        record = _json_record(text)
        if record is not None:
            record.lines = [_layers(line, record) for line in record.lines]
            return record
    if text[:2] == '{"' and text.rstrip()[-1:] != "}":
        cut = cut_record(text)
        if cut is not None:
            cut.lines = [_layers(line, cut) for line in cut.lines]
            return cut
    if text[:1] in (" ", '"') and '"' in text[:24]:
        member = _JSON_MEMBER.match(text)
        if member is not None:
            try:
                value = json.loads(member.group("value"))
            except ValueError:
                value = None
            if isinstance(value, str):
                member_lines = Peeled(value.rstrip("\r\n").split("\n")[:MAX_RECORD_LINES])
                member_lines.lines = [_layers(line, member_lines) for line in member_lines.lines]
                return member_lines
    if _JSON_FRAME.match(text) is not None:
        return Peeled([])  # a pretty-printed export's brackets and other members
    if text[:1] == "[":
        fluent = _fluent_record(text)
        if fluent is not None:
            fluent.lines = [_layers(line, fluent) for line in fluent.lines]
            return fluent
    elif LOGFMT_START.match(text) is not None:
        logfmt = _logfmt(text)
        if logfmt is not None:
            logfmt.lines = [_layers(line, logfmt) for line in logfmt.lines]
            return logfmt
    peeled = Peeled([text])
    rest = text
    csv = _CSV_TIME.match(rest)
    if csv is not None:
        rest = csv.group("rest")
        severity = _CSV_SEVERITY.match(rest)
        if severity is not None:  # a severity column between the time and the message
            rest = rest[severity.end() :]
        if rest.startswith('"') and rest.endswith('"') and len(rest) >= 2:
            rest = rest[1:-1].replace('""', '"')
        _stamp(peeled, csv.group("time"))
    else:
        lead = _LEAD.match(rest)
        if lead is not None and lead.group("time") and not _sglang_like(rest):
            _stamp(peeled, lead.group("time"))
            comma = rest[lead.end() - 1 : lead.end()] == ","
            rest = rest[lead.end() :]
            again = _LEAD.match(rest)
            if (
                again is not None
                and again.group("time")
                and rest[again.end() - 1 : again.end()] in ("\t", ",")
                and not _sglang_like(rest)
            ):  # a second time column (epoch milliseconds, then RFC 3339): the latter is shown
                moment = _time_of(again.group("time"))
                if moment is not None:
                    peeled.time, peeled.time_text = moment, again.group("time")
                comma = rest[again.end() - 1 : again.end()] == ","
                rest = rest[again.end() :]
            columns = CSV_COLUMNS.match(rest) if comma and rest[-1:] == '"' else None
            if columns is not None:  # a CSV download's host and service before the message
                rest = rest[columns.end() :]
            if comma and len(rest) >= 2 and rest[0] == rest[-1] == '"':
                rest = rest[1:-1].replace('""', '"')  # a CSV download's quoted message
            level = _LEVEL_COLUMN.match(rest)
            if level is None and "," in lead.group("time"):
                level = SUPERVISOR_LEVEL.match(rest)  # supervisord's, Python logging's
            if level is not None:
                rest = rest[level.end() :]
            fields = STORE_FIELDS.match(rest)
            if fields is not None:
                rest = rest[fields.end() :]
            journald = _JOURNALD.match(rest)
            if journald is not None and not rest.startswith(("File ", "Traceback")):
                rest = rest[journald.end() :]
            else:
                aws = _AWS_STREAM.match(rest)
                if aws is not None:
                    peeled.stream = aws.group(0).strip()
                    rest = rest[aws.end() :]
    syslog = _SYSLOG.match(rest)
    if syslog is not None:
        rest = rest[syslog.end() :]
    rest = _layers(rest, peeled)
    nested = nested_record(rest) if rest[:2] == '{"' else None
    peeled.lines = [rest] if nested is None else nested.lines
    return peeled


def _fluent_record(text: str) -> Peeled | None:
    """The record of a fluent-bit ``stdout`` line, with its time; None for another line."""
    entry = fluent_entry(text)
    if entry is None:
        return None
    record, moment, shown = entry
    peeled = _record_of(record)
    if peeled is not None and moment is not None:
        peeled.time, peeled.time_text = moment, shown
    return peeled


def _logfmt(text: str) -> Peeled | None:
    """The message of a logfmt line, with its time; None for another line."""
    found = logfmt_message(text)
    if found is None:
        return None
    message, stamp = found
    peeled = Peeled(message.rstrip("\r\n").split("\n")[:MAX_RECORD_LINES])
    if stamp is not None:
        _stamp(peeled, stamp)
    return peeled


def _layers(rest: str, peeled: Peeled) -> str:
    """``rest`` without the launchers' and stores' layers before it (at most four)."""
    for _ in range(4):
        step = _launcher(rest, peeled)
        if step is None:
            break
        rest = step
    return rest


def _sglang_like(text: str) -> bool:
    """A line that is sglang's own prefix at its start is never peeled as a row's time."""
    return text.startswith("[")


def _stamp(peeled: Peeled, text: str) -> None:
    moment = _time_of(text)
    if moment is not None and peeled.time is None:
        peeled.time, peeled.time_text = moment, _written(text, moment)


def _stray_launcher(rest: str, peeled: Peeled) -> str | None:
    """``rest`` without Ray's, docker compose's or a wrapper's prefix behind a few characters a
    paste put before it (a backtick, the whole paste's indentation); None when there is none.
    Only the prefixes that cannot be a traceback's own text: Ray's holds ``pid=``, compose pads
    its service's name before the bar, a wrapper's holds a time and its name in brackets."""
    inner = rest.lstrip(" `")
    if len(rest) - len(inner) > _MAX_STRAY:
        return None
    ray = _RAY.match(inner) if inner[:1] == "(" else None
    if ray is not None:
        peeled.stream = ray.group("who")
        return inner[ray.end() :]
    compose = _PADDED_COMPOSE.match(inner)
    if compose is not None and compose.group("who") not in ("File", "Traceback"):
        peeled.stream = compose.group("who")
        return inner[compose.end() :]
    wrapper = wrapper_prefix(inner) if inner[:1] == "[" else None
    if wrapper is not None:
        peeled.stream = peeled.stream or wrapper[0]
        return wrapper[1]
    return None


def _launcher(rest: str, peeled: Peeled) -> str | None:
    """``rest`` without one more layer (labels, key groups, a launcher's prefix); None when
    it has none."""
    head = rest[:1]
    if head == "{":
        labels = _LABELS.match(rest)
        if labels is not None and labels.end() > 2:
            pod = _LABEL_POD.search(labels.group(0))
            if pod is not None and peeled.stream is None:
                container = _LABEL_CONTAINER.search(labels.group(0))
                named = container.group(1) if container is not None else ""
                peeled.stream = f"pod/{pod.group(1)}/{named}"
            return rest[labels.end() :]
        return None
    if head == "[":
        group = _KEY_GROUP.match(rest)
        if group is not None:
            return rest[group.end() :]
        pod = _KUBECTL.match(rest)
        if pod is not None:
            peeled.stream = pod.group("who")
            return rest[pod.end() :]
        wrapper = wrapper_prefix(rest)
        if wrapper is not None:  # a wrapper's time and name: the process's line behind them
            peeled.stream = peeled.stream or wrapper[0]
            return wrapper[1]
        tagged = tagged_rank(rest)
        if tagged is not None:  # a hint only: sglang's own prefix, behind it, names the ranks
            peeled.stream, rest = tagged
            return rest
        return None
    if head == "(":
        ray = _RAY.match(rest)
        if ray is not None:
            peeled.stream = ray.group("who")
            return rest[ray.end() :]
        return None
    if head in (" ", "`"):
        stray = _stray_launcher(rest, peeled)
        if stray is not None:
            return stray
    if head == "\t":
        return rest[1:]
    bare = rest.lstrip(" ")
    framework = _FRAMEWORK.match(bare) if len(rest) - len(bare) <= 8 else None
    if framework is not None:
        return bare[framework.end() :]
    relayed = supervised(rest)
    if relayed is not None:
        peeled.stream = relayed[0]
        return relayed[1]
    slurm = _SLURM.match(rest)
    if slurm is not None:
        peeled.stream = f"task {int(slurm.group('task'))}"
        return rest[slurm.end() :]
    compose = _COMPOSE.match(rest)
    if compose is not None and compose.group("who") not in ("File", "Traceback"):
        peeled.stream = compose.group("who")
        return rest[compose.end() :]
    if rest[:1].islower() or rest[:2] == "- ":
        fanned = host_or_fields(rest)
        if fanned is not None:
            host, rest = fanned
            peeled.stream = host or peeled.stream
            return rest
    lead = _LEAD.match(rest)
    if lead is not None and lead.group("time") and peeled.time is None:
        _stamp(peeled, lead.group("time"))
        return rest[lead.end() :]
    return None
