"""The method a worker said it ran before its traceback, a few lines above it.

vLLM's worker wrapper writes ``Error executing method init_device. This might cause deadlock
...`` and then the traceback of the error; other lines may come between the two (the same
worker's progress, another worker's lines interleaved). :class:`WorkerMethods` keeps, per
stream, the last such line, and gives its method to the next traceback of that stream that
starts near it (:func:`~ppaux.triage.startup.near`); once given, it is spent.
"""

from __future__ import annotations

from ppaux.patterns import lazy
from ppaux.triage.lineformat import LogLine
from ppaux.triage.records import method_said
from ppaux.triage.startup import near

__all__ = ["METHOD_WORDS", "THREAD_WORDS", "WorkerMethods", "thread_said"]

#: Python's ``threading`` naming the thread whose traceback follows: ``Exception in thread
#: Thread-4 (forward_thread_func):`` (3.10 on; earlier, the name alone).
_THREAD = lazy(r"Exception in thread (?P<name>[^\n]{1,200}?):\s*$")


def thread_said(text: str) -> str | None:
    """The thread ``text`` (the line above a traceback's header) says raised it, or None."""
    found = _THREAD.search(text[:400])
    return None if found is None else found.group("name")


#: The words of a worker's line naming the method it ran (the scanner stops at them).
METHOD_WORDS = "Error executing method"
#: The words of ``threading``'s line naming the thread whose traceback follows (the scanner
#: stops at them).
THREAD_WORDS = "Exception in thread"
#: Lines that may stand between ``threading``'s line and the traceback it heads (other
#: processes' lines, a log record written in between).
_THREAD_NEAR = 10


class WorkerMethods:
    """Per stream, the last worker's line naming its method: (its line, the method); and the
    last line of ``threading`` naming a thread: (its line, the thread)."""

    def __init__(self) -> None:
        self._said: dict[str | None, tuple[int, str]] = {}
        self._threads: dict[str | None, tuple[int, str]] = {}

    def note(self, line: LogLine) -> None:
        """Keep the method or the thread ``line`` names, where it names one."""
        if THREAD_WORDS in line.text:
            thread = thread_said(line.text)
            if thread is not None:
                self._threads[line.stream] = (line.number, thread)
        if METHOD_WORDS not in line.text:
            return
        method = method_said(line.text)
        if method is not None:
            self._said[line.stream] = (line.number, method)

    def take(self, line: LogLine, known: str | None = None) -> str | None:
        """The method of the traceback starting at ``line``: ``known`` where the traceback's
        own lines said it, else the one said near above it in its stream; None where none
        was, or it was too far above. What was said in the stream is spent either way."""
        said = self._said.pop(line.stream, None)
        if known is not None or said is None or not near(said[0], line.number):
            return known
        return said[1]

    def thread(self, line: LogLine, known: str | None = None) -> str | None:
        """The thread that raised the traceback starting at ``line``: ``known`` where the line
        just above said it, else the one ``threading`` named a few lines above in its stream
        (other lines between them); None where none was. Spent either way."""
        said = self._threads.pop(line.stream, None)
        if known is not None or said is None or not 0 < line.number - said[0] <= _THREAD_NEAR:
            return known
        return said[1]
