"""What one log holds for triage (:class:`LogReading`: its failures, events and what its lines
said of the run), and the one-line events told from a line's text (:func:`event_kind`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ppaux.patterns import lazy
from ppaux.triage.deaths import worker_died
from ppaux.triage.hangs import hang_words
from ppaux.triage.lineshapes import Envelope, Launcher
from ppaux.triage.ncclnotes import harmless_warning
from ppaux.triage.records import Event, Failure

__all__ = [
    "LogReading",
    "check_frames_only",
    "event_kind",
    "nccl_process",
    "timeout_frame",
    "watchdog_tagged",
    "watchdog_words",
]


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
    #: The first of those lines (0 when none).
    first_long_line: int = 0
    #: Why a compressed log ended early, or None.
    cut: str | None = None
    #: The compression of a log that ended early (gzip, bzip2, xz, zstd).
    cut_compression: str = "gzip"
    #: The compression the log was read through (gzip, bzip2, xz, zstd), or None.
    compression: str | None = None
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
    #: The log's first 64 KiB hold sglang's own lines (its prefix or its arguments): NCCL's
    #: warnings in it are noise of a run that logged, not a log of nothing else.
    sglang_seen: bool = False
    #: The log's first 64 KiB hold lines of Ascend's NPU stack (torch_npu, HCCL, CANN's error
    #: codes): its communication library is HCCL, not NCCL.
    ascend: bool = False
    #: A tool put sglang's time alone in brackets (``[<time>] ``) before every line, frames
    #: among them (:func:`~ppaux.triage.survey.stamped_lines`): a stamp, not sglang's prefix.
    stamped: bool = False
    #: torch's c10d lines the scanner passed over just above a traceback's first line that say
    #: what failed (:func:`~ppaux.triage.causeabove.c10d_cause`): (the traceback's first line,
    #: the line that says it, the cause, what it says), at most a few.
    causes: list[tuple[int, int, str, str]] = field(default_factory=list)
    #: The first lines of tracebacks that another record stands just above
    #: (:func:`~ppaux.triage.passedcauses.spoken_above`), at most a few.
    spoken: list[int] = field(default_factory=list)
    #: The first lines of tracebacks that a chain's header stands just above
    #: (:func:`~ppaux.triage.handledchains.chained_above`), at most a few.
    chained: list[int] = field(default_factory=list)


#: torch's error records (``[E...``) of a collective that timed out, besides the watchdog's own
#: line: 'Timeout at NCCL work', 'Some NCCL operations have failed or timed out', a dump signal
#: 'due to a collective timeout', the heartbeat monitor's 'Heartbeat monitor timed out!'; and
#: its fatal record (``[F...``) that the watchdog itself hung ('watchdog got stuck for 600
#: seconds'): a collective or a CUDA call that never returned.
_NCCL_TIMEOUT = lazy(
    r"\[[EF][^\]]{0,40}ProcessGroupNCCL\.cpp:\d+\].{0,400}(?:timed out|[Tt]imeout|got stuck)"
)


#: torch's record that the watchdog found a collective's work ended badly, in words that name
#: no timeout of their own (``Exception (either an error or timeout) detected by watchdog at
#: work: 2``): the error or the timeout is in another line, or in none.
_EITHER = "(either an error or timeout)"


#: The place torch's C++ error names where the watchdog found a collective timed out
#: (``Exception raised from checkTimeout at .../ProcessGroupNCCL.cpp:632``), the error's own
#: line not in the paste.
_CHECK_TIMEOUT = lazy(r"Exception raised from checkTimeout at \S{0,1000}ProcessGroupNCCL\.cpp:")
#: A C++ frame of the watchdog's check for NCCL errors (``frame #1: c10d::ProcessGroupNCCL::
#: checkForNCCLErrorsInternal(...)``): the watchdog found a collective's NCCL error.
_CHECK_ERRORS = lazy(r"^\s*frame #\d{1,4}: c10d::ProcessGroupNCCL::checkForNCCLErrors")
#: A C++ frame of the watchdog's check of a work's time-out (``frame #1: c10d::
#: ProcessGroupNCCL::WorkNCCL::checkTimeout(...)``): the watchdog found a collective timed out,
#: whatever place the block names after it (``Exception raised from ncclCommWatchdog``).
_TIMEOUT_FRAME = lazy(r"^\s*frame #\d{1,4}: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout\(")


def watchdog_words(text: str) -> str:
    """What a watchdog record ``text`` says its rank did, in a finding's words: a timeout only
    where its words say one (not torch's 'either an error or timeout')."""
    said = text.replace(_EITHER, "")
    if _timeout(said):
        return "logged an NCCL watchdog timeout"
    if _CHECK_ERRORS.search(said) is not None:
        return (
            "logged torch's C++ frames of NCCL's watchdog finding an NCCL error in a "
            "collective (the error's own line is not in this log)"
        )
    return (
        "logged that NCCL's watchdog found a collective that failed (an error or a timeout: "
        "torch's record does not say which)"
    )


def check_frames_only(text: str) -> bool:
    """True for a line that is torch's C++ frame of the watchdog's check for NCCL errors and
    no timeout record: the frames of an error whose own line, when the log holds it (``...
    Exception raised from checkForNCCLErrorsInternal at ...``), is that failure already."""
    return _CHECK_ERRORS.search(text) is not None and not _timeout(text)


def timeout_frame(text: str) -> bool:
    """True for a line that is torch's C++ frame of the watchdog's check of a work's time-out:
    the frames of a timeout whose record, when the log holds it above them, is that timeout
    already."""
    return "checkTimeout(" in text and _TIMEOUT_FRAME.search(text) is not None


def event_kind(text: str) -> str | None:
    """The kind of one-line event ``text`` is (:class:`~ppaux.triage.records.Event`), or None
    for a line that is none."""
    if _timeout(text) or ("frame #" in text and _CHECK_ERRORS.search(text) is not None):
        return "watchdog"
    if "TCPStore" in text and _STORE.search(text) is not None:
        return "store"
    if ("sigquit" in text or "SIGQUIT" in text) and _SIGQUIT.search(text) is not None:
        return "sigquit"
    if "ppaux capture:" in text:
        return "capture"
    if " NCCL WARN " in text and _NCCL_WARN.search(text) is not None:
        return "nccl-note" if harmless_warning(text) else "nccl-warn"
    if worker_died(text) is not None:
        return "death"
    if hang_words(text) is not None:
        return "hang"
    return None


#: torch's watchdog record, by its shape: behind its ``[Rank N]`` or ``[PG ... Rank N]`` tag,
#: or naming its work after a colon (``timeout: WorkNCCL(SeqNum=1, ...``). The words in a
#: sentence (``how to fix Watchdog caught collective operation timeout in NCCL?``, ``Watchdog
#: caught collective operation timeout: that is what we usually see``) are no record.
_WATCHDOG = lazy(
    r"\]\s?Watchdog caught collective|Watchdog caught collective operation timeout: ?Work\w{0,20}\("
)
#: A TCPStore record, by its shape: torch's C++ record (``[W925 00:17:23.009 TCPStore.cpp:125]``,
#: a ``[c10d]`` line, the place ``TCPStore.cpp:578`` in its frames) or an exception line that
#: names the store; never the word in a sentence.
_STORE = lazy(
    r"TCPStore\.cpp:\d|\[c10d\]|\[[WEIF]\d{4} \d\d:\d\d:\d\d|"
    r"(?:^\s{0,64}|\]:?\s)[\w.]{1,200}(?:Error|Exception): .{0,400}TCPStore"
)
#: The parent's SIGQUIT lines as sglang writes them (engine.py's ``Received sigquit from a
#: child process.``, 0.4's ``proces.``; the tokenizer manager's ``SIGQUIT received.
#: signum=...``) at the start of their message, never behind a sentence's words.
_SIGQUIT = lazy(
    r"(?:^|[\]|:>\t]\s{0,8}|^\s{1,64})(?:Received sigquit from a child proces|"
    r"SIGQUIT received\. signum=)"
)


#: The watchdog's words alone on a line (its record wrapped: the tag on the line before, the
#: work on the line after), and a line that is its tag alone (``[PG ID 6 ... Rank 1]``).
_WATCHDOG_ALONE = lazy(r"\s{0,8}Watchdog caught collective operation timeout:\s*$")
_TAG_ALONE = lazy(r"\s{0,8}\[[^\[\]]{0,300}\bRank \d{1,9}\]\s*$")


def watchdog_tagged(text: str, before: str | None) -> str | None:
    """The watchdog's record whole where ``text`` is its words alone and ``before``, the line
    just before it, its ``[... Rank N]`` tag alone (a record wrapped over lines): the two
    joined; None for any other line."""
    if before is None or "Watchdog caught" not in text or _WATCHDOG_ALONE.match(text) is None:
        return None
    if _TAG_ALONE.match(before) is None:
        return None
    return f"{before.strip()} {text.strip()}"


def _timeout(text: str) -> bool:
    """True for a record of a collective the watchdog found timed out."""
    return (
        ("Watchdog caught collective" in text and _WATCHDOG.search(text) is not None)
        or ("ProcessGroupNCCL.cpp:" in text and _NCCL_TIMEOUT.search(text) is not None)
        or ("checkTimeout" in text and _CHECK_TIMEOUT.search(text) is not None)
        or timeout_frame(text)
    )


#: NCCL's warning as NCCL writes it: after its ``[<device>]`` prefix or its source place
#: (``net_socket.cc:540``, ``socket.c:485``), not the words in a sentence about it.
_NCCL_WARN = lazy(r"(?:\[\d{1,6}\]|\.(?:cc|c|h|cu|cpp):\d+) NCCL WARN ")

#: NCCL's own prefix of its lines: ``<host>:<pid>:<thread> [<device>]``.
_NCCL_PREFIX = lazy(r"^\s*(?P<host>[\w.-]{1,253}):(?P<pid>\d{1,9}):\d{1,9} \[\d{1,6}\]")


def nccl_process(text: str) -> str | None:
    """'<host> pid <pid>' of a line under NCCL's own prefix, else None."""
    found = _NCCL_PREFIX.match(text)
    return None if found is None else f"{found.group('host')} pid {found.group('pid')}"
