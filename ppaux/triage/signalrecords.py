"""A native failure-signal handler's record of the signal a process died of: the lines Abseil's
handler writes through glog in every Ray worker (``src/ray/util/logging.cc``, Ray's
``InstallFailureSignalHandler``: ``*** SIGSEGV received at time=1644908038 on cpu 7 ***``, then
``PC: @     0x7f680548f777  (unknown)  xla::gpu::GpuExecutable::ExecuteThunksOrBef()`` and the
stack, each behind glog's ``[<time> E <pid> <tid>] logging.cc:317: `` and, under Ray's driver,
the worker's ``(MeshHostWorker pid=N) ``), and glog's own handler's header (``*** SIGSEGV
(@0x0) received by PID 1234 (TID 0x7f...) from PID 0; stack trace: ***``).

Either is that process's death of the signal: a failure of its own, never "no failure"; the
``PC:`` line names the function it died in.
"""

from __future__ import annotations

import signal

from ppaux.patterns import lazy
from ppaux.triage.faultdump import DUMP_TAIL
from ppaux.triage.records import Failure, Frame
from ppaux.triage.tracelines import MAX_MESSAGE

__all__ = ["SIGNAL_MARKERS", "died_of_signal", "signal_line", "signal_pc", "signal_record"]

#: What makes a line worth reading for this module (added to the crash markers).
SIGNAL_MARKERS: tuple[bytes, ...] = (b" received at time=", b") received by PID ", b"PC: @ ")

#: Abseil's header (``*** SIGSEGV received at time=N on cpu N ***``) and glog's (``*** SIGSEGV
#: (@0x0) received by PID N (TID 0x...) from PID N; stack trace: ***``).
_HEADER = lazy(
    r"\*\*\* (?P<name>SIG[A-Z]{2,7}) (?:received at time=\d{1,20}(?: on cpu \d{1,6})? \*\*\*|"
    r"\(@(?:0x)?[0-9a-fA-F]{1,16}\) received by PID (?P<pid>\d{1,9}))"
)
#: The handler's ``PC: @ <address> <frame size or (unknown)> <function>`` line.
_PC = lazy(
    r"(?:^|\s)PC: @\s{1,16}0x[0-9a-fA-F]{1,16}\s{1,16}(?:\(unknown\)|\d{1,9})\s{1,16}"
    r"(?P<function>[^\s(][^\n]{0,300}?)\s*$"
)


def signal_record(text: str) -> tuple[str, str] | None:
    """(type: the signal's name, message) of a failure-signal handler's header as triage reads
    it, or None for another line."""
    found = _HEADER.search(text)
    if found is None:
        return None
    name = found.group("name")
    number = signal.Signals.__members__.get(name)
    said = f"signal {int(number)}" if number is not None else "a signal"
    return name, (
        f"the process received {name} ({said}; its failure signal handler's record) and died "
        "of it: a crash in native code"
    )


def signal_pc(text: str) -> str | None:
    """The function a failure-signal handler's ``PC: @ ...`` line names, or None for another
    line (or one that names no function)."""
    found = _PC.search(text)
    if found is None or found.group("function") == "(unknown)":
        return None
    return found.group("function")


def signal_line(text: str, near: Failure | None) -> tuple[str, str] | bool:
    """What a failure-signal handler's line ``text`` is, after the crash record ``near`` (the
    same stream's, just before it, or None): the (type, message) of the death it begins; True
    for a line of ``near``'s death (its header again, its ``PC:`` line, kept in ``near``: the
    function it died in); False for another line."""
    if (caught := signal_record(text)) is not None:
        return True if near is not None and near.exception == caught[0] else caught
    pc = signal_pc(text)
    if pc is None or near is None or near.exception not in signal.Signals.__members__:
        return False
    if not near.frames:
        near.frames.append(Frame("", 0, pc))
        near.message = f"{near.message}; it died in {pc}"[:MAX_MESSAGE]
    return True


#: The fault handler's words for the signals a process's own fault raises (``Fatal Python
#: error: Segmentation fault``); ``Aborted`` is left out: an abort's cause is most often the
#: record before it (``terminate called ...``).
_FAULTS = ("Segmentation fault", "Bus error", "Floating point exception", "Illegal instruction")


def died_of_signal(exception: str | None, message: str) -> bool:
    """True for a failure that is a process's death of a fault of its own: a failure-signal
    handler's record (``SIGSEGV``, ...), or the fault handler's ``Fatal Python error:
    Segmentation fault`` (and the like)."""
    if exception is not None and exception in signal.Signals.__members__:
        return True
    return exception == "Fatal Python error" and message.startswith((*_FAULTS, DUMP_TAIL))
