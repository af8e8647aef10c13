"""What the log's reader (:class:`~ppaux.triage.feeding.Reader`) makes of a line that no
open traceback takes, and of a line that holds a marker: a fragment whose header is lost, a
one-line record of a failure, a note of the exception before it, an exit code, the leads a
tool ppaux does not know put before a traceback's header, and the tracebacks and records a
marker starts. Also the tracebacks still open in one stream (:class:`OpenStream`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from ppaux.patterns import lazy
from ppaux.triage.buildsteps import quoted_symbol
from ppaux.triage.crashes import Crashes, rank_within
from ppaux.triage.deaths import worker_died
from ppaux.triage.faultframes import current_frame
from ppaux.triage.flattened import outside_quotes
from ppaux.triage.groups import GROUP_HEADER, unmargined
from ppaux.triage.hangs import pyspy_process
from ppaux.triage.leads import named
from ppaux.triage.lineformat import LogLine, torch_rank
from ppaux.triage.loggedabove import said_above
from ppaux.triage.logreading import (
    LogReading,
    check_frames_only,
    event_kind,
    nccl_process,
    timeout_frame,
    watchdog_tagged,
)
from ppaux.triage.methods import WorkerMethods, thread_said
from ppaux.triage.ncclcuda import last_error, nccl_error_name
from ppaux.triage.records import (
    Event,
    Failure,
    failure_start,
    method_said,
    process_of,
)
from ppaux.triage.runtimedeaths import exit_code_after
from ppaux.triage.tracebacks import TracebackBuilder
from ppaux.triage.tracelines import (
    MAX_MESSAGE,
    cut_header,
    is_frame,
    lost_source,
    raised,
    wrapped,
)

__all__ = ["LooseLines", "OpenStream"]

#: The start of a traceback's first line.
_HEADER = "Traceback (most recent call last):"
#: Characters of a capture line read (its directory is a path: far shorter).
_CAPTURE_LINE = 8192
#: The capture's start line; its mode (``(when=error, strict)``) ends the line, so a directory
#: whose name holds `` (when=`` is read whole.
_CAPTURE_DIR = lazy(
    r"ppaux capture: capturing .*? into (?P<dir>.+) \(when=(?P<how>\w{1,16}(?:, strict)?)\)\s*$"
)

#: torch.fx's words before the frames of the model code a failed graph node came from: notes
#: of the exception printed just before them.
_ORIGINAL = "Original traceback:"
#: Lines a note's next frame comes within (its source line and the caret line between).
_NOTE_LINES = 3


def _same_ranks(one: str | None, other: str | None) -> bool:
    """True unless both lines name ranks and the ranks differ (a traceback's lines after its
    header often name none)."""
    return one is None or other is None or one == other


class OpenStream:
    """The tracebacks still open in one stream, in the order they began, and how many sglang
    lines the stream has had (what a traceback waiting for its exception counts as foreign)."""

    __slots__ = ("builders", "sglang_lines")

    def __init__(self) -> None:
        self.builders: dict[int, TracebackBuilder] = {}
        self.sglang_lines = 0


class LooseLines:
    """The reader's steps for the lines outside its open tracebacks (see the module's
    docstring). The state they share is the reader's, made by ``Reader.__init__``."""

    reading: LogReading
    count: int
    max_failures: int
    max_events: int
    crashes: Crashes
    _streams: dict[str | None, OpenStream]
    _cut_headers: dict[str | None, LogLine]
    _wrappers: dict[str | None, tuple[LogLine, Failure]]
    _noted: dict[str | None, tuple[int, str | None]]
    _leads: dict[str | None, list[str]]
    _lead_names: dict[str | None, dict[str, str | None]]
    _origins: dict[str | None, str | None]
    _before: LogLine | Callable[[], LogLine | None] | None
    _methods: WorkerMethods

    if TYPE_CHECKING:  # the reader's own steps

        def _next_order(self) -> int: ...

        def _add(self, builder: TracebackBuilder) -> None: ...

    def _weak(self, line: LogLine) -> None:
        """A frame line no open traceback took (a fragment whose header is lost), or an
        exception line outside any traceback: a one-line ``[prefix] SomeError: ...`` record
        (that rank's failure), or the last line of a fragment whose frames the log lost."""
        stream = self._streams.get(line.stream)
        if stream is not None and stream.builders:
            return
        reading = self.reading
        text = line.text
        inside = unmargined(text)  # a line of an exception group's traceback
        if inside is not None:
            text = inside[1]
        before = self._before() if callable(self._before) else self._before
        if current_frame(reading.failures, line, before):
            return  # where the fault handler's process died
        fragment = is_frame(text)
        shaped = None if fragment else raised(text)
        if not fragment and shaped is None:
            if line.ranks and cut_header(text):
                self._cut_headers[line.stream] = line
            elif reading.failures:
                # the CUDA error below NCCL's one-line record: the rest of its message
                last_error(reading.failures[-1], line, text)
            return
        first = line
        header = self._cut_headers.pop(line.stream, None)
        if header is not None and fragment and line.number - header.number <= 1:
            line = header  # the failure starts at its cut header: its ranks, time and place
        wrapper = self._wrappers.pop(line.stream, None)
        if wrapper is not None and fragment and first.number - wrapper[0].number <= 1:
            # The wrapper's line heads the remote traceback that follows: one failure, read
            # from that traceback, at the wrapper's line.
            self._drop(wrapper[1])
            line = wrapper[0]
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
            before = self._before() if callable(self._before) else self._before
            if self._a_note(first, before):
                return
            if before is not None and (before.stream, before.ranks) == (first.stream, first.ranks):
                failure.context = lost_source(before.text)
                # a worker's line naming the method it ran stands just before the frames too
                failure.method = method_said(before.text)
            # or a few lines above, other lines between them (spent either way)
            failure.method = self._methods.take(first, failure.method)
            builder = TracebackBuilder(failure, group=inside is not None)
            builder.feed(first, False)
            self._add(builder)
            return
        assert shaped is not None
        previous = reading.failures[-1] if reading.failures else None
        if previous is not None and nccl_error_name(previous, line.number, line.stream, shaped[0]):
            previous.message = f"{previous.message}\n{text}"[:MAX_MESSAGE]
            return
        failure.exception, failure.message = shaped
        reading.failures.append(failure)
        if wrapped(text):
            self._wrappers[line.stream] = (line, failure)

    def _said_before(self, number: int, failure: Failure) -> Failure | None:
        """The one-line record on the line just before a traceback's header at ``number``, of
        the same process, that the header's failure is (vLLM's engine logs ``repr(e)`` and then
        its traceback); None where there is none."""
        failures = self.reading.failures
        said = failures[-1] if failures else None
        if said is None or said.line != number - 1 or not said.fragment or said.frames:
            return None
        if (said.stream, said.ranks) != (failure.stream, failure.ranks) or said.chain:
            return None
        return said if said.exception is not None else None

    def _exit_code(self, line: LogLine) -> bool:
        """Join sglang's ``Exit code: N`` to the dead scheduler's record just before it."""
        events = self.reading.events
        last = events[-1] if events else None
        if last is None or last.kind != "death":
            return False
        joined = exit_code_after(last.text, last.line, line.text, line.number)
        if joined is not None:
            events[-1] = dataclasses.replace(last, text=joined)
        return joined is not None

    def _drop(self, failure: Failure) -> None:
        """Take ``failure`` (the last of its stream's one-line records) out of the log's."""
        failures = self.reading.failures
        for index in range(len(failures) - 1, -1, -1):
            if failures[index] is failure:
                del failures[index]
                return

    def _a_note(self, line: LogLine, before: LogLine | None) -> bool:
        """True for a frame ``line`` that notes where the exception before it came from, not a
        failure of its own: torch.fx's ``Original traceback:`` on a line of its own, right
        after a failure of the same process (its exception, ``While executing``), and the
        frames that follow it, each within :data:`_NOTE_LINES` of the last. Another rank's
        frame is never the note of this one's."""
        last = self._noted.get(line.stream)
        if last is not None and 0 < line.number - last[0] <= _NOTE_LINES:
            if _same_ranks(last[1], line.ranks):
                self._noted[line.stream] = (line.number, last[1] or line.ranks)
                return True
        if before is None or before.stream != line.stream or before.text.strip() != _ORIGINAL:
            return False
        if not _same_ranks(before.ranks, line.ranks) or not self._noted_failure(before):
            return False
        self._noted[line.stream] = (line.number, before.ranks or line.ranks)
        return True

    def _noted_failure(self, original: LogLine) -> bool:
        """True where the last failure read is the one torch.fx's ``Original traceback:``
        line ``original`` notes: a failure of the same process, its exception read."""
        failures = self.reading.failures
        if not failures or failures[-1].exception is None:
            return False
        failure = failures[-1]
        return _same_ranks(failure.ranks, original.ranks)

    def _learn(self, line: LogLine) -> str | None:
        """Keep what stands before ``line``'s traceback header and no known layer took off:
        the text before sglang's prefix, or, on a line without one, before 'Traceback'. The
        stream the traceback belongs to: the line's, or, behind a lead that names another
        process than the first lead of its stream did, that process's own."""
        origin = self._origins.get(line.stream, line.stream)
        lead = line.lead
        if not lead and line.ranks is None:
            header = line.text.find(GROUP_HEADER)
            if header >= 0:  # a group's header stands behind its margin's '+'
                lead = line.text[:header].rstrip(" ").removesuffix("+").rstrip(" ")
            else:
                lead = line.text[: line.text.find(_HEADER)]
        if not lead.strip() or not lead.replace("\t", " ").isprintable():  # a tab: columns
            self._leads.pop(origin, None)
            return line.stream
        name = named(lead)
        others = [kept for kept in self._leads.get(origin, ()) if named(kept) != name]
        self._leads[origin] = [*others[-(_MAX_LEADS - 1) :], lead]
        # sglang's ranks name the header's process; its traceback's lines, which carry none,
        # go where the lead sends them: each process behind a lead of its own (``parallel
        # --tag``'s ``node1<tab>``, ``1 :``) has a stream of its own.
        return self._route(origin, name, True)

    def _route(self, stream: str | None, name: str, new: bool) -> str | None:
        """The stream of a line of ``stream`` behind a lead that names ``name``: the first
        name's lines stay in ``stream``, each other name's go to a stream of its own (made
        when ``new``: at a traceback's header); a name not seen at a header stays too."""
        origin = self._origins.get(stream, stream)
        names = self._lead_names.setdefault(origin, {})
        if new and name not in names and len(names) < _MAX_LEAD_NAMES:
            names[name] = origin if not names else (name or origin)
            self._origins[names[name]] = origin
        return names.get(name, origin)

    def _checked(self, line: LogLine, names: Callable[[Failure], bool] | None = None) -> bool:
        """True where a failure of ``line``'s stream, open or the log's last, says the
        watchdog's check for NCCL errors raised it (``names``: or its check of a time-out;
        its C++ frames follow its record: one failure, not a second)."""
        names = names or _names_check
        stream = self._streams.get(line.stream)
        if stream is not None and any(names(b.failure) for b in stream.builders.values()):
            return True
        failures = self.reading.failures
        return bool(failures) and failures[-1].stream == line.stream and names(failures[-1])

    def _wrapped_watchdog(self, line: LogLine) -> LogLine:
        """``line`` with the tag on the line before it put back where it is the watchdog's
        words alone, its record wrapped over lines (:func:`watchdog_tagged`)."""
        if "Watchdog caught" not in line.text:
            return line
        before = self._before() if callable(self._before) else self._before
        if before is None or before.stream != line.stream:
            return line
        joined = watchdog_tagged(line.text, before.text)
        return line if joined is None else dataclasses.replace(line, text=joined)

    def _named_above(self, failure: Failure, line: LogLine) -> None:
        """Give ``failure`` (its header at ``line``) the method and the thread a worker's or
        ``threading``'s line names just above it, or a few lines above in its stream, other
        lines between them (spent either way)."""
        if failure.method is None:
            before = self._before() if callable(self._before) else self._before
            if before is not None and before.stream == line.stream:
                failure.method = method_said(before.text)
                failure.thread = thread_said(before.text)
        failure.method = self._methods.take(line, failure.method)
        failure.thread = self._methods.thread(line, failure.thread)

    def _marked(self, line: LogLine) -> bool:
        """Read ``line``, which holds a marker, as a traceback's start or a record of the
        marker's kind; False where it is neither."""
        reading = self.reading
        line = self._wrapped_watchdog(line)
        # A marker inside a string literal the line echoes (a request's text, an output) is
        # text someone sent: the line's own shapes are read outside its literals only.
        plain = outside_quotes(line.text)
        shown = line if plain == line.text else dataclasses.replace(line, text=plain)
        order = self._next_order()
        failure = failure_start(shown, reading.source, order)
        if failure is not None and shown is not line:
            failure = failure_start(line, reading.source, order) or failure
        if failure is not None:
            self._named_above(failure, line)
            failure.stream = self._learn(line)
            if len(reading.failures) + self.count >= self.max_failures:
                reading.more_failures += 1
                return True
            builder = TracebackBuilder(failure, group=GROUP_HEADER in line.text)
            said = self._said_before(line.number, failure)
            if said is not None:  # one failure: the record is the traceback's first line
                self._drop(said)
                builder.said_before(said.exception or "", said.message)
                failure.line, failure.time, failure.time_text = said.line, said.time, said.time_text
            else:
                before = self._before() if callable(self._before) else self._before
                said_above(failure, before, line)
            self._add(builder)
            return True
        # an import's failure a record quotes: the quoted library is the record's words
        kind = event_kind(plain) or ("import-warn" if quoted_symbol(line.text) else None)
        crash = self.crashes.take(shown) if kind in (None, "nccl-warn") else None
        if crash is not None:  # of NCCL's warnings, one of a CUDA call the host failed
            if len(reading.failures) + self.count >= self.max_failures:
                reading.more_failures += 1
            else:
                reading.failures.append(crash)
            return True
        if kind is None:
            return self._exit_code(line)
        if kind == "watchdog" and check_frames_only(plain) and self._checked(line):
            return True  # the C++ frames of an NCCL error this log's record already holds
        if kind == "watchdog" and timeout_frame(plain) and self._checked(line, _names_timeout):
            return True  # the C++ frames of a timeout this log's record already holds
        if kind == "capture":
            found = _CAPTURE_DIR.search(line.text[:_CAPTURE_LINE])
            if found is not None and len(reading.captures) < 16:
                reading.captures.append((found.group("dir"), "strict" in found.group("how")))
        if len(reading.events) >= self.max_events:
            reading.more_events += 1
            return True
        who = line.ranks or torch_rank(line.text) or rank_within(line.text)
        who = who or process_of(line.stream) or nccl_process(line.text) or "a process"
        if kind == "sigquit":
            who = "the parent process"
        if kind == "death":
            who = worker_died(line.text) or who
        if kind == "hang":  # a py-spy dump names the process by its title
            who = pyspy_process(line.text) or who
        reading.events.append(
            Event(
                kind,
                reading.source,
                line.number,
                line.time,
                line.time_text,
                who,
                _kept(line.text, kind),
                self._next_order(),
                line.zone,
            )
        )
        return True


#: The characters of an event's line kept; a death's line keeps its start and its end.
_EVENT_TEXT = 2000


def _names_check(failure: Failure) -> bool:
    """True for a failure whose words say the watchdog's check for NCCL errors raised it."""
    return "checkForNCCLErrors" in failure.message


def _names_timeout(failure: Failure) -> bool:
    """True for a failure whose words say the watchdog found a collective timed out."""
    return "Watchdog caught collective operation timeout" in failure.message or (
        "checkTimeout" in failure.message
    )


def _kept(text: str, kind: str) -> str:
    """What an event keeps of its line: its start, and for a death its start and its end too
    (a launcher echoes the child's whole command between who it is and how the child ended)."""
    if len(text) <= _EVENT_TEXT or kind != "death":
        return text[:_EVENT_TEXT]
    half = _EVENT_TEXT // 2
    return f"{text[:half]} ... {text[-half:]}"


#: Processes told apart by their leads in one stream; more share the stream's first one.
_MAX_LEAD_NAMES = 64
#: Leads of different processes looked for in one stream's lines, the latest first (each
#: line tries at most these).
_MAX_LEADS = 8
