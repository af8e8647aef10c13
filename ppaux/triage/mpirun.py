"""Open MPI's launcher reporting that a rank it started died of a signal::

    mpirun noticed that process rank 0 with PID 1234 on node host-a exited on signal 9 (Killed).

(``prterun`` and ``orterun`` write the same words.) The rank is MPI's; the signal ended it and
the log does not say what sent it (SIGKILL: most often the kernel's OOM killer).
"""

from __future__ import annotations

import re
import signal

from ppaux.patterns import lazy
from ppaux.triage.longnumbers import number_said

__all__ = ["MPIRUN_MARKER", "mpirun_death"]

#: What makes a line worth reading for a rank's death that mpirun reports.
MPIRUN_MARKER = b"noticed that process rank"

#: A number, or its start and end where a record kept only those (``123 ... 789``).
_NUMBER = r"\d+(?: \.\.\. \d+)?"
_NOTICED = lazy(
    rf"\b(?P<launcher>mpirun|prterun|orterun) noticed that process rank (?P<rank>{_NUMBER}) "
    rf"with PID (?P<pid>{_NUMBER}) on node (?P<node>[\w.-]{{1,253}}) exited on signal "
    rf"(?P<signal>{_NUMBER})\b"
)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def mpirun_death(text: str) -> tuple[str, str] | None:
    """(who, how) of the rank mpirun reports died in ``text`` ('rank 0 (pid 1234 on
    host-a)', 'died: killed by SIGKILL (signal 9; mpirun)'), or None for another line."""
    found = _NOTICED.search(text)
    if found is None:
        return None
    if len(found["signal"]) > 3:
        return who_of(found), f"died: killed by a signal {number_said(found['signal'], 3)} (mpirun)"
    number = int(found.group("signal"))
    who = who_of(found)
    how = f"died: killed by {_signal_name(number)} (signal {number}; {found['launcher']})"
    return who, how


def who_of(found: re.Match[str]) -> str:
    """The rank mpirun's record ``found`` names, its numbers as they can be read."""
    rank, pid = number_said(found["rank"], 6), number_said(found["pid"], 9)
    return f"rank {rank} (pid {pid} on {found['node']})"
