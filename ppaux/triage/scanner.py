"""One pass over a log, fast where nothing happens: the lines that matter, with their numbers.

A server log is mostly healthy lines ("Decode batch ..."); what triage needs is the few lines
around a failure. :class:`Scanner` reads the stream in chunks and jumps from one *marker* (a
byte string that only a failure, a timeout or a SIGQUIT line holds, :data:`MARKERS`) to the
next, counting newlines on the way so that every line keeps its number. From a marker on, the
caller reads lines one by one (:meth:`Scanner.next_line`) for as long as it needs (a
traceback), then jumps again (:meth:`Scanner.next_marked_line`).

Searching each chunk is the cost. The markers are looked for through as few *anchor* bytes as
cover them all, each rare in the chunk (found with ``memchr``, then the markers checked in
place; chosen again every 16 chunks); a marker none of whose bytes is rare there is searched for
whole. The line a chunk ends in is completed from the next chunk by itself, so no chunk is
copied. Memory is bounded: one chunk, plus at most ``Limits.max_log_line`` bytes of a line; a longer
line is cut to that and the rest skipped, except that a JSON record keeps its end (its last
lines, its time) beside its start, as one record.
"""

from __future__ import annotations

import heapq
import json
import re
from typing import BinaryIO

from ppaux.limits import Limits
from ppaux.patterns import lazy
from ppaux.triage.crashes import CRASH_MARKERS
from ppaux.triage.hangs import HANG_MARKERS

__all__ = [
    "ALL_MARKERS",
    "CHUNK",
    "ENCODED_MARKERS",
    "MARKERS",
    "WEAK_MARKERS",
    "Scanner",
]

#: What makes a line worth reading: a Python traceback (every failure sglang logs: 'Scheduler hit
#: an exception: Traceback ...'), torch's NCCL watchdog and its other records of a timed-out
#: collective ('[E... ProcessGroupNCCL.cpp:N] ... Timeout at NCCL work', '... timed out'),
#: TCPStore errors, the parent's two SIGQUIT lines (sglang's engine.py and
#: tokenizer_manager.py), ppaux capture's own lines, and a process's dying words without a
#: traceback (:mod:`ppaux.triage.crashes`).
MARKERS: tuple[bytes, ...] = (
    b"Traceback (m",
    b"Watchdog caught collective",
    b"ProcessGroupNCCL.cpp:",
    b"TCPStore",
    b"sigquit from a child",
    b"SIGQUIT received",
    b"ppaux capture:",
    b"NCCL WARN",
    b"::checkForNCCLErrors",
    b"undefined symbol",  # a record quoting an import that failed: a cut traceback's cause
    b"WorkNCCL::checkTimeout(",
    *CRASH_MARKERS,
    *HANG_MARKERS,  # sglang's watchdog's hang records, a py-spy dump of an sglang process
)
#: What may start a failure without a traceback's header: a frame line (a fragment whose
#: header the paste lost), a header cut short before ``Traceback (m``, and an exception line
#: (a one-line ``[prefix] SomeError: ...`` record, or a fragment's last line). Looked for as
#: markers are; a line holding one is read and judged by its shape.
WEAK_MARKERS: tuple[bytes, ...] = (
    b'File "',
    b'File \\"',  # inside a JSON record
    b"Error:",  # with a space or not (``RuntimeError:message``), or at the line's end
    b"Exception:",
    b"Error :",  # a space before the colon (``RuntimeError :message``)
    b"Exception :",
    b"Error(",  # a wrapper whose type names its cause (Ray's ``RayTaskError(OutOfMemoryError):``)
    b"] Sched",  # a header cut inside 'Scheduler hit an exception: Traceback (...'
    b"] Trac",  # a header cut inside 'Traceback (...' behind a damaged prefix
    b"Error executing method",  # a worker's line naming the method its traceback below ran
    b"Exception in thread",  # threading's line naming the thread whose traceback follows
    b"Cuda failure",  # the CUDA error torch gives below NCCL's record, after 'Last error:'
    b"OutOfResources:",  # Triton's kernel resource limit, a type ending in neither word
    # an exception's type alone at a line's end, raised without a message (a logger's one-line
    # ``ERROR ... AssertionError``)
    b"Error\n",
    b"Error\r\n",
)
#: journald ``-o json``'s message written as its bytes' numbers: its text is not in the raw
#: line, so such a line is read and judged once decoded.
ENCODED_MARKERS: tuple[bytes, ...] = (b'"MESSAGE": [', b'"MESSAGE":[')
#: Every byte string the scanner stops at.
ALL_MARKERS: tuple[bytes, ...] = MARKERS + WEAK_MARKERS + ENCODED_MARKERS

#: Bytes read at once.
CHUNK = 4 << 20
#: Bytes of a chunk looked at to choose each marker's rarest byte.
_SAMPLE = 16 << 10
#: Above this many expected candidates in a chunk, a marker is searched for whole instead.
_MAX_CANDIDATES = 64


def _plan(buffer: bytes, start: int) -> list[tuple[bytes, list[tuple[bytes, int]]]]:
    """How to search ``buffer``: (anchor, [(marker, anchor's offset in it)]) pairs, as few
    anchors as cover every marker with a byte rare in this chunk; an empty anchor, or the
    marker itself, means search its one marker whole (:func:`_whole`)."""
    sample = buffer[start : start + _SAMPLE]
    scale = max(1, (len(buffer) - start) // max(1, len(sample)))
    rare = {
        byte: count
        for byte in {b for marker in ALL_MARKERS for b in marker}
        if (count := sample.count(byte)) * scale <= _MAX_CANDIDATES
    }
    left = list(ALL_MARKERS)
    plan: list[tuple[bytes, list[tuple[bytes, int]]]] = []
    while left:
        best = min(
            rare,
            key=lambda byte: (-sum(byte in marker for marker in left), rare[byte], byte),
            default=None,
        )
        if best is None or not any(best in marker for marker in left):
            break
        anchor = bytes((best,))
        covered = [m for m in left if best in m]
        plan.append((anchor, [(m, m.index(anchor)) for m in covered]))
        left = [m for m in left if best not in m]
    # The markers no rare byte covers are searched for whole, each on its own: the next match of
    # each is remembered until the scan passes it, so a marker that is not in the chunk is looked
    # for once, not again after every line that holds another (a search for the first of several
    # at once scans to the chunk's end for each that is absent, every time).
    plan.extend((_whole(marker, sample), [(marker, 0)]) for marker in left)
    return plan


def _whole(marker: bytes, sample: bytes) -> bytes:
    """The anchor of a marker searched for whole: empty, for ``bytes.find``; or the marker
    itself, for a search by its first byte (:data:`_LITERALS`), where that byte is rarer in
    ``sample`` than its last (``bytes.find`` steps by its last byte: ``] Trac`` in healthy
    sglang lines, whose every ``]`` ends the prefix and ``c`` is in many words, is searched
    twice as fast by its first)."""
    return marker if sample.count(marker[:1]) < sample.count(marker[-1:]) else b""


#: A marker's search by its first byte (a regular expression of the marker alone: ``re``
#: looks for a literal's first byte, then compares the rest), one compiled per marker.
_LITERALS = {marker: lazy(re.escape(marker)) for marker in ALL_MARKERS}


#: Lines passed over that are kept before a marked line, for a fragment's context.
_CONTEXT_LINES = 6
#: Chunks read between two choices of anchors.
_REPLAN_EVERY = 16


def _first(buffer: bytes, start: int, anchor: bytes, markers: list[tuple[bytes, int]]) -> int:
    """The first position at or after ``start`` where one of ``markers`` begins, or -1."""
    if len(markers) == 1 and anchor == markers[0][0]:  # a marker searched for whole
        found = _LITERALS[anchor].search(buffer, start)
        return -1 if found is None else found.start()
    if not anchor:
        ((marker, _),) = markers
        return buffer.find(marker, start)
    at = buffer.find(anchor, start)
    while at >= 0:
        for marker, offset in markers:
            begin = at - offset
            if begin >= start and buffer.startswith(marker, begin):
                return begin
        at = buffer.find(anchor, at + 1)
    return -1


class Scanner:
    """Lines of a binary stream, read in one pass: every line, or only marked ones.

    ``line`` is the number (from 1) of the next line to be returned.
    """

    def __init__(
        self, stream: BinaryIO, chunk: int = CHUNK, max_line: int = Limits().max_log_line
    ) -> None:
        self._stream = stream
        self._chunk = chunk
        #: The longest line kept (``Limits.max_log_line``); the rest of a longer one is skipped
        #: (a hostile 1 GiB line costs no more memory than this).
        self.max_line = max_line
        self._buffer = b""
        self._pos = 0
        self._eof = False
        self.line = 1
        #: Lines longer than :attr:`max_line` seen (cut to that length), and the first's number.
        self.long_lines = 0
        self.first_long_line = 0
        self._last_long = 0
        self._plan: list[tuple[bytes, list[tuple[bytes, int]]]] | None = None
        #: (next match, anchor's index) of each anchor of the plan found in the buffer, nearest
        #: first; None until the buffer's first search (an anchor not found is not searched again
        #: in that buffer).
        self._ahead: list[tuple[int, int]] | None = None
        self._fills = 0
        #: The line that the last chunk cut in two, joined (without its newline), when it is
        #: still to be returned or counted.
        self._joint: bytes | None = None
        #: After :meth:`next_marked_line`: whether it passed lines over, and the last few of
        #: them that still stood in the buffer, oldest first (the line before a fragment's
        #: first frame may be that frame's lost source line; a pretty-printed JSON export puts
        #: a record's other members between them).
        self.passed = False
        self.previous: list[bytes] = []

    def _count_long(self, number: int | None = None) -> None:
        """Count the line ``number`` (the one being read by default) as longer than
        :attr:`max_line`, once."""
        number = self.line if number is None else number
        if number == self._last_long:
            return
        self._last_long = number
        self.long_lines += 1
        if not self.first_long_line:
            self.first_long_line = number

    def _pass_lines(self, end: int) -> None:
        """Pass the lines from the position to ``end`` (a line's start), counting the long ones:
        each step looks for a newline among the next :attr:`max_line` + 1 bytes, so a region
        costs a few steps per :attr:`max_line` bytes, searched in C."""
        buffer, start, limit = self._buffer, self._pos, self.max_line
        place = start
        while end - place > limit:
            newline = buffer.rfind(b"\n", place, place + limit + 1)
            if newline < 0:
                self._count_long(self.line + buffer.count(b"\n", start, place))
                newline = buffer.find(b"\n", place + limit, end)
                if newline < 0:
                    break
            place = newline + 1
        self.line += buffer.count(b"\n", start, end)
        self._pos = end

    def _fill(self) -> bool:
        """Read one more chunk; False at the end.

        The line the previous chunk ended in is completed from the new chunk into ``_joint``
        (one line's copy) instead of copying the whole chunk behind it.
        """
        if self._eof:
            return False
        data = self._stream.read(self._chunk)
        if not data:
            self._eof = True
            return False
        rest = self._buffer[self._pos :]
        self._fills += 1
        if self._fills % _REPLAN_EVERY == 1:
            self._plan = None  # the log may have changed its kind of content
        self._ahead = None
        newline = data.find(b"\n") if rest else -1
        if newline >= 0:
            joint = rest + data[:newline]
            if len(joint) > self.max_line:
                self._count_long()
                joint = self._cut(joint)
            self._joint = joint
            self._buffer = data
            self._pos = newline + 1
        else:
            self._buffer = rest + data if rest else data
            self._pos = 0
        return True

    def _take_joint(self) -> tuple[int, bytes]:
        joint = self._joint or b""
        self._joint = None
        number = self.line
        self.line += 1
        return number, joint

    def _find_marker(self) -> int:
        """Position of the first marker at or after ``_pos`` in the buffer, or -1.

        Each anchor's next match is remembered until the position passes it, so a chunk with
        many failures is still searched once per anchor; they are kept nearest first, so a call
        costs the anchors the position passed, not every anchor of the plan.
        """
        buffer = self._buffer
        start = self._pos
        if self._plan is None:
            self._plan = _plan(buffer, start)
            self._ahead = None
        plan, ahead = self._plan, self._ahead
        if ahead is None:
            found = ((_first(buffer, start, *step), index) for index, step in enumerate(plan))
            ahead = [(at, index) for at, index in found if at >= 0]
            heapq.heapify(ahead)
            self._ahead = ahead
        while ahead and ahead[0][0] < start:
            index = ahead[0][1]
            at = _first(buffer, start, *plan[index])
            if at >= 0:
                heapq.heapreplace(ahead, (at, index))
            else:
                heapq.heappop(ahead)
        return ahead[0][0] if ahead else -1

    def next_marked_line(self) -> tuple[int, bytes] | None:
        """The next line holding a marker, with its number; None at the end of the stream.
        :attr:`passed` and :attr:`previous` say what came between."""
        self.passed, self.previous = False, []
        while True:
            if self._joint is not None:
                if any(marker in self._joint for marker in ALL_MARKERS):
                    return self._take_joint()
                self._joint, self.passed, self.previous = None, True, []
                self.line += 1
            hit = self._find_marker()
            if hit >= 0:
                buffer = self._buffer
                begin = buffer.rfind(b"\n", self._pos, hit) + 1
                if begin <= 0:
                    begin = self._pos
                if begin > self._pos:
                    self.passed = True
                    self.previous = self._lines_before(begin)
                self._pass_lines(begin)
                return self.next_line()
            buffer = self._buffer
            last = buffer.rfind(b"\n", self._pos)
            if last >= 0:
                self.passed, self.previous = True, []
                self._pass_lines(last + 1)
            elif len(buffer) - self._pos > self.max_line:
                # One line longer than a chunk holds no newline yet: keep only what a marker
                # cut in two needs, so that memory stays bounded.
                keep = max(len(m) for m in ALL_MARKERS)
                self._pos = len(buffer) - keep
                self._count_long()
            if not self._fill():
                return None

    def _lines_before(self, begin: int) -> list[bytes]:
        """Up to :data:`_CONTEXT_LINES` lines of the buffer that end just before ``begin`` (a
        line's start) and begin at or after the position, oldest first; none past a line
        longer than :attr:`max_line`."""
        found: list[bytes] = []
        end = begin - 1
        while end >= self._pos and len(found) < _CONTEXT_LINES:
            start = max(self._buffer.rfind(b"\n", self._pos, end) + 1, self._pos)
            if end - start > self.max_line:
                break
            found.append(self._buffer[start:end])
            end = start - 1
        found.reverse()
        return found

    def next_line(self) -> tuple[int, bytes] | None:
        """The next line (without its newline, cut to :attr:`max_line` bytes) and its number;
        None at the end of the stream."""
        while True:
            if self._joint is not None:
                return self._take_joint()
            end = self._buffer.find(b"\n", self._pos)
            if end >= 0:
                if end - self._pos > self.max_line:
                    self._count_long()
                    line = self._cut(self._buffer[self._pos : end])
                else:
                    line = self._buffer[self._pos : end]
                self._pos = end + 1
                number = self.line
                self.line += 1
                return number, line
            if len(self._buffer) - self._pos > self.max_line:
                return self._long_line()
            if not self._fill():
                if self._pos < len(self._buffer):  # a last line without a newline
                    line = self._buffer[self._pos : self._pos + self.max_line]
                    self._pos = len(self._buffer)
                    number = self.line
                    self.line += 1
                    return number, line
                return None

    def _cut(self, line: bytes) -> bytes:
        """``line`` (longer than :attr:`max_line`) cut to that: a JSON record to its start and
        its end (:func:`_spliced`), any other line to its start."""
        if line[:2] != b'{"':
            return line[: self.max_line]
        return _spliced(line, line[-(_tail_size(self.max_line) + _TAIL_SLACK) :], self.max_line)

    def _long_line(self) -> tuple[int, bytes]:
        """A line longer than :attr:`max_line`: its head, the rest skipped up to its end (a
        JSON record's last bytes kept, see :func:`_spliced`)."""
        line = self._buffer[self._pos : self._pos + self.max_line]
        number = self.line
        self._count_long()
        self.line += 1
        self._pos += self.max_line
        record = line[:2] == b'{"'
        kept = _tail_size(self.max_line) + _TAIL_SLACK
        tail = line[-kept:]
        while True:
            end = self._buffer.find(b"\n", self._pos)
            stop = end if end >= 0 else len(self._buffer)
            if record:
                tail = (tail + self._buffer[max(self._pos, stop - kept) : stop])[-kept:]
            if end >= 0:
                self._pos = end + 1
                break
            self._pos = len(self._buffer)
            if not self._fill():
                break
        if record:
            return number, _spliced(line, tail, self.max_line)
        return number, line


#: Bytes looked through at a tail's start for a place outside any escape (a run of
#: backslashes, ``\\uXXXX``).
_TAIL_SLACK = 64


#: The halves of a character past U+FFFF as a JSON string writes it (``\\ud83d\\ude00``).
_HIGH_SURROGATE = lazy(rb"\\u[dD][89abAB][0-9a-fA-F]{2}")
_LOW_SURROGATE = lazy(rb"\\u[dD][c-fC-F][0-9a-fA-F]{2}")


def _tail_size(max_line: int) -> int:
    """Bytes of a long JSON record's end kept beside its start (a quarter of the line)."""
    return max_line // 4


def _escape_safe_head(head: bytes) -> bytes:
    """``head`` without an escape its cut left open (``\\`` then nothing, ``\\u00``), nor the
    first half of a pair of escapes its cut parted."""
    while True:
        shorter = _open_escape_cut(head)
        if shorter == head:
            return head
        head = shorter


def _open_escape_cut(head: bytes) -> bytes:
    start = head.rfind(b"\\", max(0, len(head) - 6))  # an escape is 6 bytes at most
    if start < 0:
        return head
    run = len(head[: start + 1]) - len(head[: start + 1].rstrip(b"\\"))
    if run % 2 == 0:
        return head  # the last backslash is the second of an escaped one
    need = 6 if head[start + 1 : start + 2] == b"u" else 2
    if len(head) - start < need or _HIGH_SURROGATE.fullmatch(head, start) is not None:
        return head[:start]  # cut in its escape, or the first half of a pair of them
    return head


def _spliced(head: bytes, tail: bytes, max_line: int) -> bytes:
    """A JSON record longer than ``max_line``: its start and its end (where its last lines, and
    the members after its message, its time and stream, stand), the middle left out.

    ``head`` is the record's first ``max_line`` bytes, ``tail`` its last bytes, up to
    :data:`_TAIL_SLACK` more than kept: the end kept starts at the first place no escape
    spans. Cut inside one string, the two parts make one record still; when they do not (the
    middle left out spans members), the start alone is kept."""
    keep = _tail_size(max_line)
    start = _escape_safe_head(head[: max_line - keep])
    first = len(tail) - keep
    places = [
        place
        for place in range(max(first, 6), min(len(tail), first + _TAIL_SLACK))
        # No escape spans a place 6 bytes past any backslash (``\\uXXXX`` is the longest),
        # nor a backslash that follows no backslash: it opens one.
        if b"\\" not in tail[place - 6 : place] or (tail[place] == 0x5C and tail[place - 1] != 0x5C)
    ][:1] or [first, first + 1]  # in a run of backslashes, only the whole record tells
    for place in places:
        if _LOW_SURROGATE.match(tail, place) is not None:
            place += 6  # the second half of a pair: the first is left out
        spliced = start + tail[place:]
        try:
            json.loads(spliced)
        except (ValueError, RecursionError):
            continue  # the middle left out was not inside one string
        return spliced
    return head[:max_line]
