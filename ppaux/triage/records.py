"""What triage takes out of a log: failures (a traceback, reassembled) and one-line events
(a watchdog timeout, a TCPStore error, the parent's SIGQUIT, ppaux capture's own lines).

A failure begins at its traceback's first line (:func:`failure_start`: who logged it, when,
under which ranks); :class:`~ppaux.triage.tracebacks.TracebackBuilder` reads the lines after
it into the failure: frames, the exception line, a chain, an exception group's
sub-exceptions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ppaux.patterns import lazy
from ppaux.triage.groups import GROUP_HEADER
from ppaux.triage.lineformat import OUTPUT_STREAMS, LogLine
from ppaux.triage.tracelines import HEADER, MAX_MESSAGE

__all__ = [
    "Event",
    "Failure",
    "Frame",
    "failure_start",
    "method_said",
    "own_record",
    "process_of",
    "went_on",
]

#: The process that logged it, just before the header (``Scheduler hit an exception: ``).
#: An exception group's header stands behind a ``+`` (``hit an exception:   + Exception Group
#: Traceback ...``).
_PROCESS = lazy(r"(?:^|\W)(?P<process>\w{1,64}) hit an exception: (?: {0,64}\+ )?$")
#: A worker's header that says its exception before the traceback: ``Exception in worker W
#: while processing method init_device: NCCL error: ..., Traceback (most recent call last):``.
_SAID = lazy(
    r"Exception in worker .{0,200}? while processing method (?P<method>[\w.]{1,200}): "
    r"(?P<message>.+?),? $"
)
#: A worker's line before its traceback naming the method it ran (vLLM's ``Error executing
#: method init_device. This might cause deadlock ...``).
_METHOD = lazy(r"Error executing method (?P<method>[\w.]{1,200})")
#: A logger's record at INFO or DEBUG, its time (bare or bracketed) before it or not:
#: ``2024-05-01 01:00:05,000 INFO download ok``, ``[2024-05-01 01:00:05] INFO ...``,
#: ``INFO:root:...``, ``I0501 01:00:05.000 ...`` (glog).
_GOING_ON = lazy(
    r"^\s{0,8}(?:\[?\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d[.,\d]{0,10}Z?\]?\s{1,4})?"
    r"(?:\[?(?:INFO|DEBUG)\]?(?:\s|:)|I\d{4} \d\d:\d\d:\d\d)"
)
#: Ray's note that it folded the same line of several workers into this one.
_FOLDED = lazy(r"\[repeated \d{1,9}x across cluster\]")


@dataclass(frozen=True)
class Frame:
    """One frame of a traceback: ``file``, ``line``, ``function`` and its source line."""

    file: str
    line: int
    function: str
    code: str = ""


@dataclass
class Failure:
    """A traceback in a log: where it starts, who wrote it, and what it says.

    ``process`` is the sglang process that logged it ('Scheduler' for 'Scheduler hit an
    exception'), None for a bare traceback. ``exception`` is the type of the exception that
    ended the traceback (None when it is cut off), ``chain`` the earlier exceptions of a
    chain, oldest first.
    """

    source: str
    line: int
    time: float | None
    time_text: str | None
    ranks: str | None
    stream: str | None
    process: str | None
    order: int
    exception: str | None = None
    message: str = ""
    chain: list[tuple[str, str]] = field(default_factory=list)
    frames: list[Frame] = field(default_factory=list)
    dropped_frames: int = 0
    cut: bool = False
    #: A traceback whose header the log does not hold (frames, then its exception line), or a
    #: one-line ``[prefix] SomeError: ...`` record.
    fragment: bool = False
    #: The zone of ``time`` (as written, or as the user gave it): ``time`` is then an instant;
    #: None for a host's wall clock, zone unknown.
    zone: str | None = None
    #: What a record that names no exception says of the failure (a launcher's summary of a
    #: child's exit), said in place of a cut traceback's words.
    said: str | None = None
    #: A fragment's source line before its first frame: the code of the frame the log lost
    #: (``self.NCCL_CHECK(self._funcs["ncclCommInitRank"](...))``), or ''.
    context: str = ""
    #: The method a worker's wrapper said it ran when the traceback came (``init_device``:
    #: ``Error executing method init_device``, ``while processing method init_device``), or
    #: None.
    method: str | None = None
    #: The thread Python's ``threading`` said raised it (``Exception in thread Thread-4
    #: (forward_thread_func):`` on the line above its header), or None.
    thread: str | None = None
    #: Ray folded this traceback's header, the same line of several workers, into one
    #: (``[repeated 14x across cluster]``): it stands for each of those workers' own.
    folded: bool = False
    #: Its process was starting up (:mod:`ppaux.triage.startup`: its worker's method, or a
    #: traceback of the same process next to it, says so), though its own frames do not.
    startup: bool = False
    #: Another record (a line neither NCCL's nor torch's c10d's) stands just above its first
    #: line (:func:`~ppaux.triage.passedcauses.spoken_above`): no warning above that is its
    #: cause.
    spoken_above: bool = False
    #: An exception group's own exception line, the outermost (``ExceptionGroup: unhandled
    #: errors in a TaskGroup (2 sub-exceptions)``); None for a traceback of no group. The
    #: group's root sub-exception (:meth:`TracebackBuilder.finish`) is then ``exception``.
    group: str | None = None
    #: The sub-exceptions of the group read (each its own exception, chain and frames), and
    #: the place of the root among them (from 1).
    subs: list[Failure] = field(default_factory=list)
    sub_index: int = 0
    #: Python shortened the group (``and N more exceptions``, ``max_group_depth``): the
    #: sub-exceptions read are not all it held.
    shortened: bool = False
    #: The group holds groups: ``subs`` are the sub-exceptions of them all, in the log's order.
    nested: bool = False
    #: Sub-exceptions of the group not read: those Python left out (``and N more
    #: exceptions``) and those past ppaux's own bound; and the depth past which Python left
    #: nested groups out (``max_group_depth``), 0 where it left none.
    left_out: int = 0
    depth_cut: int = 0
    #: Ray's error of a remote task or actor that headed this traceback
    #: (``ray.exceptions.RayTaskError(RuntimeError)``): the exception and frames are the remote
    #: process's, the process that wrote them only relays that failure. None otherwise.
    relayed_by: str | None = None
    #: The part of torchrun's failure summary this record is: 'root-cause' (the summary's
    #: ``Root Cause (first observed failure)``) or 'failure' (another of its rows, which the
    #: summary lists before the root cause though it failed after it), 'agent' (its agent's
    #: ``failed (exitcode: 1) local_rank: 0`` line); None for any other.
    summary: str | None = None
    #: NCCL's warning that a communicator's set-up failed, the only error the log holds above
    #: this traceback, which is cut before its exception line: (the set-up failure,
    #: :func:`~ppaux.triage.ncclsetup.setup_failure`, what the warning says of it, and where it
    #: stands, 'log:line'). That warning is the cause the traceback lost. None otherwise.
    warned: tuple[str, str, str] | None = None
    #: The line right after its exception line is a record of the program logging on
    #: (:func:`went_on`): where a traceback cut before its exception follows in the log, this
    #: exception was handled (a download retried), not what ended it.
    went_on: bool = False
    #: A C++ ``terminate called after throwing an instance of '...'`` record: the process
    #: aborted on this exception (its ``what():`` line the message).
    aborted: bool = False
    #: The rank a record on the line just above its header names as the one that failed
    #: (lmdeploy's ``ERROR - Rank[2] failed.``, :func:`~ppaux.triage.loggedabove.
    #: rank_before`): 'rank 2'; None where no record names one.
    named_rank: str | None = None

    @property
    def zoned(self) -> bool:
        """True when :attr:`time` is an instant (its zone is known)."""
        return self.zone is not None

    @property
    def who(self) -> str:
        """The ranks as the prefix spells them, else the stream, else the rank a record just
        above names, else 'a process'."""
        if self.ranks:
            return self.ranks
        named = process_of(self.stream)
        if named:
            return named
        return self.named_rank or "a process"

    @property
    def scheduler(self) -> bool:
        """True for a scheduler's failure: logged as 'Scheduler hit an exception', or a
        traceback under a rank prefix."""
        return self.process == "Scheduler" or bool(self.ranks)

    def shown(self) -> tuple[str | None, str]:
        """(type, message) the failure is named by (:attr:`error`): its own, or for one cut
        before its own exception, the exception it was raised from."""
        if self.exception is None and self.chain and not self.said:
            return self.chain[-1]
        return self.exception, self.message

    @property
    def error(self) -> str:
        """'RuntimeError: message', or what is known of a cut-off traceback."""
        if self.exception is None:
            if self.said:
                return self.said
            if self.chain:  # cut before its own exception: the one it was raised from is read
                cause, said = self.chain[-1]
                said = said.split("\n", 1)[0]
                return (
                    f"{cause}: {said}" if said else cause
                ) + " (then a traceback raised from it, cut before its own exception)"
            return "an exception the log does not show (the traceback is cut off)"
        first = self.message.split("\n", 1)[0]
        return f"{self.exception}: {first}" if first else self.exception


@dataclass(frozen=True)
class Event:
    """A one-line record that follows from a failure: ``kind`` is 'watchdog', 'store',
    'sigquit', 'capture' or 'death' (another process reports that a worker died)."""

    kind: str
    source: str
    line: int
    time: float | None
    time_text: str | None
    who: str
    text: str
    order: int
    #: The zone of ``time`` (as written, or as the user gave it): ``time`` is then an instant;
    #: None for a host's wall clock, zone unknown.
    zone: str | None = None

    @property
    def zoned(self) -> bool:
        """True when :attr:`time` is an instant (its zone is known)."""
        return self.zone is not None


def process_of(stream: str | None) -> str | None:
    """The process a line's stream names (a pod, a service, a host, a rank), None for an
    output stream (``stderr``): a stream name is never a rank."""
    return None if stream is None or stream in OUTPUT_STREAMS else stream


def failure_start(line: LogLine, source: str, order: int) -> Failure | None:
    """The failure that ``line`` begins, if it is the first line of a traceback."""
    at = line.text.find(HEADER)
    if at < 0 or _prose(line.text, at):
        return None
    group = line.text.rfind(GROUP_HEADER, max(0, at - len(GROUP_HEADER)), at + len(HEADER))
    if group >= 0:
        at = group
    match = _PROCESS.search(line.text, max(0, at - 100), at)
    said = _SAID.search(line.text, max(0, at - MAX_MESSAGE), at)
    failure = Failure(
        source=source,
        line=line.number,
        time=line.time,
        time_text=line.time_text,
        ranks=line.ranks or None,
        stream=line.stream,
        process=None if match is None else match.group("process"),
        order=order,
        zone=line.zone,
        folded=_FOLDED.search(line.text) is not None,
    )
    if said is not None:
        # the exception's text is on the header line, before its traceback
        failure.method = said.group("method")
        failure.exception, failure.message = "Exception", said.group("message")[:MAX_MESSAGE]
    return failure


#: The whole header of a traceback, as Python writes it.
_FULL_HEADER = "Traceback (most recent call last):"
#: What may follow a header on its own line: nothing, a frame glued to it (``File "``), or
#: the quotes and escapes of a record that holds it; a sentence's words (``look at the last
#: line``) make the line prose that names a header, not a traceback's start.
_AFTER_HEADER = lazy(r"\s*(?:$|File \"|[^\w\s])")


def _prose(text: str, at: int) -> bool:
    """True where the header found at ``at`` in ``text`` goes on in words: a sentence that
    speaks of a traceback (``If the log says Traceback (most recent call last): look at
    ...``), not one."""
    if not text.startswith(_FULL_HEADER, at):
        return False
    return _AFTER_HEADER.match(text, at + len(_FULL_HEADER)) is None


def method_said(text: str) -> str | None:
    """The method a worker's line before its traceback says it ran, or None."""
    found = _METHOD.search(text, 0, 4000)
    return None if found is None else found.group("method").rstrip(".")


def own_record(line: LogLine, failure: Failure) -> bool:
    """True where ``line``, the first after ``failure``'s exception line, is a record of its
    own, not more of the exception's message: a logger's record at INFO or DEBUG by its words,
    or a line with a time of its own where the traceback's header had none (a logger's next
    record, its prefix read off)."""
    if _GOING_ON.match(line.text) is not None:
        return True
    return line.time_text is not None and failure.time_text is None and not line.sglang


def went_on(line: LogLine, failure: Failure) -> bool:
    """True where ``line``, the first after ``failure``'s exception line, says the program
    logged on (:attr:`Failure.went_on`): a record of its own (:func:`own_record`) whose level,
    where one was taken off, is no ERROR, CRITICAL or FATAL: an error logged right after a
    traceback is no proof that it was handled."""
    return not line.severe and own_record(line, failure)
