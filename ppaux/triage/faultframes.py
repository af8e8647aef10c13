"""Where a process died that Python's fault handler reports (``Fatal Python error:
Segmentation fault``): the handler then dumps each thread's stack, most recent call first,
the thread that faulted under ``Current thread 0x... (most recent call first):``. That thread's
first frame line is where it died::

    Current thread 0x00007fa2972464c0 (most recent call first):
      File "/app/reward_wrapper.py", line 88 in _reward_feet_air_time

(the handler's own frame shape: ``line N in f``, no comma). It is given to the fault's record as
its innermost frame; the other threads' stacks are not where it died."""

from __future__ import annotations

from ppaux.patterns import lazy
from ppaux.triage.lineformat import LogLine
from ppaux.triage.records import Failure, Frame

__all__ = ["FATAL", "current_frame"]

#: The exception the fault handler's record is given (:mod:`ppaux.triage.crashes`).
FATAL = "Fatal Python error"
_HANDLER_FRAME = lazy(
    r'^\s*File "(?P<file>[^"]{1,500})", line (?P<line>\d{1,9}) in (?P<function>\S{1,200})\s*$'
)
_CURRENT = lazy(r"^\s*Current thread 0x[0-9a-fA-F]{1,16} \(most recent call first\):")
#: How many lines below the fault's record its current thread's first frame may stand: the
#: handler dumps at most 100 threads of at most 100 frames each (CPython's ``MAX_NTHREADS``
#: and ``MAX_FRAME_DEPTH``), a header and a blank line each: some 10,300 lines, twice that in
#: a double-spaced paste.
_REACH = 25_000


def current_frame(failures: list[Failure], line: LogLine, before: LogLine | None) -> bool:
    """Give the fault handler's last record among ``failures`` the frame ``line`` where
    ``line`` is the first frame of the thread that faulted (``before``: the line just above it,
    ``Current thread ...``), of the same process; True where it did."""
    found = _HANDLER_FRAME.match(line.text)
    if found is None or before is None or _CURRENT.match(before.text) is None:
        return False
    fault = next((f for f in reversed(failures) if f.exception == FATAL), None)
    if fault is None or fault.frames or fault.stream != line.stream:
        return False
    if not 0 < line.number - fault.line <= _REACH:
        return False
    fault.frames.append(Frame(found["file"], int(found["line"]), found["function"]))
    name = found["file"].replace("\\", "/").rsplit("/", 1)[-1]
    fault.message = fault.message.replace(
        "(the process aborted;",
        f"(the process died in {found['function']}, {name}:{found['line']}, its current "
        "thread's innermost frame;",
        1,
    )
    return True
