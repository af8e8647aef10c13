"""Failures a process writes without a Python traceback: torch's C++ records and the lines a
process prints as it dies.

- torch's NCCL watchdog ending on an error that is not a timeout (``[rank0]:[E... ProcessGroupNCCL
  .cpp:N] [PG ID 0 ... Rank 0] Process group watchdog thread terminated with exception: CUDA
  error: an illegal memory access was encountered``, or the same text after ``what():``): that
  rank's failure, of the kind its message says (a timeout stays a watchdog event);
- C++'s ``terminate called after throwing an instance of 'c10::DistBackendError'`` and the
  ``what():`` line after it: the process aborted on that exception;
- ``Fatal Python error: Aborted`` (Python's fault handler): the process aborted; where no record
  of the same process came just before it, the cause is not in the log;
- torchrun's failure summary (``Root Cause (first observed failure):``, then ``rank : 0`` and
  ``exitcode : 1``): that rank exited first; its exception is not in the log; a failure of the
  summary flattened on one line (a console's table row, ``[2]: time : ... rank : 2
  (local_rank: 2) exitcode : -6 ...``): that rank exited so; so did the local rank of its
  agent's ``failed (exitcode: 1) local_rank: 0 (pid: N)`` line;
- torch's ``Detected mismatch between collectives on ranks. Rank 2 is running collective: ...``
  (``TORCH_DISTRIBUTED_DEBUG=DETAIL``): the ranks' programs differ; a ``collective mismatch``;
- NCCL's warning that a CUDA call failed (``init.cc:1582 NCCL WARN Cuda failure '...'``, its
  ``Failed to CUDA calloc N bytes``; :mod:`ppaux.triage.ncclcuda`): ``ncclUnhandledCudaError``,
  a failure of that process on its own GPU whatever its peers do;
- the tail of torch's CUDA error alone (``Search for `cudaErrorIllegalAddress' in ...``, then
  ``Exception raised from c10_cuda_check_implementation`` and C++ frames), its first line not
  in the log: a ``CUDA error`` of that name;
- the NVIDIA driver's record of a GPU fault (``NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU
  has fallen off the bus.``): a fault of the device (``hardware``);
- Open MPI's error block (``*** An error occurred in MPI_Init_thread``,
  :mod:`ppaux.triage.openmpi`): that rank's MPI call failed;
- DeepSpeed's record of a failed cuBLAS GEMM (``!!!! kernel execution error. (m: 768, n: 4608,
  k: 3072, error: 13)``): a kernel's failure, the next GEMMs' records the same one's;
- a host allocation that failed, ``memory allocation of 2097152 bytes failed`` (Rust's
  allocator aborting a tokenizer): the host ran out of memory;
- a native library's record of a CUDA driver API call that failed (``CUresult error  result=1
  file=csrc/torch_memory_saver.cpp func=resume line=214``, :mod:`ppaux.triage.curesult`): that
  process's call on its own GPU, the next processes' records of it the same failure's;
- a native failure-signal handler's record (``*** SIGSEGV received at time=N on cpu N ***``,
  :mod:`ppaux.triage.signalrecords`): that process died of the signal.

A record that follows another of the same stream within :data:`NEAR_LINES` lines says more of
the same failure (a ``what():`` line, the fault handler after ``terminate``): it completes that
failure instead of starting one. So does a numbered C++ frame of an object's set-up (``4
0x7fb4614edcec ...::AllreducePlugin::initialize() + 204``): a frame that tells set-up from flight.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ppaux.patterns import lazy
from ppaux.triage.backtraces import BACKTRACE_MARKERS, backtrace_frame, backtrace_said
from ppaux.triage.crashlines import CUDA_TAIL_MARKERS, ONE_LINE, cuda_tail
from ppaux.triage.curesult import CURESULT_MARKER
from ppaux.triage.deaths import DEATH_MARKERS
from ppaux.triage.faultdump import FAULT_DUMP_MARKER, fault_dump
from ppaux.triage.faultframes import FATAL
from ppaux.triage.gloolines import GLOO_MARKERS
from ppaux.triage.lineformat import LogLine, ranked_stream, torch_rank
from ppaux.triage.longnumbers import number_said
from ppaux.triage.ncclcuda import NCCL_CUDA_TYPE, cuda_calloc, cuda_failure
from ppaux.triage.ncclsetup import INIT_FAILED_MARKER, INIT_FAILED_TYPE, init_failure
from ppaux.triage.openmpi import MPI_ERROR, MPI_MARKERS, mpi_block, mpi_detail
from ppaux.triage.records import Failure, Frame, process_of
from ppaux.triage.signalrecords import SIGNAL_MARKERS, signal_line
from ppaux.triage.summaryrows import (
    SUMMARY_EXIT,
    SUMMARY_EXIT_RUN_IN,
    SUMMARY_RANK,
    SummaryRows,
    summary_row,
)
from ppaux.triage.tracebacks import MAX_FRAMES
from ppaux.triage.tracelines import MAX_MESSAGE, raised
from ppaux.triage.tritonstatus import TRITON_MARKERS, TRITON_TYPE, triton_more, triton_status
from ppaux.triage.turbomind import TURBOMIND_MARKER

__all__ = [
    "CRASH_MARKERS",
    "NEAR_LINES",
    "Crashes",
    "rank_within",
]

#: What makes a line worth reading for this module (added to the scanner's markers).
CRASH_MARKERS: tuple[bytes, ...] = (
    b"thread terminated with exception",
    b"ith exception: ",  # the same words, the line's start lost
    b"terminate called after throwing",
    b"what():",
    b"Fatal Python error",
    b"Root Cause (first observed failure)",
    b"(local_rank: ",
    b"exitcode",
    b"Detected mismatch between collectives",
    b"::initialize()",
    b"memory allocation of",
    b"!!!! kernel execution error",  # DeepSpeed's record of a cuBLAS GEMM that failed
    b"::initialise()",
    *CUDA_TAIL_MARKERS,  # the tail of torch's CUDA error, its first line not in the log
    b"NVRM: Xid",
    TURBOMIND_MARKER,
    *GLOO_MARKERS,  # gloo's one-line records of a failure (its set-up, a monitored barrier)
    CURESULT_MARKER,  # a native library's CUDA driver API call that failed (its CUresult)
    FAULT_DUMP_MARKER,  # the last line of Python's fault handler's dump
    b"] Assertion ",  # a CUDA kernel's assertion: ``thread: [63,0,0] Assertion `...` failed.``
    *MPI_MARKERS,
    *TRITON_MARKERS,  # Triton's status table: a model UNAVAILABLE, and why on the rows below
    *SIGNAL_MARKERS,  # a native failure-signal handler's record (Ray's workers')
    INIT_FAILED_MARKER,  # a worker's NCCL wrapper: its communicator's set-up failed
    *DEATH_MARKERS,  # a death another process reports (:mod:`ppaux.triage.deaths` reads it)
    *BACKTRACE_MARKERS,
)
#: Lines within which a record of the same stream completes the failure before it (a C++
#: exception's ``what():`` line and the frames between it and the fault handler's line).
NEAR_LINES = 64

_WATCHDOG = lazy(r"watchdog thread terminated with exception: (?P<message>.*)$")
#: The watchdog's words whose start a paste lost (``ith exception: NCCL error: ...``): a line
#: that starts with their last :data:`_CUT_LEAST` characters or more, then an error's head.
_WATCHDOG_WORDS = "Process group watchdog thread terminated with exception: "
_CUT_LEAST = len("ith exception: ")
_TERMINATE = lazy(r"terminate called after throwing an instance of '(?P<type>[^']{1,200})'")
#: A numbered C++ frame (glibc's backtrace, torch's ``frame #4:``) of an object's set-up.
_CPP_SETUP_FRAME = lazy(
    r"^\s*(?:frame #)?\d{1,4}:?\s+(?:0x[0-9a-fA-F]{1,16}\s+)?"
    r"(?P<symbol>[\w:<>~]{1,300}::(?P<function>initiali[sz]e)\(\))"
)
#: The C++ type at the start of what the quotes hold: other processes' ``terminate`` lines may
#: be written into it (``'c10::DistBackendErrorterminate called ...'``).
_CPP_TYPE = lazy(r"[A-Za-z_][\w:]{0,199}?(?=terminate called|$|[^\w:])")
#: (a backtick a paste put before it is no part of it)
_WHAT = lazy(r"^\s*`?\s*what\(\):\s+(?P<message>.*)$")
#: Anywhere in the line: another thread's output may be written into it.
_FATAL = lazy(r"Fatal Python error: \"?(?P<message>[^\n\",]{0,200})")
#: What is stripped around the fault handler's words when another thread's output cut them.
_QUOTES = " \"',"
#: The summary's heading of its first observed failure, wherever a line's envelope (a console's
#: table columns) leaves it; a summary flattened on one line holds its row after it.
#: A copy that lost characters (a screenshot's text read back) may put a space before the
#: colon, drop the one between ``rank`` and its number, write ``local rank`` and run the
#: ``exitcode`` line into the rank's (``rank2 (local rank: 2)exitcode: -9 (pid: 36071)``).
_SUMMARY = lazy(r"(?:^|[\s|])Root Cause \(first observed failure\) ?:(?=\s|$)")
#: A failure of torchrun's summary flattened on one line (a console's table row): ``[2]: time :
#: ... rank : 2 (local_rank: 2) exitcode : -6 (pid: 189) ...``.
_SUMMARY_ROW = lazy(
    r"\[\d{1,9}\]:\s+time\s*: \S{1,40}\s+host\s*: \S{1,253}\s+rank\s*: (?P<rank>\d{1,9}) "
    r"\(local_rank: \d{1,9}\)\s+exitcode\s*: (?P<code>-?\d{1,9})\b"
)
#: torchrun's record of a child that ended with an error, as its agent logs it: ``failed
#: (exitcode: 1) local_rank: 0 (pid: 20327) of binary: ...``.
_AGENT_EXIT = lazy(
    r"failed \(exitcode: (?P<code>-?\d+)\) local_rank: (?P<rank>\d{1,9}) \(pid: \d+\)"
)
#: Digits of a rank read (a longer number is no rank: the line is read without it, PP811).
_RANK_DIGITS = 6
#: Lines a torchrun summary's ``rank`` and ``exitcode`` come within after its heading: the
#: fifth and sixth line of it, where an export's pretty-printed JSON spends up to eight lines
#: on each.
_SUMMARY_LINES = 48
#: The process group's rank a C++ record names (``[PG ID 2 PG GUID 3 Rank 1]``).
_PG_RANK = lazy(r"\[PG [^\]]{0,80}?Rank (?P<rank>\d{1,9})\]")
#: The head of a watchdog's message that names the error (``CUDA error: ...``).
_HEAD = lazy(r"^(?P<type>(?:[A-Za-z][\w:.]{0,40} )?[\w:.]{0,40}[Ee]rror): (?P<message>.*)$")
_TIMEOUT = lazy(r"Watchdog caught collective|[Tt]imed out|Timeout at NCCL work")
#: torch's check that every rank calls the same collective; the rank is the one whose call
#: the message gives first.
_MISMATCH = lazy(
    r"Detected mismatch between collectives on ranks\. (?:Rank (?P<rank>\d{1,9}) )?.{0,2000}"
)
#: What such a record is called: the log shows no exception type for it.
_MISMATCH_TYPE = "collective mismatch"


def _split(message: str) -> tuple[str, str]:
    """(type, message) of a C++ error's text: its head where it names an error (``CUDA
    error``), else the watchdog's."""
    head = _HEAD.match(message)
    if head is not None:
        return head.group("type"), head.group("message")
    return "ProcessGroupNCCL watchdog error", message


class Crashes:
    """The crash records of one log, read line by line (only lines holding one of
    :data:`CRASH_MARKERS` need be given)."""

    def __init__(self, source: str, order: Callable[[], int]) -> None:
        self._source = source
        self._order = order
        self._last: Failure | None = None
        self._last_line = 0
        self._summary: Failure | None = None
        #: The summary's root cause heading came, its row (rank, exit code) not yet.
        self._row_due = False
        self._rows = SummaryRows()

    def _near(self, line: LogLine) -> Failure | None:
        last = self._last
        if last is None or line.number - self._last_line > NEAR_LINES:
            return None
        who = _who(line)
        # A record that names no process (``terminate called ...``) is the same process's.
        if last.stream is not None and who is not None and last.stream != who:
            return None
        return last

    def _new(self, line: LogLine, exception: str | None, said: str, abort: bool = False) -> Failure:
        failure = Failure(
            source=self._source,
            line=line.number,
            time=line.time,
            time_text=line.time_text,
            ranks=line.ranks or None,
            stream=_who(line),
            process=None,
            order=self._order(),
            exception=exception,
            message=said[:MAX_MESSAGE],
            fragment=True,
            zone=line.zone,
            aborted=abort,
        )
        self._last, self._last_line = failure, line.number
        return failure

    def take(self, line: LogLine) -> Failure | None:
        """The failure ``line`` begins, or None (no crash record, or more of the last one)."""
        taken, failure = self._torchrun(line)
        if taken:
            return failure
        if (row := self._rows.read(line.text, line.number)) is not False:  # a row on lines
            return (
                None if row is True else summary_row(self._new(line, None, ""), line.stream, *row)
            )
        near = self._near(line)
        if near is not None and (frame := _CPP_SETUP_FRAME.match(line.text)) is not None:
            if len(near.frames) < MAX_FRAMES:  # one record's frames, as a traceback's
                near.frames.append(Frame("", 0, frame.group("function"), frame.group("symbol")))
            self._last_line = line.number
            return None
        if (native := backtrace_frame(line.text)) is not None:
            return self._backtrace(line, near, *native)
        taken, failure = self._cpp(line, near)
        if taken:
            return failure
        return self._host(line, near)

    def _backtrace(
        self, line: LogLine, near: Failure | None, file: str, function: str
    ) -> Failure | None:
        """A line of a native backtrace: a frame of the record ``near``, or the crash it
        begins. Its frames are kept innermost last, as a traceback's (a backtrace lists the
        innermost first); one named by its offset only is not kept, though the first frame
        says where the process crashed until a frame that names its function does."""
        begun = near is None
        failure = self._new(line, None, "") if near is None else near
        self._last_line = line.number
        named = not function.startswith("+")
        if named and len(failure.frames) < MAX_FRAMES:
            failure.frames.insert(0, Frame(file, 0, function))
        native = failure.exception is None and (failure.said or "").startswith("a native")
        if begun or (native and named and len(failure.frames) == 1):
            failure.said = backtrace_said(function, file)
        return failure if begun else None

    def _torchrun(self, line: LogLine) -> tuple[bool, Failure | None]:
        """torchrun's records of a child that failed: its summary (and the summary's rank and
        exit lines after it), a summary's row, its agent's line. (taken, the failure begun)."""
        text = line.text
        summary = self._summary
        if summary is not None and line.number - summary.line <= _SUMMARY_LINES:
            if (rank := SUMMARY_RANK.match(text)) is not None:
                self._row_due = False
                summary.stream = f"rank {rank.group('rank')}"
                code = SUMMARY_EXIT_RUN_IN.match(text, rank.end())
                if code is None:
                    return True, None
            else:
                code = SUMMARY_EXIT.match(text)
            if code is not None:
                summary.said = (
                    f"{summary.stream or 'a process'} exited with code {code.group('code')} "
                    "(torchrun's first observed failure); its exception is not in this log"
                )
                return True, None
        heading = _SUMMARY.search(text) if "Root Cause" in text else None
        if heading is not None and (row := _SUMMARY_ROW.search(text, heading.end())):
            # the summary flattened on one line: its first observed failure's row follows
            self._summary = self._new(line, None, "")
            _root_cause(self._summary, row, line)
            return True, self._summary
        if "exitcode" in text and (row := _SUMMARY_ROW.search(text)) is not None:
            near = summary is not None and line.number - summary.line <= _SUMMARY_LINES
            if summary is not None and near and self._row_due:
                self._row_due = False  # the row under the summary's root cause heading
                _root_cause(summary, row, line)
                return True, None
            failure = self._new(line, None, "")
            return True, summary_row(failure, line.stream, row.group("rank"), row.group("code"))
        if "exitcode" in text and (agent := _AGENT_EXIT.search(text)) is not None:
            failure = self._new(line, None, "")
            failure.summary, who = "agent", "torchrun's child"
            if len(agent.group("rank")) <= _RANK_DIGITS:
                who = f"local_rank {agent.group('rank')}"
                failure.stream = ranked_stream(line.stream, who)
            failure.said = (
                f"{who} exited with code {number_said(agent['code'], 9)} (torchrun's record of its "
                "child); its exception is not in this log"
            )
            return True, failure
        if heading is not None:
            self._summary = self._new(line, None, "")
            self._summary.summary = "root-cause"
            self._row_due = True
            self._summary.said = (
                "a process exited (torchrun's first observed failure); its exception is not in "
                "this log"
            )
            return True, self._summary
        return False, None

    def _cpp(self, line: LogLine, near: Failure | None) -> tuple[bool, Failure | None]:
        """A C++ record: a CUDA error's tail, ``terminate called ...``, torch's watchdog error
        or a ``what():`` line, each completing the record ``near`` where there is one.
        (taken, the failure begun)."""
        text = line.text
        if (tail := cuda_tail(text)) is not None:
            if near is not None:
                return True, None  # the tail of the record before it
            return True, self._new(line, *tail)
        if (found := _TERMINATE.search(text)) is not None:
            if near is not None:
                return True, None
            return True, self._new(line, _cpp_type(found.group("type")), "", True)
        watchdog = _WATCHDOG.search(text) or _cut_watchdog(text)
        what = _WHAT.match(text)
        if watchdog is None and what is None:
            return False, None
        message = (watchdog or what).group("message")  # type: ignore[union-attr]
        if watchdog is not None and _TIMEOUT.search(message):
            return True, None  # a collective's timeout: the watchdog's event says it
        if near is not None:
            if watchdog is not None:  # the watchdog's error is what the process died of
                near.exception, near.message = _split(message)
            elif not near.message:
                near.message = message[:MAX_MESSAGE]
            near.stream = near.stream or _who(line)
            self._last_line = line.number
            return True, None
        exception, said = _split(message) if watchdog is not None else ("C++ exception", message)
        return True, self._new(line, exception, said)

    def _host(self, line: LogLine, near: Failure | None) -> Failure | None:
        """A collectives' mismatch, a CUDA call NCCL failed on the host, a host allocation that
        failed, the fault handler's ``Fatal Python error``: the failure begun, or None."""
        text = line.text
        if (mismatch := _MISMATCH.search(text)) is not None:
            if near is not None and "Detected mismatch between collectives" in near.message:
                return None  # the same check printed again
            shaped = raised(text)  # the type, where the line gives it
            exception, said = shaped if shaped is not None else (_MISMATCH_TYPE, mismatch.group(0))
            failure = self._new(line, exception, said)
            if mismatch.group("rank") is not None and _who(line) == line.stream:
                failure.stream = ranked_stream(line.stream, f"rank {mismatch.group('rank')}")
            return failure
        if (cuda := cuda_failure(text)) is not None:
            if near is not None and near.exception == NCCL_CUDA_TYPE and cuda in near.message:
                self._last_line = line.number  # the same failure said again
                return None
            return self._new(line, NCCL_CUDA_TYPE, cuda)
        if (init := init_failure(text)) is not None:
            return self._new(line, INIT_FAILED_TYPE, init)
        if (calloc := cuda_calloc(text)) is not None:
            if near is not None and near.exception == NCCL_CUDA_TYPE:
                if calloc not in near.message:  # the same failure's allocation
                    near.message = f"{near.message}; {calloc}"[:MAX_MESSAGE]
                self._last_line = line.number
                return None
            return self._new(line, NCCL_CUDA_TYPE, calloc)
        for reader, kind in ONE_LINE:
            if (record := reader(text)) is not None:
                if near is not None and near.exception == kind:
                    self._last_line = line.number  # the same failure's next record
                    return None
                return self._new(line, *record)
        if (block := mpi_block(text) or triton_status(text) or fault_dump(text)) is not None:
            if block[0] == FATAL and (near is not None or process_of(line.stream) is None):
                return None  # the dump's end, of the failure above or of no process named
            return self._new(line, *block)
        if near is not None and near.exception == TRITON_TYPE and (more := triton_more(text)):
            near.message = f"{near.message} {more}"[:MAX_MESSAGE]  # the cell goes on
            self._last_line = line.number
            return None
        if (detail := mpi_detail(text)) is not None:
            if near is not None and near.exception == MPI_ERROR:  # the block's error
                near.message = f"{near.message}: {detail}"[:MAX_MESSAGE]
                self._last_line = line.number
            return None
        if (caught := signal_line(text, near)) is not False:  # a native signal handler's
            self._last_line = line.number
            return None if caught is True else self._new(line, *caught)
        if (fatal := _FATAL.search(text)) is not None:
            if near is not None and near.exception != "Fatal Python error":  # another's dump
                self._last_line = line.number
                return None
            said = fatal.group("message").strip(_QUOTES)
            return self._new(
                line,
                "Fatal Python error",
                f"{said} (the process aborted; the cause is not in this log)",
            )
        return None


def _cut_watchdog(text: str) -> re.Match[str] | None:
    """The message of the watchdog's record whose start a paste lost (``ith exception: NCCL
    error: ...``), where what follows names an error; else None."""
    start = text.lstrip()
    cut = start.find("exception: ")
    if cut < 0:
        return None
    words = start[: cut + len("exception: ")]
    if len(words) < _CUT_LEAST or not _WATCHDOG_WORDS.endswith(words):
        return None
    found = _CUT_MESSAGE.match(start, len(words))
    return found if found is not None and _HEAD.match(found.group("message")) else None


#: What follows the watchdog's cut words.
_CUT_MESSAGE = lazy(r"(?P<message>.*)$")


def _root_cause(summary: Failure, row: re.Match[str], line: LogLine) -> None:
    """Give torchrun's summary the rank and exit code of its first observed failure's row."""
    summary.stream = ranked_stream(line.stream, f"rank {row.group('rank')}")
    summary.said = (
        f"rank {row.group('rank')} exited with code {row.group('code')} (torchrun's first "
        "observed failure); its exception is not in this log"
    )
    summary.summary = "root-cause"


def _cpp_type(quoted: str) -> str:
    """The type a ``terminate`` line names, without what other processes wrote into its
    quotes: their own ``terminate called ...`` words, or the same qualified type again
    (``c10::DistBackendErrorc10::DistBackendError``)."""
    found = _CPP_TYPE.match(quoted)
    name = quoted if found is None or not found.group() else found.group()
    half = len(name) // 2
    if len(name) % 2 == 0 and name[:half] == name[half:] and "::" in name[:half]:
        return name[:half]
    return name


def _who(line: LogLine) -> str | None:
    """The stream of a crash record: the rank torch's prefix or the process group's bracket
    names, behind the line's own stream where it has one (:func:`ranked_stream`); else the
    line's own stream."""
    rank = torch_rank(line.text)
    if rank is None:
        group = _PG_RANK.search(line.text)
        rank = None if group is None else f"rank {group.group('rank')}"
    if rank is None:
        return line.stream
    return ranked_stream(line.stream, rank)


#: torch's rank prefix of a C++ record (``[rank1]:[E...``) behind what a paste put before it
#: (a stray character, a colour code whose escape was lost, a launcher's prefix not read).
_RANK_WITHIN = lazy(r"\[rank(?P<rank>\d{1,9})\]:\[[EWI]")
#: Characters of a line looked at for it.
_RANK_PREFIX = 200
#: torch's NCCL record without the ``[rankN]:`` tag names its rank (in its group) after its
#: place: ``[Rank 1]``, or from torch 2.4 ``[PG ID 0 PG GUID 0(default_pg) Rank 1]``.
_OLD_RANK = lazy(
    r"ProcessGroupNCCL\.cpp:\d{1,9}\] \[(?:PG [^\[\]]{0,80}?)?Rank (?P<rank>\d{1,6})\] "
)


#: Where torch's NCCL record names its place: the record's rank tag stands just before it.
_NCCL_PLACE = "ProcessGroupNCCL.cpp:"


def rank_within(text: str) -> str | None:
    """'rank 1' for a line whose torch record (``[rank1]:[E...``) begins within its first
    characters, or just before its ``ProcessGroupNCCL.cpp:`` place where another process's
    output ran into it on the same line (a fault handler's ``Extension modules: ...``, with
    no line end), or whose older record names it after its place (``[Rank 1]``); else None."""
    found = _RANK_WITHIN.search(text, 0, _RANK_PREFIX)
    if found is None and _NCCL_PLACE in text[:_RANK_PREFIX]:
        found = _OLD_RANK.search(text, 0, _RANK_PREFIX)
    if found is None:
        place = text.find(_NCCL_PLACE, _RANK_PREFIX)
        if place > 0:
            found = _RANK_WITHIN.search(text, place - _RANK_PREFIX, place)
    return None if found is None else f"rank {found.group('rank')}"
