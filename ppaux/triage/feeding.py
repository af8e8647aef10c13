"""Feeding a log's lines, one by one, to the tracebacks still open in their stream: the reader
(:class:`Reader`) that fills what one log holds for triage
(:class:`~ppaux.triage.logreading.LogReading`).

Interleaved lines of other processes are expected: an sglang line of other ranks does not end
a traceback that still waits for its exception line, and a launcher's prefix (compose, Ray)
keeps each process's lines apart. Each line costs the same however many tracebacks are open.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ppaux.limits import Limits
from ppaux.patterns import lazy
from ppaux.triage.crashes import Crashes, rank_within
from ppaux.triage.deaths import worker_died
from ppaux.triage.flattened import outside_quotes
from ppaux.triage.groups import GROUP_HEADER, unmargined
from ppaux.triage.hangs import pyspy_process
from ppaux.triage.kinds import root_of_group
from ppaux.triage.leads import lead_length, named
from ppaux.triage.lineformat import LogLine, torch_rank
from ppaux.triage.lineshapes import VLLM_STAGE
from ppaux.triage.logreading import (
    LogReading,
    check_frames_only,
    event_kind,
    nccl_process,
    watchdog_tagged,
)
from ppaux.triage.methods import WorkerMethods
from ppaux.triage.ncclcuda import last_error, nccl_error_name
from ppaux.triage.records import (
    Event,
    Failure,
    failure_start,
    method_said,
    process_of,
    went_on,
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

__all__ = ["PP_RANK", "Reader"]

#: The start of a traceback's first line.
_HEADER = "Traceback (most recent call last):"
#: What a header begins with, however a paste cut it.
_HEADER_START = "Traceback (m"

#: Lines of other processes after which a traceback still waiting for its exception is ended.
_MAX_FOREIGN = 400
#: Characters of a capture line read (its directory is a path: far shorter).
_CAPTURE_LINE = 8192
#: The capture's start line; its mode (``(when=error, strict)``) ends the line, so a directory
#: whose name holds `` (when=`` is read whole.
_CAPTURE_DIR = lazy(
    r"ppaux capture: capturing .*? into (?P<dir>.+) \(when=(?P<how>\w{1,16}(?:, strict)?)\)\s*$"
)
#: A pipeline rank in sglang's prefix (``PPn``).
PP_RANK = lazy(r"\bPP(\d{1,6})\b")
#: A rank or a frame's line number longer than ppaux reads (a finding, not a number).
_OVERSIZED = lazy(r"(?:\b(?:DP|PP|ATTN_CP|MOE_DP|TP|EP)|, line |\[rank|\blocal_rank(?:: |=))\d{7,}")
#: What an oversized number holds, looked for before its place is.
_LONG_NUMBER = lazy(r"\d{7}")
#: Lines with an oversized number listed per log.
_MAX_OVERSIZED = 16


#: torch.fx's words before the frames of the model code a failed graph node came from: notes
#: of the exception printed just before them.
_ORIGINAL = "Original traceback:"
#: Lines a note's next frame comes within (its source line and the caret line between).
_NOTE_LINES = 3


def _same_ranks(one: str | None, other: str | None) -> bool:
    """True unless both lines name ranks and the ranks differ (a traceback's lines after its
    header often name none)."""
    return one is None or other is None or one == other


class _Open:
    """The tracebacks still open in one stream, in the order they began, and how many sglang
    lines the stream has had (what a traceback waiting for its exception counts as foreign)."""

    __slots__ = ("builders", "sglang_lines")

    def __init__(self) -> None:
        self.builders: dict[int, TracebackBuilder] = {}
        self.sglang_lines = 0


class Reader:
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
        #: Per stream, the last one-line record of a wrapper naming its cause
        #: (``RayTaskError(OutOfMemoryError): ray::Actor.run() ...``) and its failure: where
        #: frames follow it on the next line, it was the header of the remote traceback they
        #: begin (that fragment is the failure), else a record standing alone.
        self._wrappers: dict[str | None, tuple[LogLine, Failure]] = {}
        #: Per stream, the number of the last frame line read as a note of the exception
        #: before it (torch.fx's ``Original traceback:`` and the frames after it), not a
        #: failure of its own.
        self._noted: dict[str | None, tuple[int, str | None]] = {}
        #: Per stream, the text a tool ppaux does not know put before the last traceback's
        #: header: taken off the lines after it that begin the same way
        #: (:func:`~ppaux.triage.leads.lead_length`).
        self._leads: dict[str | None, list[str]] = {}
        #: Per stream, what each lead learned there names (:func:`~ppaux.triage.leads.named`)
        #: and the stream its lines go to: the first the stream itself, each other one a stream
        #: of its own (two processes' tracebacks interleaved behind a prefix ppaux does not
        #: know).
        self._lead_names: dict[str | None, dict[str, str | None]] = {}
        #: The stream each of those streams was told apart from.
        self._origins: dict[str | None, str | None] = {}
        self.crashes = Crashes(reading.source, self._next_order)
        #: The line given just before the one being taken (:meth:`remember` gives one the
        #: scanner passed over, read only when a fragment begins), None when it is not known.
        self._before: LogLine | Callable[[], LogLine | None] | None = None
        #: Per stream, the last worker's line naming the method it ran.
        self._methods = WorkerMethods()

    def remember(self, line: LogLine | Callable[[], LogLine | None] | None) -> None:
        """``line`` came just before the next line taken (None: what came is not known); a
        function that gives it is called only where a fragment needs the line."""
        self._before = line

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
        finished = builder.finish(root_of_group)
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
        if weak:
            self._methods.note(line)
        self._take(line, marked, weak)
        self._before = line

    def _take(self, line: LogLine, marked: bool, weak: bool) -> None:
        if line.ranks is None and line.stream is not None and self._leads:
            line = self._margined(line)
        if line.ranks is None and self._leads:
            line = self._unled(line)
        if _LONG_NUMBER.search(line.text) is not None and _OVERSIZED.search(line.text):
            reading = self.reading
            if len(reading.oversized) < _MAX_OVERSIZED:
                reading.oversized.append(line.number)
            else:
                reading.more_oversized += 1
        if line.ranks:
            self.reading.pp_ranks.update(int(n) for n in PP_RANK.findall(line.ranks))
        elif line.stream is not None and "PP" in line.stream:
            stage = VLLM_STAGE.search(line.stream)  # vLLM's worker named by its stage
            if stage is not None:
                self.reading.pp_ranks.add(int(stage.group(1)))
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
                    builder.failure.went_on = went_on(line, builder.failure)
                    self.close(builder)
            while stream.builders:
                first = next(iter(stream.builders.values()))
                if self._foreign(stream, first) <= _MAX_FOREIGN:
                    break
                self.close(first)
        if marked and self._marked(line):
            return
        if weak:
            # an exception line that a marker's words are in (``DistBackendError: NCCL error
            # in: ...ProcessGroupNCCL.cpp:1970``) and no record of the marker's kind took
            self._weak(line)

    def _margined(self, line: LogLine) -> LogLine:
        """``line`` given back to the exception group open in the stream of no name, when what
        was read as docker compose's ``<service> | `` was the group's margin behind the lead
        its header had (k9s' ``<pod> ``): ``<pod>   | File ...`` is the group's line."""
        if all(lead.strip() != line.stream for lead in self._leads.get(None, ())):
            return line
        stream = self._streams.get(None)
        # The latest traceback only: a line costs the same however many are open.
        latest = next(reversed(stream.builders.values()), None) if stream is not None else None
        if latest is None or not latest.in_group:
            return line
        return dataclasses.replace(line, stream=None, text=f"  | {line.text}")

    def _unled(self, line: LogLine) -> LogLine:
        """``line`` without a lead learned in its stream, in the stream of the process the
        lead names. A header behind a lead of another shape, where its stream has leads,
        begins that lead's process's stream (its text is kept for :func:`failure_start`)."""
        led = 0
        for lead in reversed(self._leads.get(line.stream, ())):  # the latest first
            led = lead_length(line.text, lead)
            if led:
                break
        header = line.text.find(_HEADER_START)
        if led:
            # A sub-exception's header, behind a group's margin, begins no process's stream.
            begins = header >= 0 and unmargined(line.text[led:]) is None
            stream = self._route(line.stream, named(line.text[:led]), begins)
            return dataclasses.replace(
                line, text=line.text[led:], lead=line.text[:led], stream=stream
            )
        lead = line.text[:header] if header > 0 else ""
        if lead.strip() and lead.replace("\t", " ").isprintable() and unmargined(lead) is None:
            stream = self._route(line.stream, named(lead), True)
            return dataclasses.replace(line, lead=lead, stream=stream)
        return line

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

    def _checked(self, line: LogLine) -> bool:
        """True where a failure of ``line``'s stream, open or the log's last, says the
        watchdog's check for NCCL errors raised it (its C++ frames follow its record: one
        failure, not a second)."""
        stream = self._streams.get(line.stream)
        if stream is not None and any(_names_check(b.failure) for b in stream.builders.values()):
            return True
        failures = self.reading.failures
        return bool(failures) and failures[-1].stream == line.stream and _names_check(failures[-1])

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
            if failure.method is None:
                before = self._before() if callable(self._before) else self._before
                if before is not None and before.stream == line.stream:
                    failure.method = method_said(before.text)
            # or a few lines above, other lines between them (spent either way)
            failure.method = self._methods.take(line, failure.method)
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
            self._add(builder)
            return True
        kind = event_kind(plain)
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
