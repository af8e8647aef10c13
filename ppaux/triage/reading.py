"""Reading one log in one pass: its failures and events, bounded, whatever the log holds.

The log's layers are taken off first, each told from its head: a JSON document read as
records, a paste's quote marks or indentation, a terminal's wrapping, an export written newest
first. The scanner then jumps from marker to marker (:mod:`ppaux.triage.scanner`); from a
traceback's first line on, lines are read one by one, their envelope peeled, and fed to the
open tracebacks of their stream (:mod:`ppaux.triage.feeding`) until every one has ended, then
the scanner jumps again.
"""

from __future__ import annotations

import functools
import io
import re
from typing import BinaryIO, cast

from ppaux.limits import Limits
from ppaux.patterns import lazy
from ppaux.triage.crashlines import cuda_words_said
from ppaux.triage.csvrows import TableRows, csv_table
from ppaux.triage.documents import is_document, records
from ppaux.triage.envelopes import peel_envelope
from ppaux.triage.feeding import PP_RANK, Reader
from ppaux.triage.flattened import split_lines
from ppaux.triage.glued import unglued
from ppaux.triage.handledchains import chained_above, join_chains
from ppaux.triage.heldpieces import HeldPieces
from ppaux.triage.jsonrecords import nested_record
from ppaux.triage.lineformat import LogLine, in_zone, peel, unwrap
from ppaux.triage.lineshapes import Envelope
from ppaux.triage.logreading import LogReading
from ppaux.triage.newest import Reversed, newest_first, oldest_first
from ppaux.triage.passedcauses import MAX_CAUSES, attach_causes, passed_cause, spoken_above
from ppaux.triage.pastemarks import Unmarked, paste_mark
from ppaux.triage.peeled import Peeled
from ppaux.triage.scanner import ALL_MARKERS, MARKERS, WEAK_MARKERS, Scanner
from ppaux.triage.sources import LogSource, compression_cut, compression_of, open_log
from ppaux.triage.survey import source_code, survey
from ppaux.triage.wrapping import Unwrapped, wrap_width
from ppaux.triage.zones import LocalZone

__all__ = ["LogReading", "read_log"]

_MARKER_TEXTS = tuple(marker.decode() for marker in MARKERS)
#: One search for any marker in a raw line, or in a piece of one (a C loop, not one ``in`` per
#: marker: a log of tracebacks asks it of every line).
_ANY_MARKER = re.compile(b"|".join(re.escape(marker) for marker in MARKERS))
_ANY_MARKER_TEXT = re.compile("|".join(re.escape(marker) for marker in _MARKER_TEXTS))
_WEAK_TEXTS = tuple(marker.decode() for marker in WEAK_MARKERS if not marker.endswith(b"\n"))
_ANY_WEAK = re.compile("|".join(re.escape(marker) for marker in _WEAK_TEXTS))
#: A weak marker that ends a line: an exception's type alone.
_WEAK_ENDS = tuple(m.decode().rstrip("\r\n") for m in WEAK_MARKERS if m.endswith(b"\n"))
#: Characters of a piece's end that a marker split between two pieces can start in.
_SEAM = max(len(marker) for marker in ALL_MARKERS) - 1
#: Bytes looked at to tell a log's envelope and launcher.
_HEAD = 64 << 10
#: A runtime's ``P`` piece inside a collector's record, looked for before the record is read.
_INNER_PIECE = lazy(rb"\d(?:Z|[+-]\d\d:?\d\d) std(?:out|err) P ")

#: Events told by a few words only (sglang's SIGQUIT lines, ppaux capture's own): in a log they
#: stand behind sglang's prefix, which makes the log shaped; a file that holds the words in prose
#: (a README's table, a note) and no line of a log's shape is no log.
_WORDS_ONLY = frozenset({"sigquit", "capture"})


#: An exception line's start (``RuntimeError: ``), of a line a carriage return split.
_RAISED_LINE = lazy(r"^\s{0,16}[A-Za-z_][\w.]{0,200}(?:Error|Exception)\b:")


def _shown(text: str) -> list[str]:
    """What a terminal showed of ``text``: the text its last carriage return overwrote, then
    the text after it (a progress bar's updates and the line that ended them are one line in a
    file; a message a carriage return cut is kept whole before what overwrote it; an exception
    line that a longer one overwrote is hidden, the later one alone). ``[text]``
    for a line without one inside (a carriage return that ends it, CRLF's, is none)."""
    body = text.rstrip("\r")
    last = body.rfind("\r")
    if last < 0:
        return [text]
    before = body[body.rfind("\r", 0, last) + 1 : last]
    after = body[last + 1 :]
    if _RAISED_LINE.match(before) and _RAISED_LINE.match(after) and len(after) >= len(before):
        return [after]  # an exception line printed over another: the terminal shows the later
    return [before, after] if before.strip() else [after]


def _unnested(text: str) -> list[str]:
    """The line(s) of the record ``text`` holds whole (Docker's json-file line inside
    another collector's envelope), else ``[text]``."""
    nested = nested_record(text) if text[:2] == '{"' else None
    return [text] if nested is None else nested.lines


def _weak(text: str) -> bool:
    return _ANY_WEAK.search(text) is not None or text.rstrip().endswith(_WEAK_ENDS)


def _passed_line(reading: LogReading, raws: list[bytes]) -> LogLine | None:
    """The last line of the log among ``raws`` (lines the scanner passed over just before a
    marked one, oldest first; a JSON export's brackets and other members are no line of the
    log), peeled as far as a fragment's context needs (its stream, ranks and text); None
    when there is none, or it is not one line."""
    for raw in reversed(raws):
        if not raw.strip():
            continue  # a blank line (a double-spaced paste's) stands between no two records
        text, time, time_text, stream, partial = unwrap(raw, reading.envelope)
        wall, mild = None, False
        if partial or "\n" in text:
            return None
        if reading.envelope in (Envelope.PLAIN, Envelope.TIMESTAMPS, Envelope.NUMBERED):
            peeled = peel_envelope(text, reading.stamped)
            if not peeled.lines and not peeled.decoded:
                continue  # a JSON export's structure
            if len(peeled.lines) != 1 or peeled.decoded:
                return None
            text, time, time_text, stream, wall = (
                peeled.lines[0],
                peeled.time,
                peeled.time_text,
                peeled.stream,
                _wall(reading, peeled.wall_text),
            )
            mild = peeled.mild  # a level of no failure: the record's words are no failure's
        stamped = reading.envelope is Envelope.TIMESTAMPS
        return peel(0, text, time, time_text, stream, reading.launcher, stamped, wall, mild=mild)
    return None


def _open_pieces(reading: LogReading, raws: list[bytes]) -> list[tuple[int, bytes]]:
    """The pieces of a split line (a collector's ``P`` pieces) that end ``raws``, the lines the
    scanner passed over just before a marked one, oldest first, each with how many lines
    before the marked one it stands: a marker split between them and the line that ends them
    is found only once they are joined (in a log of lines: a runtime's, inside a record)."""
    cri = reading.envelope in (Envelope.CRI, Envelope.DOCKER_JSON)
    if not cri and reading.envelope is not Envelope.PLAIN:
        return []
    pieces: list[tuple[int, bytes]] = []
    for back, raw in enumerate(reversed(raws), start=1):
        if cri and not unwrap(raw, reading.envelope)[4]:
            break
        if not cri and not (
            _INNER_PIECE.search(raw) and peel_envelope(raw.decode("utf-8", "replace")).partial
        ):
            break
        pieces.append((back, raw))
    pieces.reverse()
    return pieces


def _take_peeled(
    reader: Reader,
    reading: LogReading,
    number: int,
    text: str,
    marked: bool,
    local_zone: LocalZone | None,
    held: HeldPieces,
) -> None:
    """Feed the line(s) inside ``text``'s own envelope (told from this line alone: a store's
    row, a JSON record, a launcher's prefix) to ``reader``, a runtime's split line in it joined
    (``held``)."""
    peeled = peel_envelope(text, reading.stamped)
    if not peeled.cri and not held:
        _feed_peeled(reader, reading, number, peeled, marked, local_zone)
        return
    for at, record in held.take(number, peeled):
        _feed_peeled(reader, reading, at, record, None, local_zone)


def _feed_peeled(
    reader: Reader,
    reading: LogReading,
    number: int,
    peeled: Peeled,
    marked: bool | None,
    local_zone: LocalZone | None,
) -> None:
    """Feed the line(s) of ``peeled`` (``marked``: whether a marker is in them, None where
    each line's own text says) to ``reader``."""
    inners = [part for inner in peeled.lines for part in split_lines(inner)]
    several = len(inners) > 1 or peeled.decoded or marked is None
    for inner in inners:
        line = peel(
            number,
            inner,
            peeled.time,
            peeled.time_text,
            peeled.stream,
            reading.launcher,
            reading.envelope is Envelope.TIMESTAMPS,
            _wall(reading, peeled.wall_text),
            peeled.severe,
            peeled.mild,
        )
        if local_zone is not None:
            line = in_zone(line, local_zone)
        if line.ranks:
            reading.pp_ranks.update(int(n) for n in PP_RANK.findall(line.ranks))
        inner_marked = _ANY_MARKER_TEXT.search(inner) is not None if several else bool(marked)
        _take_unglued(reader, line, inner_marked, _weak(line.text) or _weak(inner))


def _wall(reading: LogReading, wall: str | None) -> str | None:
    """A row's time without a zone, used where the log holds no sglang line of its own: a
    table's or a logger's clock is never mixed with sglang's (the browser's zone of a Grafana
    table is not the host's)."""
    return None if reading.sglang_seen else wall


def _take_unglued(reader: Reader, line: LogLine, marked: bool, weak: bool) -> None:
    """Feed ``line`` to ``reader``, a record glued after other text in it as a line of its
    own (:mod:`ppaux.triage.glued`)."""
    parts = unglued(line)
    for part in parts:
        if len(parts) > 1:
            marked = _ANY_MARKER_TEXT.search(part.text) is not None
            weak = _weak(part.text)
        reader.take(part, marked, weak)


class _Renumbering:
    """The layers taken off a log that number its lines otherwise than the file does (a
    terminal's wrapping joined, an export read oldest first)."""

    __slots__ = ("backwards", "unwrapped")

    def __init__(self) -> None:
        self.unwrapped: Unwrapped | None = None
        self.backwards: Reversed | None = None

    def physical(self, number: int) -> int:
        """The file's line number of the line read as ``number``."""
        if self.backwards is not None:
            number = self.backwards.physical(number)
        if self.unwrapped is not None:
            number = self.unwrapped.physical(number)
        return number


def _peek(stream: BinaryIO) -> bytes:
    return cast(bytes, stream.peek(_HEAD)[:_HEAD])  # type: ignore[attr-defined]


def _layered(
    opened: BinaryIO, source: LogSource, renumbering: _Renumbering
) -> tuple[BinaryIO, bytes]:
    """The stream of ``opened``'s lines with its layers taken off (a JSON document's records,
    a table's message column, a paste's marks, a terminal's wrapping, newest-first rows), and
    its head."""
    limits = source.limits
    stream = opened
    head = _peek(stream)
    if is_document(head):
        stream = records(opened, source.name, limits.max_log_document)
        head = _peek(stream)
    table = csv_table(head)
    if table is not None:  # a table download: its message column, beside its time
        rows = TableRows(stream, table, limits.max_log_line)
        stream = cast(BinaryIO, io.BufferedReader(rows, buffer_size=1 << 20))
        head = _peek(stream)
    mark = paste_mark(head)
    if mark is not None and (
        mark.depth or mark.indent or (wrap_width(head) is None and wrap_width(mark.peel_head(head)))
    ):  # a quote, an indentation, or numbers that hide a terminal's wrapping
        unmarked = Unmarked(stream, mark, limits.max_log_line)
        stream = cast(BinaryIO, io.BufferedReader(unmarked, buffer_size=1 << 20))
        head = _peek(stream)
    width = None if source_code(head) else wrap_width(head)
    if width is not None:
        renumbering.unwrapped = Unwrapped(stream, width, limits.max_log_line)
        stream = cast(BinaryIO, io.BufferedReader(renumbering.unwrapped, buffer_size=1 << 20))
        head = _peek(stream)
    if newest_first(head):  # a store's export, its rows newest first
        renumbering.backwards = oldest_first(stream, source.name, limits.max_log_document)
        stream = renumbering.backwards.stream
        head = _peek(stream)
    return stream, head


#: A piece of a line a collector split (CRI 'P', Docker's json-file): its number, text, time,
#: time as written, and whether a marker is in it already.
_Piece = tuple[int, str, float | None, str | None, bool]


class _Lines:
    """Feeds a log's lines, as the scanner gives them, to its reader."""

    def __init__(
        self, reading: LogReading, reader: Reader, limits: Limits, local_zone: LocalZone | None
    ) -> None:
        self.reading = reading
        self.reader = reader
        self.max_line = limits.max_log_line
        self.local_zone = local_zone
        #: Pieces of a line the collector split, per stream. Each with whether a marker is in
        #: it already, so a piece costs its own length only (joined to max_log_line, further
        #: pieces are skipped, not copied again).
        self.pieces: dict[str | None, _Piece] = {}
        #: Pieces of a runtime's line inside a collector's records, in a log of lines.
        self.held = HeldPieces(self.max_line)

    def take(self, number: int, raw: bytes) -> None:
        reading = self.reading
        text, time, time_text, source_stream, partial = unwrap(raw, reading.envelope)
        marked = _ANY_MARKER.search(raw) is not None
        if (
            reading.envelope in (Envelope.PLAIN, Envelope.TIMESTAMPS, Envelope.NUMBERED)
            and not partial
        ):
            overwritten = _shown(text)
            for piece in overwritten:
                if len(overwritten) > 1:
                    marked = _ANY_MARKER_TEXT.search(piece) is not None
                _take_peeled(
                    self.reader, reading, number, piece, marked, self.local_zone, self.held
                )
            return
        if partial or source_stream in self.pieces:
            first = self.pieces.pop(source_stream, None)
            if first is not None:
                number, before, time, time_text, was_marked = first
                if len(before) >= self.max_line:
                    text, marked = before, was_marked
                else:
                    seam = before[-_SEAM:] + text  # a marker split between two pieces
                    text = (before + text)[: self.max_line]
                    marked = was_marked or _ANY_MARKER_TEXT.search(seam) is not None
            if partial:
                self.pieces[source_stream] = (number, text, time, time_text, marked)
                return
        self._record(number, text, time, time_text, source_stream, marked)

    def _record(
        self,
        number: int,
        text: str,
        time: float | None,
        time_text: str | None,
        source_stream: str | None,
        marked: bool,
    ) -> None:
        """Feed a collector's whole record: a record holding several lines (a collector that
        kept a write whole) gives each; a traceback flattened inside it is split back too."""
        reading = self.reading
        lines = text.split("\n") if "\n" in text else [text]
        parts = [part for piece in lines for seen in _shown(piece) for part in split_lines(seen)]
        parts = [inner for part in parts for inner in _unnested(part)]
        stamped = reading.envelope is Envelope.TIMESTAMPS
        for part in parts:
            line = peel(number, part, time, time_text, source_stream, reading.launcher, stamped)
            if self.local_zone is not None:
                line = in_zone(line, self.local_zone)
            if len(parts) > 1:
                marked = _ANY_MARKER_TEXT.search(part) is not None
            _take_unglued(self.reader, line, marked, _weak(line.text) or _weak(part))


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
    renumbering = _Renumbering()
    try:
        stream, head = _layered(opened, source, renumbering)
        survey(reading, head)
        scanner = Scanner(stream, max_line=limits.max_log_line)
        reader = Reader(reading, first_order, limits)
        lines = _Lines(reading, reader, limits, local_zone)
        while True:
            wanted = reader.count or lines.pieces or lines.held
            item = scanner.next_line() if wanted else scanner.next_marked_line()
            if item is None:
                break
            number, raw = item
            if not wanted and scanner.passed:
                reader.remember(functools.partial(_passed_line, reading, scanner.previous))
                for back, piece in _open_pieces(reading, scanner.previous):
                    lines.take(renumbering.physical(number - back), piece)
                if spoken_above(raw, scanner.previous) and len(reading.spoken) < MAX_CAUSES:
                    reading.spoken.append(renumbering.physical(number))
                if chained_above(raw, scanner.previous) and len(reading.chained) < MAX_CAUSES:
                    reading.chained.append(renumbering.physical(number))
                cause = passed_cause(raw, scanner.previous)
                if cause is not None and len(reading.causes) < MAX_CAUSES:
                    back, name, said = cause
                    at = renumbering.physical(number)
                    reading.causes.append((at, renumbering.physical(number - back), name, said))
            lines.take(renumbering.physical(number), raw)
        for at, held in lines.held.rest():  # what is still held at the log's end, as it stands
            _feed_peeled(reader, reading, at, held, None, local_zone)
        reader.close_all()
        _count(reading, scanner, renumbering)
        reading.compression = compression_of(opened)
        ended = compression_cut(opened)
        if ended is not None:
            reading.cut_compression, reading.cut = ended
    finally:
        if source.stream is None:
            stream.close()
            opened.close()
    reading.failures.sort(key=lambda f: f.order)
    reading.failures = cuda_words_said(join_chains(reading.failures, reading.chained))
    attach_causes(reading.source, reading.failures, reading.causes, reading.spoken)
    if (
        reading.failures
        or reading.captures
        or any(e.kind not in _WORDS_ONLY for e in reading.events)
    ) and not reading.source_code:
        reading.shaped = True
    return reading


def _count(reading: LogReading, scanner: Scanner, renumbering: _Renumbering) -> None:
    """The log's lines, and its long ones, counted in the file's own numbers."""
    backwards, unwrapped = renumbering.backwards, renumbering.unwrapped
    past = scanner.line if backwards is None else backwards.total + 1
    reading.lines = past - 1 if unwrapped is None else unwrapped.physical(past) - 1
    reading.long_lines = scanner.long_lines
    if scanner.first_long_line:
        long_at = scanner.first_long_line
        if backwards is not None:
            long_at = backwards.physical(long_at)
        reading.first_long_line = long_at if unwrapped is None else unwrapped.physical(long_at)
