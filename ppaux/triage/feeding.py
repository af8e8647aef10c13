"""Feeding a log's lines, one by one, to the tracebacks still open in their stream: the reader
(:class:`Reader`) that fills what one log holds for triage
(:class:`~ppaux.triage.logreading.LogReading`).

Interleaved lines of other processes are expected: an sglang line of other ranks does not end
a traceback that still waits for its exception line, and a launcher's prefix (compose, Ray)
keeps each process's lines apart. Each line costs the same however many tracebacks are open.

What it makes of the lines outside those tracebacks is :mod:`ppaux.triage.looselines`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ppaux.limits import Limits
from ppaux.patterns import lazy
from ppaux.triage.crashes import Crashes
from ppaux.triage.groups import unmargined
from ppaux.triage.kinds import root_of_group
from ppaux.triage.leads import lead_length, named
from ppaux.triage.lineformat import LogLine
from ppaux.triage.lineshapes import VLLM_STAGE
from ppaux.triage.logreading import (
    LogReading,
)
from ppaux.triage.longnumbers import LONG_NUMBER_PLACES
from ppaux.triage.looselines import LooseLines, OpenStream
from ppaux.triage.methods import WorkerMethods
from ppaux.triage.records import (
    Failure,
    went_on,
)
from ppaux.triage.tracebacks import TracebackBuilder

__all__ = ["PP_RANK", "Reader"]

#: What a header begins with, however a paste cut it.
_HEADER_START = "Traceback (m"

#: Lines of other processes after which a traceback still waiting for its exception is ended.
_MAX_FOREIGN = 400
#: A pipeline rank in sglang's prefix (``PPn``).
PP_RANK = lazy(r"\bPP(\d{1,6})\b")
#: A rank or a frame's line number longer than ppaux reads (a finding, not a number).
_OVERSIZED = lazy(
    r"(?:\b(?:DP|PP|ATTN_CP|MOE_DP|TP|EP)|, line |\[rank|\blocal_rank(?:: |=))\d{7,}|"
    + LONG_NUMBER_PLACES
)
#: What an oversized number holds, looked for before its place is.
_LONG_NUMBER = lazy(r"\d{7}")
#: Lines with an oversized number listed per log.
_MAX_OVERSIZED = 16


class Reader(LooseLines):
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
        self._streams: dict[str | None, OpenStream] = {}
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
        stream = self._streams.setdefault(failure.stream, OpenStream())
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
    def _foreign(stream: OpenStream, builder: TracebackBuilder) -> int:
        return builder.foreign + stream.sglang_lines - builder.base

    def _target(self, stream: OpenStream) -> TracebackBuilder:
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
