"""The last line of Python's fault handler's dump, where the log holds no more of it: after
``Fatal Python error: <signal>`` and each thread's stack, Python 3.10 and later list the
extension modules the process had loaded (``Extension modules: numpy.core._multiarray_umath,
torch._C, ... (total: 35)``). A paste that starts below the signal's line still shows that the
process crashed, of a fault of its own: its dump, then its core, say where; never the kernel's
OOM killer first. Read only where the line names its process (a launcher's or Ray's tag): an
unnamed one may be any process's, aborted by another's failure (a watchdog's abort ends in the
same dump).
"""

from __future__ import annotations

from ppaux.patterns import lazy
from ppaux.triage.faultframes import FATAL

__all__ = ["DUMP_TAIL", "FAULT_DUMP_MARKER", "fault_dump"]

#: What makes a line worth reading for this record (added to the scanner's markers).
FAULT_DUMP_MARKER = b"Extension modules: "
#: How such a record's message begins: the words :func:`~ppaux.triage.signalrecords.
#: died_of_signal` reads as a process's own fault.
DUMP_TAIL = "the tail of Python's fault handler dump"
#: The handler's words at the line's start or behind a launcher's process tag that no layer
#: took off (``(RayWorkerWrapper pid=14390)``, its colour's codes written as text), then the
#: modules' dotted names to the line's end (a line wrapped in the paste may end after any of
#: them): a line another process's output ran into (``...PIL._imaging[rank5]:[E226 ...``) is
#: that output's, not a dump's.
_TAIL = lazy(
    r"(?:^|[)\]]\S{0,8} )\s{0,8}Extension modules: "
    r"[A-Za-z_][\w.]{0,200}(?:, [A-Za-z_][\w.]{0,200}){0,5000},?(?: \(total: \d{1,6}\))?\s*$"
)
#: How far into a line the handler's words are looked for, and the longest line read.
_REACH = 200
_LONGEST = 20_000


def fault_dump(text: str) -> tuple[str, str] | None:
    """(type, message) of the last line of a fault handler's dump, its first lines not in the
    log; None for another line."""
    if "Extension modules: " not in text[:_REACH] or len(text) > _LONGEST:
        return None
    if _TAIL.search(text) is None:
        return None
    return FATAL, (
        f"{DUMP_TAIL} (its list of extension modules): the process crashed of a fault of its "
        "own; the signal and its stack stand above this line, not in this log"
    )
