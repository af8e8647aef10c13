"""sglang's parent process reporting that a child ended: its SIGCHLD handler writes
``Child process unexpectedly failed with exitcode=9. pid=4242`` (and, in earlier releases,
``... with an exit code 256. pid=4242``).

The number is the wait status :func:`os.waitpid` returns, not an exit code: its low seven bits
are the signal that killed the child (9: SIGKILL, what the kernel's OOM killer sends; 11:
SIGSEGV), with the core-dump bit (128) beside them; where they are zero, the exit code is the
status's second byte (256: exit code 1).
"""

from __future__ import annotations

import signal

from ppaux.patterns import lazy

__all__ = ["CHILD_EXIT_MARKER", "child_exit"]

#: What makes a line worth reading for a child's end.
CHILD_EXIT_MARKER = b"Child process unexpectedly failed with"

#: Read where sglang writes it: at the line's start, behind a logger's prefix (``] ``) or a
#: launcher's (``: ``, ``| ``), never inside a sentence about it ('... said that a Child
#: process unexpectedly failed ...'). A status of more digits than a wait status has is kept
#: whole, to be said unreadable, never read from its first digits.
_CHILD_EXIT = lazy(
    r"(?:^|(?<=[\]:|>] ))Child process unexpectedly failed with (?:exitcode=|an exit code )"
    r"(?P<status>\d{1,10})(?P<more>\d{1,64})?"
    r"\.? ?(?:pid=(?P<pid>\d{1,9}))?"
)
#: The signal's bits and the core-dump bit of a wait status.
_SIGNAL_BITS = 0x7F
_CORE_BIT = 0x80
#: The largest wait status (its signal, core-dump and exit-code bits: two bytes).
_LARGEST_STATUS = 0xFFFF


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def child_exit(text: str) -> tuple[str, str] | None:
    """(who, how) of the child sglang's parent reports ended in ``text`` ('child pid=4242',
    'died: killed by SIGKILL (signal 9; sglang's parent)'), or None for another line."""
    found = _CHILD_EXIT.search(text)
    if found is None:
        return None
    pid = found.group("pid")
    who = "a child process" if pid is None else f"child pid={int(pid)}"
    status = int(found.group("status"))
    if found.group("more") is not None or status > _LARGEST_STATUS:
        return who, "died: its wait status is not readable (not a wait status; sglang's parent)"
    number = status & _SIGNAL_BITS
    if number:
        core = "; core dumped" if status & _CORE_BIT else ""
        how = f"died: killed by {_signal_name(number)} (signal {number}{core}; sglang's parent)"
    else:
        how = f"died: exited with status {(status >> 8) & 0xFF} (sglang's parent)"
    return who, how
