"""JSON exports that are one document, not one record per line, read as records.

A log store's API or a ``--format=json`` export gives one JSON document: an array of records
(``[{...},{...}]``, on one line or pretty-printed: Google Cloud Logging, CloudWatch, Docker),
or Loki's query API response (``{"status": "success", "data": {"resultType": "streams",
"result": [{"stream": {labels}, "values": [["<ns>", "<line>"], ...]}]}}``), or a search API's
response whose records stand in a list under other members (Splunk's ``results``,
Elasticsearch's ``hits.hits[]._source``, Datadog's ``data[].attributes``: found by their
shape, not their keys). Read line by line, such a file is one line, or brackets and quoted
strings.

:func:`is_document` tells such a file from its head (JSON lines start a record on each line);
:func:`records` reads the document whole, bounded by ``Limits.max_log_document``, and gives it
back as one JSON record per line (a Loki value as ``{"ts": ..., "line": ..., "labels": ...}``,
its stream's labels cut to those naming a pod, so that the cost stays linear in the input),
which :mod:`ppaux.triage.envelopes` peels as any other record. In such a log a record's number
stands for its line number: the document's records that hold a log line are numbered in order
from 1, Loki's values in the order of their times across its streams.
"""

from __future__ import annotations

import io
import json
import shlex
from collections.abc import Iterator
from itertools import pairwise
from typing import Any, BinaryIO

from ppaux.files import read_at_most
from ppaux.limits import Limits
from ppaux.patterns import lazy
from ppaux.suggestions import RaiseLimit, limit_note
from ppaux.text import byte_size
from ppaux.triage.jsonrecords import MESSAGE_KEYS
from ppaux.triage.sources import LogOpenError, NoLogLines

__all__ = ["is_document", "per_line", "records"]

#: The members of a record that hold its log line (:mod:`ppaux.triage.jsonrecords` reads them;
#: a Cloud Logging record's ``jsonPayload`` holds one in turn).
_MESSAGES = frozenset((*MESSAGE_KEYS, "jsonPayload"))


#: The stream labels a record keeps: those that name a pod or container (what
#: :mod:`ppaux.triage.envelopes` and the Kubernetes advice read), where the value is a
#: Kubernetes name (253 characters at most). A stream's other labels are dropped: copied into
#: every record, they would cost (labels) x (lines).
#: Bytes of a one-line object looked at for a member holding its records (Loki's and
#: CloudWatch's lists stand after a few short members; JSON lines records are far shorter).
_KEYS_SEEN = 4096
_KEPT_LABELS = ("namespace", "pod", "pod_name", "container", "container_name")
_KUBERNETES_NAME = lazy(r"[A-Za-z0-9][\w.-]{0,252}")

#: The start of Loki's query API response.
_LOKI = lazy(rb'^\{\s*"(?:status|data)"\s*:\s*(?:"success"|\{\s*"resultType")')
#: A member whose value is a list of records, whatever the keys' order (``jq -S`` sorts them):
#: Loki's ``"result": [{`` and ``"values": [[``, an export's ``"events": [{`` (AWS CloudWatch's
#: ``get-log-events`` and ``filter-log-events``). A quote inside a JSON string is escaped, so
#: the member is one of the object's own.
_RECORD_LIST = lazy(rb'"[^"\\]{1,64}"\s*:\s*\[\s*[\[{]')


def is_document(head: bytes) -> bool:
    """Whether ``head`` opens one JSON document (an array, or an object over several lines or
    never closed on its first line) rather than JSON lines or text."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text[:1] == b"[":
        following = text[1:].lstrip(b" \t\r\n")[:1]
        return following in (b"{", b"[", b"]")
    if text[:1] != b"{":
        return False
    if _LOKI.search(text[:256]) is not None:  # Loki's response, on one line or several
        return True
    first, newline, rest = text.partition(b"\n")
    if newline and first.strip() == b"{":
        return True  # a pretty-printed object
    # One object on one line (the whole file, or longer than the head) holding a list of
    # records: a document whatever its keys' order. JSON lines start a record on each line.
    # A line of JSON lines is a whole record: one that does not end as an object does was
    # cut (at a terminal's width, or past the head).
    whole = not rest.strip() or first.rstrip()[-1:] != b"}"
    return whole and _RECORD_LIST.search(first[:_KEYS_SEEN]) is not None


#: Widths taken for a terminal's (as :mod:`ppaux.triage.wrapping` takes them).
_MIN_WIDTH = 60
_MAX_WIDTH = 400
#: jq filters that write a document's records one per line, as :func:`records` reads them.
_LOKI_FILTER = ".data.result[] | .stream as $s | .values[] | {ts: .[0], line: .[1], labels: $s}"
_LOKI_RESULT = lazy(rb'"result"\s*:\s*\[\s*\{\s*"(?:stream|values)"')
_LIST_MEMBER = lazy(rb'"(?P<key>events|entries|records|logs)"\s*:\s*\[')


def per_line(head: bytes) -> str:
    """The jq filter that writes the document opening with ``head`` one record per line:
    Loki's response as its values (each with its stream's labels), an export's list member
    (``.events[]``), an array's items."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text[:1] == b"[":
        return ".[]"
    if _LOKI.search(text[:256]) is not None or _LOKI_RESULT.search(text) is not None:
        return _LOKI_FILTER
    member = _LIST_MEMBER.search(text)
    if member is not None:
        return f".{member.group('key').decode()}[]"
    return "."


def _lines_of(document: object) -> Iterator[dict[str, Any]]:
    if isinstance(document, list):
        for item in document:
            if isinstance(item, dict):
                yield item
        return
    if not isinstance(document, dict):
        return
    data = document.get("data")
    result = data.get("result") if isinstance(data, dict) else None
    if isinstance(result, list):  # Loki's query API response
        yield from _in_time_order(result)
        return
    items = _record_list(document)
    if items is None:
        yield document
        return
    for item in items:
        if isinstance(item, dict):
            yield _with_message(item)


def _with_message(item: dict[str, Any]) -> dict[str, Any]:
    """``item``, or the object in it that holds its log line (Elasticsearch's ``_source``,
    Datadog's ``attributes``) where ``item`` holds none itself."""
    if _MESSAGES.isdisjoint(item):
        for value in item.values():
            if isinstance(value, dict) and not _MESSAGES.isdisjoint(value):
                return value
    return item


def _record_list(document: dict[str, Any]) -> list[Any] | None:
    """The list of records in an API's response or an export, found by its shape: the first
    list, breadth first, with an object that holds a log line (or one whose member does):
    CloudWatch's ``events``, Splunk's ``results``, Elasticsearch's ``hits.hits``, Datadog's
    ``data``. None when no list holds one: the document is a record itself."""
    level: list[Any] = [document]
    while level:
        deeper: list[Any] = []
        for node in level:
            values = node.values() if isinstance(node, dict) else node
            for value in values:
                if isinstance(value, list):
                    if any(
                        isinstance(item, dict) and not _MESSAGES.isdisjoint(_with_message(item))
                        for item in value
                    ):
                        return value
                    deeper.append(value)
                elif isinstance(value, dict):
                    deeper.append(value)
        level = deeper
    return None


def _in_time_order(result: list[Any]) -> Iterator[dict[str, Any]]:
    """The values of Loki's streams as records, in the order of their times across streams.

    Loki gives each stream's values in the query's direction (``backward``, newest first, by
    default) and the streams one after the other: read in that order, a short stream's
    traceback comes bottom up and no step down in time shows it. Each value carries its time
    in nanoseconds: records are put in that order, a stream's values of the same time in the
    order they were written; a value without such a time keeps its place after the one
    before it in its stream."""
    timed: list[tuple[int, int, dict[str, Any]]] = []
    for stream in result:
        if not isinstance(stream, dict):
            continue
        labels = _kept(stream.get("stream"))
        values = stream.get("values")
        kept = [
            value
            for value in (values if isinstance(values, list) else [])
            if isinstance(value, list) and len(value) >= 2 and isinstance(value[1], str)
        ]
        times = [_nanoseconds(value[0]) for value in kept]
        known = [time for time in times if time is not None]
        if any(a > b for a, b in pairwise(known)):
            kept.reverse()  # the query's direction was backward
            times.reverse()
        last = None
        for value, time in zip(kept, times, strict=True):
            last = time if time is not None else last
            moment = last if last is not None else -1
            timed.append((moment, len(timed), {"ts": value[0], "line": value[1], "labels": labels}))
    timed.sort(key=lambda entry: entry[:2])
    for _, _, record in timed:
        yield record


def _nanoseconds(value: object) -> int | None:
    """A Loki value's time (a string of digits, in nanoseconds), or None."""
    if isinstance(value, str) and 0 < len(value) <= 19 and value.isdigit():
        return int(value)
    return None


def _rejoined(text: str) -> str | None:
    """``text`` (a document a terminal wrapped at its width) with each line of exactly that
    width joined to the next; None when it was not wrapped. Joining is safe anywhere in JSON: a
    line end between two tokens is only blank, and one inside a string was the terminal's."""
    lines = text.replace("\r\n", "\n").split("\n")
    width = max(len(line) for line in lines)
    if not _MIN_WIDTH <= width <= _MAX_WIDTH or sum(len(x) == width for x in lines) < 2:
        return None
    return "".join(line + ("" if len(line) == width else "\n") for line in lines)


def _kept(labels: object) -> dict[str, str]:
    """The labels of a stream that a record keeps (see ``_KEPT_LABELS``)."""
    if not isinstance(labels, dict):
        return {}
    kept = {}
    for key in _KEPT_LABELS:
        value = labels.get(key)
        if isinstance(value, str) and _KUBERNETES_NAME.fullmatch(value) is not None:
            kept[key] = value
    return kept


def records(stream: BinaryIO, name: str, limit: int = Limits().max_log_document) -> BinaryIO:
    """The JSON document in ``stream`` as one JSON record per line; its bytes as they are when
    they do not parse (a document cut short is read as text).

    Raises :class:`~ppaux.triage.sources.LogOpenError` (naming ``name``) when it is larger
    than ``limit`` bytes (``Limits.max_log_document``: parsing holds a document in memory, up to
    some twenty times its size for a hostile one of tiny records), or when none of its records
    holds a log line (:class:`~ppaux.triage.sources.NoLogLines`)."""
    data = read_at_most(stream, limit)
    if len(data) > limit:
        raise LogOpenError(
            name,
            f"one JSON document larger than {byte_size(limit)}; give it one record per line "
            f"({shlex.join(['jq', '-c', per_line(data[:_KEYS_SEEN])])}) "
            + limit_note("max_log_document", limit),
        ).suggest(RaiseLimit("max_log_document", limit))
    text = data.decode("utf-8", "replace")
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        rejoined = _rejoined(text)
        try:
            if rejoined is None:
                raise ValueError("not wrapped")
            document = json.loads(rejoined)
        except (ValueError, RecursionError):
            return io.BufferedReader(io.BytesIO(data))
    del data
    out = io.BytesIO()
    for record in _lines_of(document):
        if _MESSAGES.isdisjoint(record):
            continue  # no log line in it
        out.write(json.dumps(record, ensure_ascii=False).encode("utf-8", "replace"))
        out.write(b"\n")
    if not out.tell():
        raise NoLogLines(
            name,
            "a JSON document none of whose records holds a log line (a 'line', 'log', "
            "'message', 'textPayload' or 'MESSAGE' member, or Loki's values)",
        )
    out.seek(0)
    return io.BufferedReader(out)
