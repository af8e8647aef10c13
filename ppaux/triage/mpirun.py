"""Open MPI's launcher reporting that a rank it started died of a signal::

    mpirun noticed that process rank 0 with PID 1234 on node host-a exited on signal 9 (Killed).

(``prterun`` and ``orterun`` write the same words.) The rank is MPI's; the signal ended it and
the log does not say what sent it (SIGKILL: most often the kernel's OOM killer).
"""

from __future__ import annotations

import signal

from ppaux.patterns import lazy

__all__ = ["MPIRUN_MARKER", "mpirun_death"]

#: What makes a line worth reading for a rank's death that mpirun reports.
MPIRUN_MARKER = b"noticed that process rank"

_NOTICED = lazy(
    r"\b(?P<launcher>mpirun|prterun|orterun) noticed that process rank (?P<rank>\d{1,6}) "
    r"with PID (?P<pid>\d{1,9}) on node (?P<node>[\w.-]{1,253}) exited on signal "
    r"(?P<signal>\d{1,3})\b"
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
    number = int(found.group("signal"))
    who = f"rank {int(found.group('rank'))} (pid {int(found.group('pid'))} on {found['node']})"
    how = f"died: killed by {_signal_name(number)} (signal {number}; {found['launcher']})"
    return who, how
