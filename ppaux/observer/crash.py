"""Where a fatal signal ended the check's child: the Python frames that :mod:`faulthandler`
writes, in the child, into memory its parent reads once the child has ended.

The child enables :mod:`faulthandler` on :func:`crash_file`'s descriptor before the target
loads; a ``SIGSEGV``, ``SIGFPE``, ``SIGABRT``, ``SIGBUS`` or ``SIGILL`` (a crash in native
code, ``os.abort()``, or ``os.kill`` of its own process) then writes the frames it was in,
most recent first, before the process ends with that signal as it would have. The parent
takes the innermost frame in the target's own files (:func:`crash_frame`): the line a finding
names, where the hook slot can name only the method (or none, between the methods, where a
finaliser, ``__del__``, runs). A target that points faulthandler at its own stream has its
frames read from the end of what it printed (:func:`printed_frame`). Imports nothing beyond
the standard library and :mod:`.lines`.
"""

from __future__ import annotations

import os
import re
from typing import Any

__all__ = ["MAX_CRASH_TEXT", "crash_file", "crash_frame", "frame_in", "printed_frame"]

#: The bytes of faulthandler's text read back: its frames are 100 at most, a line each.
MAX_CRASH_TEXT = 64 << 10

_FRAME = re.compile(
    r'^\s*File "(?P<file>[^"\n]{1,4096})", line (?P<line>\d{1,9}) in (?P<function>\S{1,200})'
)


def crash_file() -> int:
    """A descriptor of fresh memory (a temporary file where the system has no memory files)
    for the child's faulthandler."""
    try:
        fd: int = os.memfd_create("ppaux-crash")  # type: ignore[attr-defined,unused-ignore]
    except (AttributeError, OSError):
        import tempfile

        with tempfile.TemporaryFile() as file:
            fd = os.dup(file.fileno())
    return fd


def crash_frame(fd: int) -> dict[str, Any] | None:
    """``{"file", "line", "function"}`` of the innermost frame in the target's own files that
    faulthandler wrote into ``fd`` (None where it wrote none)."""
    try:
        text = os.pread(fd, MAX_CRASH_TEXT, 0).decode("utf-8", "replace")
    except OSError:
        return None
    return frame_in(text)


def printed_frame(output: bytes | bytearray) -> dict[str, Any] | None:
    """The same, from the end of what the child printed (``output``'s last bytes): where the
    target pointed faulthandler at its own stream (``faulthandler.enable(sys.stderr)``), its
    frames come there, after the last ``Fatal Python error:`` line."""
    text = bytes(output[-MAX_CRASH_TEXT:]).decode("utf-8", "replace")
    start = text.rfind("Fatal Python error: ")
    return None if start < 0 else frame_in(text[start:])


def frame_in(text: str) -> dict[str, Any] | None:
    """The innermost frame in the target's own files among faulthandler's lines in ``text``."""
    from ppaux.observer.drive import shown_path
    from ppaux.observer.lines import targets_file

    for line in text.splitlines():
        found = _FRAME.match(line)
        if found is not None and targets_file(found["file"]):
            line_number, function = int(found["line"]), found["function"]
            return {"file": shown_path(found["file"]), "line": line_number, "function": function}
    return None
