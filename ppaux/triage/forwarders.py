"""What forwarders, fan-outs and launchers put before each line, told by the line's shape.

- a host fan-out (pdsh, clush): ``node1: <line>``; the host names the process, never the
  exception (``node1: RuntimeError: boom`` is a RuntimeError);
- supervisord: its activity log's level after a Python-logging time (``2026-12-01
  10:00:00,123 INFO exited: ...``), and a program's output relayed with its name and channel
  (supervisor-stdout's ``sglang stderr | <line>``, ``sglang:stderr <line>``);
- a wrapper that logs each line of the process it runs with its own time and name
  (``[<time>] [/bin/sh]: <line>``), inside another launcher's or a store's envelope;
- torchrun's local rank (``[default0]:``) and Open MPI's ``--tag-output`` (``[1,0]<stderr>:``,
  behind ``--timestamp-output``'s ctime when both are given, read as the host's wall clock:
  ``Thu Jan 23 11:55:50 2025[1,0]<stderr>:``): the rank is a hint, used only where sglang's
  own ``[... PPn TPm]`` prefix is absent;
- fluent-bit's ``stdout`` output: ``[0] <tag>: [<epoch seconds>, {<record>}]`` (v2:
  ``[[<epoch seconds>, {<metadata>}], {<record>}]``), the record as JSON or as fluent-bit
  prints it, Ruby-hash-like: ``{"log"=>"<line>", "stream"=>"stderr"}``, its strings escaped
  or not;
- a logfmt line: ``ts=... level=error msg="<line>"``;
- Python logging's default format behind its time (``<time> - root - ERROR - <line>``);
- a log store's field columns (Splunk's and Datadog's text exports, ``host=... source=...``)
  and a CSV download's columns before its quoted message.

Nothing here fails on a line; a line of another shape gets None.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from ppaux.patterns import lazy

__all__ = [
    "CSV_COLUMNS",
    "LOGFMT_START",
    "STORE_FIELDS",
    "fluent_entry",
    "host_or_fields",
    "logfmt_message",
    "mpi_time",
    "python_logger",
    "supervised",
    "tagged_rank",
    "wrapper_prefix",
]

#: A host fan-out's prefix: ``<host>: ``. The host's first label holds a digit or a dash
#: (``node1``, ``gpu-node-07.cluster``), which no Python exception's name (``socket.timeout``),
#: keyword or identifier before a colon holds.
_HOST = lazy(r"^(?P<host>[a-z][a-z0-9-]{0,62}(?:\.[a-z0-9-]{1,63}){0,8}): ")
#: torchrun's local rank (``torchrun --tee``, and stern's or k9s' views of it): ``[default0]:``.
_LOCAL_RANK = lazy(r"^\[default(?P<rank>\d{1,6})\]: ?")
#: Open MPI's ``mpirun --tag-output``: ``[<job>,<rank>]<stderr>:``.
_MPI = lazy(r"^\[\d{1,9},(?P<rank>\d{1,9})\]<(?:stdout|stderr|stddiag)>: ?")
#: Open MPI's ``mpirun --timestamp-output`` before its tag: ctime's form without its newline
#: (``Thu Jan 23 11:55:50 2025[1,1]<stderr>:``), the host's local time, no zone.
_MPI_TIME = lazy(
    r"^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?P<month>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
    r" (?P<day>[ \d]\d) (?P<clock>\d\d:\d\d:\d\d) (?P<year>\d{4})(?=\[\d{1,9},\d{1,9}\]<)"
)
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
#: fluent-bit's ``stdout`` output, up to its ``[time, record]`` pair.
_FLUENT = lazy(r"^\[\d{1,9}\] [^\s:\[\]]{1,512}: (?=\[\[?\d)")
#: The time of fluent-bit's printed pair, with v2's metadata after it, up to the record.
_ARROW_HEAD = lazy(r"^\[(\[)?(?P<time>\d{1,12}(?:\.\d{1,9})?)(?(1), \{[^{}]{0,512}\}\]), \{")
#: A key of a printed record, and its arrow: ``"log"=>`` (first, or after a value's ``, ``).
_ARROW_KEY = lazy(r'(?:^|(?<=["\d\]}el]), )"(?P<key>[\w.@-]{1,64})"=>')
#: A logfmt line begins with a key and '='; its pairs are read in turn.
LOGFMT_START = lazy(r"^[A-Za-z_][\w.]{0,64}=")
_LOGFMT_PAIR = lazy(r'(?P<key>[A-Za-z_][\w.]{0,64})=(?P<value>"(?:[^"\\]|\\.)*"|[^\s"]*)(?: +|$)')
_LOGFMT_MESSAGE = ("msg", "message", "log", "line")
_LOGFMT_TIME = ("ts", "time", "timestamp")
#: A log store's field columns before a line (Splunk's and Datadog's text exports, a
#: ``pod=...`` label a viewer puts first): ``host=node1 source=/var/log/x.log sourcetype=x``.
STORE_FIELDS = lazy(
    r"^(?:(?:host|source|sourcetype|index|service|status|env|pod|container|namespace)"
    r"=\S{0,512} )+"
)
#: Python logging's default format, behind its time: ``- <logger> - <LEVEL> - ``.
#: lmdeploy's adds the place of the call after the level (``- ERROR - engine.py:1122 - ``).
_PY_LOGGER = lazy(
    r"^- [\w.]{1,200} - (?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) - "
    r"(?:[\w.-]{1,200}\.py:\d{1,9} - )?"
)
#: The columns before a CSV download's quoted message (``<time>,<host>,<service>,"<line>"``),
#: behind its time.
CSV_COLUMNS = lazy(r'^(?:[^",\s]{0,253},){1,4}(?=")')
#: Decodes a quoted logfmt value (Go's ``%q``: ``\"``, ``\\``, ``\n``) as a JSON string.
_LENIENT = json.JSONDecoder(strict=False)


#: A wrapper's own time and name before the line of the process it runs.
_WRAPPER = lazy(r"^\[\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d[^\]]{0,16}\] \[(?P<who>[^\]\s]{1,64})\]: ")


def wrapper_prefix(text: str) -> tuple[str, str] | None:
    """(name, rest) of a line behind a wrapper's ``[<time>] [<name>]: ``; None for another
    line (sglang's own ``[<time> PP0] `` prefix among them)."""
    found = _WRAPPER.match(text)
    if found is None:
        return None
    return found.group("who"), text[found.end() :]


#: supervisord's levels (and Python logging's) after a time written with a comma.
SUPERVISOR_LEVEL = lazy(r"^(?:CRIT|ERRO|WARN|INFO|DEBG|TRAC|BLAT|DEBUG|WARNING|ERROR|CRITICAL) ")
#: A program's output as supervisord's event listeners relay it: its name and channel. A
#: name shaped as an exception's type is no program's (``OSError:stderr pipe closed`` is an
#: exception line).
_SUPERVISED = lazy(
    r"^(?![\w.]{0,200}(?:Error|Exception|Warning|Exit|Interrupt)\b)"
    r"(?P<who>[A-Za-z0-9][\w.-]{0,63}(?::[\w.-]{1,64})?)"
    r"(?: (?:stdout|stderr) \| |:(?:stdout|stderr):? )"
)


def supervised(text: str) -> tuple[str, str] | None:
    """(program, rest) of a line of a program's output that supervisord relayed with its name
    and channel (``sglang stderr | ...``, ``sglang:stderr ...``); None for another line."""
    found = _SUPERVISED.match(text)
    if found is None:
        return None
    return found.group("who"), text[found.end() :]


def tagged_rank(text: str) -> tuple[str, str] | None:
    """(stream, rest) of a line behind torchrun's ``[defaultN]:`` ('local rank N') or Open
    MPI's ``[job,N]<stderr>:`` ('rank N'); None for another line."""
    local = _LOCAL_RANK.match(text)
    if local is not None:
        return f"local rank {int(local.group('rank'))}", text[local.end() :]
    mpi = _MPI.match(text)
    if mpi is not None:
        return f"rank {int(mpi.group('rank'))}", text[mpi.end() :]
    return None


def mpi_time(text: str) -> tuple[str, str] | None:
    """(time, rest) of a line behind Open MPI's ``--timestamp-output`` time, which stands
    before its ``--tag-output`` tag: the time as ``YYYY-MM-DD HH:MM:SS`` (local, zone unknown),
    the rest from the tag on; None for another line."""
    found = _MPI_TIME.match(text)
    if found is None:
        return None
    month = _MONTHS.index(found.group("month")) + 1
    day = int(found.group("day"))
    wall = f"{found.group('year')}-{month:02d}-{day:02d} {found.group('clock')}"
    return wall, text[found.end() :]


def host_or_fields(text: str) -> tuple[str | None, str] | None:
    """(host, rest) of a line behind a fan-out's ``<host>: ``, a store's field columns or
    Python logging's ``- <logger> - <LEVEL> - `` (host None); None for another line."""
    if text[:2] == "- ":
        logger = python_logger(text)
        return None if logger is None else (None, logger[1])
    fields = STORE_FIELDS.match(text)
    if fields is not None:
        return None, text[fields.end() :]
    host = _HOST.match(text)
    if host is None:
        return None
    name = host.group("host")
    if not any(c.isdigit() or c == "-" for c in name.split(".", 1)[0]):
        return None
    return name, text[host.end() :]


def python_logger(text: str) -> tuple[str, str] | None:
    """(level, rest) of a line behind Python logging's default format after its time
    (``- lmdeploy - ERROR - <line>``); None for another line."""
    logger = _PY_LOGGER.match(text)
    return None if logger is None else (logger.group("level"), text[logger.end() :])


def fluent_entry(text: str) -> tuple[dict[str, object], float | None, str | None] | None:
    """(record, time, time as shown) of a fluent-bit ``stdout`` line; None for another."""
    head = _FLUENT.match(text)
    if head is None:
        return None
    rest = text[head.end() :]
    try:
        entry = json.loads(rest)
    except (ValueError, RecursionError):
        entry = _arrow_entry(rest)
    if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[1], dict)):
        return None
    stamp = entry[0]
    if isinstance(stamp, list) and stamp:  # v2: the time, then its metadata
        stamp = stamp[0]
    if not isinstance(stamp, (int, float)) or isinstance(stamp, bool):
        return entry[1], None, None
    try:
        shown = datetime.fromtimestamp(stamp, tz=UTC).isoformat(timespec="milliseconds")
    except (OverflowError, OSError, ValueError):
        return entry[1], None, None
    return entry[1], float(stamp), shown.replace("+00:00", "Z")


def _arrow_entry(rest: str) -> list[object] | None:
    """``[time, record]`` of fluent-bit's printed pair whose record is Ruby-hash-like
    (``{"log"=>"...", "stream"=>"stderr"}``); None for another text. A value ends where the
    next key's ``, "key"=>`` or the record's end begins, so quotes left unescaped inside it
    are kept."""
    head = _ARROW_HEAD.match(rest)
    end = rest.rstrip()
    if head is None or not end.endswith("}]"):
        return None
    body = end[head.end() : -2]
    keys = list(_ARROW_KEY.finditer(body))
    if not keys or keys[0].start() != 0:
        return None
    record: dict[str, object] = {}
    for key, after in zip(keys, [*keys[1:], None], strict=True):
        value = body[key.end() : len(body) if after is None else after.start()]
        record.setdefault(key.group("key"), _arrow_value(value))
    return [float(head.group("time")), record]


def _arrow_value(value: str) -> object:
    """A printed record's value: a string (escaped or not), else the text as printed."""
    if len(value) < 2 or value[0] != '"' or value[-1] != '"':
        return value
    try:
        decoded = json.loads(value)
    except (ValueError, RecursionError):
        return value[1:-1]  # printed without escapes
    return decoded if isinstance(decoded, str) else value[1:-1]


def logfmt_message(text: str) -> tuple[str, str | None] | None:
    """(message, time as written) of a logfmt line, the message's escapes undone; None when
    ``text`` is no such line or names no message."""
    pairs: dict[str, str] = {}
    at = 0
    while at < len(text):
        pair = _LOGFMT_PAIR.match(text, at)
        if pair is None or pair.end() == at:
            return None
        pairs.setdefault(pair.group("key"), pair.group("value"))
        at = pair.end()
    value = next((pairs[key] for key in _LOGFMT_MESSAGE if key in pairs), None)
    if value is None:
        return None
    message: object = value
    if value[:1] == '"':
        try:
            message = _LENIENT.decode(value)
        except ValueError:
            message = value[1:-1]
    stamp = next((pairs[key].strip('"') for key in _LOGFMT_TIME if key in pairs), None)
    return str(message), stamp if stamp is not None and len(stamp) <= 64 else None
