"""Reading one log in one pass: its failures and events, bounded, whatever the log holds.

The scanner jumps from marker to marker (:mod:`ppaux.triage.scanner`); from a traceback's first
line on, lines are read one by one and fed to the open tracebacks of their stream until every
one has ended, then the scanner jumps again. Interleaved lines of other processes are expected:
an sglang line of other ranks does not end a traceback that still waits for its exception line,
and a launcher's prefix (compose, Ray) keeps each process's lines apart.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from typing import BinaryIO, cast

from ppaux.limits import Limits
from ppaux.triage.crashes import Crashes, rank_within
from ppaux.triage.documents import is_document, records
from ppaux.triage.envelopes import peel_envelope
from ppaux.triage.flattened import ESCAPED, unescaped, unflatten
from ppaux.triage.lineformat import (
    Envelope,
    Launcher,
    LogLine,
    detect,
    in_zone,
    peel,
    torch_rank,
    unwrap,
)
from ppaux.triage.newest import Reversed, newest_first, oldest_first
from ppaux.triage.pastemarks import Unmarked, paste_mark
from ppaux.triage.records import (
    Event,
    Failure,
    TracebackBuilder,
    cut_header,
    failure_start,
    is_frame,
    raised,
)
from ppaux.triage.scanner import ALL_MARKERS, MARKERS, WEAK_MARKERS, Scanner
from ppaux.triage.sources import LogSource, compression_cut, open_log
from ppaux.triage.wrapping import Unwrapped, wrap_width
from ppaux.triage.zones import LocalZone

__all__ = ["LogReading", "read_log"]

#: Lines of other processes after which a traceback still waiting for its exception is ended.
_MAX_FOREIGN = 400
_MARKER_TEXTS = tuple(marker.decode() for marker in MARKERS)
_WEAK_TEXTS = tuple(marker.decode().rstrip("\n") for marker in WEAK_MARKERS)
#: Characters of a piece's end that a marker split between two pieces can start in.
_SEAM = max(len(marker) for marker in ALL_MARKERS) - 1
#: Bytes looked at to tell a log's envelope and launcher.
_HEAD = 64 << 10

#: Characters of a capture line read (its directory is a path: far shorter).
_CAPTURE_LINE = 8192
_CAPTURE_DIR = re.compile(r"ppaux capture: capturing .* into (?P<dir>.+?) \(when=(?P<how>[^)]*)\)")
#: sglang's prefix with a pipeline rank, as it appears inside any envelope (``[time ... PPn ...]``).
_PP_PREFIX = re.compile(
    rb"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{3})?"
    rb"(?: (?:DP|ATTN_CP|MOE_DP|TP|EP)\d{1,6})* PP(\d{1,6})\b"
)
_PP_RANK = re.compile(r"\bPP(\d{1,6})\b")
#: sglang's ``server_args=ServerArgs(...)`` line, and the settings of it triage uses; and the
#: launch command's own flags, where a launcher logs it.
_SERVER_ARGS = re.compile(rb"ServerArgs\([^\n]{0,60000}")
_SETTING = {
    "pp_size": re.compile(rb"\bpp_size=(\d{1,4})\b"),
    "nnodes": re.compile(rb"\bnnodes=(\d{1,4})\b"),
    "model_path": re.compile(rb"\bmodel_path='([^'\n]{1,512})'"),
}
#: What only a log of sglang's or of a launcher around it holds, looked for in a log's head:
#: sglang's prefix (or a cut one), a traceback, torch's ``[rankN]:``, sglang's server arguments.
_LOG_SHAPE = re.compile(
    rb"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d|(?:DP|PP|TP|EP)\d{1,6}\] |Traceback \(m|"
    rb"\[rank\d{1,6}\]:|hit an exception|ServerArgs\(|Watchdog caught|"
    rb'File \\?"[^"\n]{1,4096}", line \d'
)
#: A rank or a frame's line number longer than ppaux reads (a finding, not a number).
_OVERSIZED = re.compile(r"(?:\b(?:DP|PP|ATTN_CP|MOE_DP|TP|EP)|, line |\[rank)\d{7,}")
#: Lines with an oversized number listed per log.
_MAX_OVERSIZED = 16
_FLAG_PP = re.compile(rb"--(?:pp-size|pipeline-parallel-size)[= ](\d{1,4})\b")
#: What a traceback flattened onto one line holds (its header, then its first frame).
_FLATTENED = 'call last): File "'
_FLAG_NNODES = re.compile(rb"--nnodes[= ](\d{1,4})\b")


@dataclass
class LogReading:
    """What one log holds for triage."""

    source: str
    envelope: Envelope = Envelope.PLAIN
    launcher: Launcher = Launcher.NONE
    lines: int = 0
    failures: list[Failure] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    more_failures: int = 0
    more_events: int = 0
    long_lines: int = 0
    #: Why a compressed log ended early, or None.
    cut: str | None = None
    #: The compression of a log that ended early (gzip, bzip2, xz, zstd).
    cut_compression: str = "gzip"
    #: Capture directories ppaux's plugin said it writes to, with 'strict' when it does.
    captures: list[tuple[str, bool]] = field(default_factory=list)
    #: True when the log holds no byte at all (once decompressed and decoded).
    empty: bool = False
    #: Pipeline ranks (``PPn``) seen in sglang's prefixes of the log's first 64 KiB (where every
    #: rank logs its start-up) and of the lines read around failures.
    pp_ranks: set[int] = field(default_factory=set)
    #: sglang's server arguments, where the log's first 64 KiB show them: ``pp_size``,
    #: ``nnodes``, ``model_path`` (as written).
    server_args: dict[str, str] = field(default_factory=dict)
    #: False when nothing in the log has the shape of sglang's lines or a launcher's (a
    #: README, a torch dump, a one-line text file): no log of sglang's.
    shaped: bool = True
    #: The file reads as source code (see :func:`_source_code`), not as a log.
    source_code: bool = False
    #: Lines holding a rank or line number too long to read, and how many more.
    oversized: list[int] = field(default_factory=list)
    more_oversized: int = 0
    #: An envelope names a pod (a log store's labels or resource, ``kubectl logs --prefix``)
    #: on a line read: the log came from Kubernetes. Never told from a message's own text.
    kubernetes: bool = False


#: torch's error records (``[E...``) of a collective that timed out, besides the watchdog's own
#: line: 'Timeout at NCCL work', 'Some NCCL operations have failed or timed out', a dump signal
#: 'due to a collective timeout'.
_NCCL_TIMEOUT = re.compile(
    r"\[E[^\]]{0,40}ProcessGroupNCCL\.cpp:\d+\].{0,400}(?:timed out|[Tt]imeout)"
)


def _event_kind(text: str) -> str | None:
    if "Watchdog caught collective" in text or _NCCL_TIMEOUT.search(text) is not None:
        return "watchdog"
    if "TCPStore" in text:
        return "store"
    if "sigquit from a child" in text or "SIGQUIT received" in text:
        return "sigquit"
    if "ppaux capture:" in text:
        return "capture"
    return None


class _Open:
    """The tracebacks still open in one stream, in the order they began, and how many sglang
    lines the stream has had (what a traceback waiting for its exception counts as foreign)."""

    __slots__ = ("builders", "sglang_lines")

    def __init__(self) -> None:
        self.builders: dict[int, TracebackBuilder] = {}
        self.sglang_lines = 0


class _Reader:
    """Feeds lines to the open tracebacks of their stream. Each line costs the same whatever
    how many tracebacks are open: they are indexed by stream and by ranks, and the sglang lines
    of other ranks that a waiting traceback lets pass are counted once per stream."""

    def __init__(self, reading: LogReading, first_order: int, limits: Limits = Limits()) -> None:
        self.reading = reading
        self.order = first_order
        #: Failures and events kept per log (``Limits.max_failures``, ``max_events``); more are
        #: counted (a crash loop repeats the same ones).
        self.max_failures = limits.max_failures
        self.max_events = limits.max_events
        #: How many tracebacks are open, in every stream.
        self.count = 0
        self._streams: dict[str | None, _Open] = {}
        self._by_ranks: dict[tuple[str | None, str | None], dict[int, TracebackBuilder]] = {}
        self._after: dict[str | None, dict[int, TracebackBuilder]] = {}
        #: Per stream, the last line read whose header was cut before 'Traceback (m': the
        #: fragment whose frames follow it is that line's ranks' failure.
        self._cut_headers: dict[str | None, LogLine] = {}
        self.crashes = Crashes(reading.source, self._next_order)

    def _next_order(self) -> int:
        self.order += 1
        return self.order

    def _add(self, builder: TracebackBuilder) -> None:
        failure = builder.failure
        stream = self._streams.setdefault(failure.stream, _Open())
        builder.base = stream.sglang_lines
        stream.builders[id(builder)] = builder
        self._by_ranks.setdefault((failure.stream, failure.ranks), {})[id(builder)] = builder
        self.count += 1

    def _settle(self, builder: TracebackBuilder) -> None:
        """Index a traceback past its exception line among those any sglang line ends."""
        if builder.wants_frames or builder.ended:
            return
        builder.ended = True
        failure = builder.failure
        self._by_ranks.get((failure.stream, failure.ranks), {}).pop(id(builder), None)
        self._after.setdefault(failure.stream, {})[id(builder)] = builder

    def close(self, builder: TracebackBuilder) -> None:
        failure = builder.failure
        stream = self._streams[failure.stream]
        del stream.builders[id(builder)]
        self._by_ranks.get((failure.stream, failure.ranks), {}).pop(id(builder), None)
        self._after.get(failure.stream, {}).pop(id(builder), None)
        self.count -= 1
        finished = builder.finish()
        if finished is not None:
            self.reading.failures.append(finished)

    def close_all(self) -> None:
        for stream in list(self._streams.values()):
            for builder in list(stream.builders.values()):
                self.close(builder)

    @staticmethod
    def _foreign(stream: _Open, builder: TracebackBuilder) -> int:
        return builder.foreign + stream.sglang_lines - builder.base

    def _target(self, stream: _Open) -> TracebackBuilder:
        """The latest traceback of the stream still waiting for its exception, else the
        latest."""
        last = None
        for builder in reversed(stream.builders.values()):
            last = last or builder
            if builder.wants_frames:
                return builder
        assert last is not None
        return last

    def take(self, line: LogLine, marked: bool, weak: bool = False) -> None:
        if _OVERSIZED.search(line.text) is not None:
            reading = self.reading
            if len(reading.oversized) < _MAX_OVERSIZED:
                reading.oversized.append(line.number)
            else:
                reading.more_oversized += 1
        if line.ranks:
            self.reading.pp_ranks.update(int(n) for n in _PP_RANK.findall(line.ranks))
        if line.stream is not None and line.stream.startswith("pod/"):
            self.reading.kubernetes = True  # an envelope's labels or kubectl named a pod
        stream = self._streams.get(line.stream)
        if stream is not None and stream.builders:
            if line.sglang:
                stream.sglang_lines += 1
                for builder in list(self._after.get(line.stream, {}).values()):
                    self.close(builder)
                same = self._by_ranks.get((line.stream, line.ranks or None), {})
                for builder in list(same.values()):
                    self.close(builder)
            else:
                builder = self._target(stream)
                if builder.feed(line, marked):
                    self._settle(builder)
                    return
                if builder.wants_frames:
                    builder.foreign += 1
                    if self._foreign(stream, builder) > _MAX_FOREIGN:
                        self.close(builder)
                else:
                    self.close(builder)
            while stream.builders:
                first = next(iter(stream.builders.values()))
                if self._foreign(stream, first) <= _MAX_FOREIGN:
                    break
                self.close(first)
        if marked:
            self._marked(line)
        elif weak:
            self._weak(line)

    def _weak(self, line: LogLine) -> None:
        """A frame line no open traceback took (a fragment whose header is lost), or an
        exception line outside any traceback: a one-line ``[prefix] SomeError: ...`` record
        (that rank's failure), or the last line of a fragment whose frames the log lost."""
        stream = self._streams.get(line.stream)
        if stream is not None and stream.builders:
            return
        reading = self.reading
        text = line.text
        fragment = is_frame(text)
        shaped = None if fragment else raised(text)
        if not fragment and shaped is None:
            if line.ranks and cut_header(text):
                self._cut_headers[line.stream] = line
            return
        first = line
        header = self._cut_headers.pop(line.stream, None)
        if header is not None and fragment and line.number - header.number <= 1:
            line = header  # the failure starts at its cut header: its ranks, time and place
        if shaped is not None and (shaped[0].endswith("Warning") or line.ranks == ""):
            # A warning is no failure; an exception line under sglang's prefix without ranks is
            # the server process's (a request refused), not a rank's.
            return
        if len(reading.failures) + self.count >= self.max_failures:
            reading.more_failures += 1
            return
        failure = Failure(
            source=reading.source,
            line=line.number,
            time=line.time,
            time_text=line.time_text,
            ranks=line.ranks or None,
            stream=line.stream,
            process=None,
            order=self._next_order(),
            zone=line.zone,
            fragment=True,
        )
        if fragment:
            builder = TracebackBuilder(failure)
            builder.feed(first, False)
            self._add(builder)
            return
        assert shaped is not None
        failure.exception, failure.message = shaped
        reading.failures.append(failure)

    def _marked(self, line: LogLine) -> None:
        reading = self.reading
        failure = failure_start(line, reading.source, self._next_order())
        if failure is not None:
            if len(reading.failures) + self.count >= self.max_failures:
                reading.more_failures += 1
                return
            self._add(TracebackBuilder(failure))
            return
        kind = _event_kind(line.text)
        if kind is None:
            crash = self.crashes.take(line)
            if crash is not None:
                if len(reading.failures) + self.count >= self.max_failures:
                    reading.more_failures += 1
                else:
                    reading.failures.append(crash)
            return
        if kind == "capture":
            found = _CAPTURE_DIR.search(line.text[:_CAPTURE_LINE])
            if found is not None and len(reading.captures) < 16:
                reading.captures.append((found.group("dir"), "strict" in found.group("how")))
        if len(reading.events) >= self.max_events:
            reading.more_events += 1
            return
        who = line.ranks or torch_rank(line.text) or rank_within(line.text)
        who = who or line.stream or "a process"
        if kind == "sigquit":
            who = "the parent process"
        reading.events.append(
            Event(
                kind,
                reading.source,
                line.number,
                line.time,
                line.time_text,
                who,
                line.text[:2000],
                self._next_order(),
                line.zone,
            )
        )


def _server_args(head: bytes) -> dict[str, str]:
    """The settings triage uses from sglang's server arguments line in ``head``."""
    found: dict[str, str] = {}
    line = _SERVER_ARGS.search(head)
    if line is not None:
        for name, pattern in _SETTING.items():
            match = pattern.search(line.group(0))
            if match is not None:
                found[name] = match.group(1).decode("utf-8", "backslashreplace")
    if "pp_size" not in found:
        flag = _FLAG_PP.search(head)
        if flag is not None:
            # The launch command: its stages run on --nnodes hosts, one (sglang's default)
            # when it does not say.
            found["pp_size"] = flag.group(1).decode()
            found["pp_size_from"] = "the launch command"
            nodes = _FLAG_NNODES.search(head)
            found.setdefault("nnodes", nodes.group(1).decode() if nodes is not None else "1")
    return found


#: Lines that begin a definition or an import: what Python source is made of. A traceback
#: shows such a line only as a frame's code, right after its 'File "...", line N' line.
_DEFINITION = re.compile(rb"^[ \t]*(?:def |class |import |from [\w.]+ import |@[\w.]+)")
_FRAME_LINE = re.compile(rb'^[ \t]*File "')
#: sglang's own line prefix at the start of a line: '[2026-12-03 14:56:07'.
_SGLANG_LINE = re.compile(rb"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", re.M)


def _source_code(head: bytes) -> bool:
    """Whether ``head`` is source code rather than a log: at least 10 of its lines, and a
    twentieth of them, define or import outside any traceback frame, and no line begins with
    sglang's prefix. torch's own source holds tracebacks, and 'Traceback (most recent call
    last)' in its docstrings and tests; a log holds such lines only as a frame's code."""
    if _SGLANG_LINE.search(head):
        return False
    definitions = lines = 0
    after_frame = False
    for line in head.splitlines():
        if not line.strip():
            continue
        lines += 1
        if _DEFINITION.match(line) and not after_frame:
            definitions += 1
        after_frame = _FRAME_LINE.match(line) is not None
    return definitions >= 10 and definitions * 20 >= lines


def _weak(text: str) -> bool:
    return any(marker in text for marker in _WEAK_TEXTS)


def _take_peeled(
    reader: _Reader,
    reading: LogReading,
    number: int,
    text: str,
    marked: bool,
    local_zone: LocalZone | None,
) -> None:
    """Feed the line(s) inside ``text``'s own envelope (told from this line alone: a store's
    row, a JSON record, a launcher's prefix) to ``reader``."""
    peeled = peel_envelope(text)
    inners = peeled.lines
    if any(ESCAPED in inner for inner in inners):
        inners = [part for inner in inners for part in (unescaped(inner) or [inner])]
    if any(_FLATTENED in inner for inner in inners):
        inners = [part for inner in inners for part in (unflatten(inner) or [inner])]
    several = len(inners) > 1 or peeled.decoded
    for inner in inners:
        line = peel(
            number,
            inner,
            peeled.time,
            peeled.time_text,
            peeled.stream,
            reading.launcher,
            reading.envelope is Envelope.TIMESTAMPS,
        )
        if local_zone is not None:
            line = in_zone(line, local_zone)
        if line.ranks:
            reading.pp_ranks.update(int(n) for n in _PP_RANK.findall(line.ranks))
        inner_marked = any(m in inner for m in _MARKER_TEXTS) if several else marked
        reader.take(line, inner_marked, _weak(line.text) or _weak(inner))


def read_log(
    source: LogSource, first_order: int = 0, local_zone: LocalZone | None = None
) -> LogReading:
    """Read ``source`` once: its envelope, launcher, failures and events.

    ``first_order`` numbers this log's records after those of the logs read before it, so that
    records without a time keep their place. ``local_zone``, when the user gives it, is the
    zone of sglang's own times, which the log does not say. Raises
    :class:`~ppaux.triage.sources.LogOpenError` when the log cannot be opened.
    """
    reading = LogReading(source.name)
    limits = source.limits
    opened = stream = open_log(source)
    unwrapped: Unwrapped | None = None
    backwards: Reversed | None = None
    try:
        head = stream.peek(_HEAD)[:_HEAD]  # type: ignore[attr-defined]
        if is_document(head):
            stream = records(opened, source.name, limits.max_log_document)
            head = stream.peek(_HEAD)[:_HEAD]  # type: ignore[attr-defined]
        mark = paste_mark(head)
        if mark is not None and (
            mark.depth or (wrap_width(head) is None and wrap_width(mark.peel_head(head)))
        ):  # a quote, or an indentation or numbers that hide a terminal's wrapping
            unmarked = Unmarked(stream, mark, limits.max_log_line)
            stream = cast(BinaryIO, io.BufferedReader(unmarked, buffer_size=1 << 20))
            head = stream.peek(_HEAD)[:_HEAD]  # type: ignore[attr-defined]
        width = None if _source_code(head) else wrap_width(head)
        if width is not None:
            unwrapped = Unwrapped(stream, width, limits.max_log_line)
            stream = cast(BinaryIO, io.BufferedReader(unwrapped, buffer_size=1 << 20))
            head = stream.peek(_HEAD)[:_HEAD]  # type: ignore[attr-defined]
        if newest_first(head):  # a store's export, its rows newest first
            backwards = oldest_first(stream, source.name, limits.max_log_document)
            stream = backwards.stream
            head = stream.peek(_HEAD)[:_HEAD]  # type: ignore[attr-defined]
        reading.empty = not head
        reading.envelope, reading.launcher = detect(head)
        reading.pp_ranks.update(int(n) for n in _PP_PREFIX.findall(head))
        reading.server_args = _server_args(head)
        detected = reading.envelope is not Envelope.PLAIN or reading.launcher is not Launcher.NONE
        source_code = reading.source_code = _source_code(head)
        reading.shaped = (detected or _LOG_SHAPE.search(head) is not None) and not source_code
        stamped = reading.envelope is Envelope.TIMESTAMPS
        scanner = Scanner(stream, max_line=limits.max_log_line)
        reader = _Reader(reading, first_order, limits)
        # Pieces of a line the collector split (CRI 'P', Docker's json-file), per stream.
        # Each with whether a marker is in it already, so a piece costs its own length only
        # (joined to max_log_line, further pieces are skipped, not copied again).
        pieces: dict[str | None, tuple[int, str, float | None, str | None, bool]] = {}
        while True:
            wanted = reader.count or pieces
            item = scanner.next_line() if wanted else scanner.next_marked_line()
            if item is None:
                break
            number, raw = item
            if backwards is not None:
                number = backwards.physical(number)
            if unwrapped is not None:
                number = unwrapped.physical(number)
            text, time, time_text, source_stream, partial = unwrap(raw, reading.envelope)
            marked = any(marker in raw for marker in MARKERS)
            if (
                reading.envelope in (Envelope.PLAIN, Envelope.TIMESTAMPS, Envelope.NUMBERED)
                and not partial
            ):
                _take_peeled(reader, reading, number, text, marked, local_zone)
                continue
            if partial or source_stream in pieces:
                first = pieces.pop(source_stream, None)
                if first is not None:
                    number, before, time, time_text, was_marked = first
                    if len(before) >= limits.max_log_line:
                        text, marked = before, was_marked
                    else:
                        seam = before[-_SEAM:] + text  # a marker split between two pieces
                        text = (before + text)[: limits.max_log_line]
                        marked = was_marked or any(m in seam for m in _MARKER_TEXTS)
                if partial:
                    pieces[source_stream] = (number, text, time, time_text, marked)
                    continue
            line = peel(number, text, time, time_text, source_stream, reading.launcher, stamped)
            if local_zone is not None:
                line = in_zone(line, local_zone)
            reader.take(line, marked, _weak(line.text) or _weak(text))
        reader.close_all()
        reading.lines = scanner.line - 1
        if backwards is not None:
            reading.lines = backwards.total
        if unwrapped is not None:
            reading.lines = unwrapped.physical(scanner.line) - 1
        reading.long_lines = scanner.long_lines
        ended = compression_cut(opened)
        if ended is not None:
            reading.cut_compression, reading.cut = ended
    finally:
        if source.stream is None:
            stream.close()
            opened.close()
    reading.failures.sort(key=lambda f: f.order)
    if (reading.failures or reading.events or reading.captures) and not source_code:
        reading.shaped = True
    return reading
