"""A process's death as the kernel or a shell reports it with no more than a line:

- the kernel's OOM killer, as ``dmesg`` (``[ 1234.5678] `` uptime, or ``dmesg -T``'s
  ``[Sun Mar 24 23:54:53 2024] ``), ``journalctl -k`` and syslog (``Dec 03 14:56:08 node-a
  kernel: ``) print it: ``Out of memory: Killed process 6154 (python) total-vm:...`` (a
  cgroup's: ``Memory cgroup out of memory: Killed process ...``) and the record before it,
  ``oom-kill:constraint=CONSTRAINT_NONE,...,task=python,pid=6154,uid=1000``;
- a shell's report of its foreground child a signal ended, the line alone, as an interactive
  shell prints it: ``Segmentation fault (core dumped)``, ``Killed``, ``Aborted (core
  dumped)``, ``Bus error (core dumped)`` (bash's report inside a script, with its line and the
  child's pid, is :mod:`ppaux.triage.shelldeaths`'s).

Each is read only as the whole line (behind the kernel's stamps), never as words in a
sentence about it.
"""

from __future__ import annotations

import signal

from ppaux.patterns import lazy

__all__ = ["KERNEL_MARKERS", "KERNEL_OOM", "bare_death", "bare_kill", "kernel_death"]

#: What makes a line worth reading for these deaths (added to the scanner's markers).
KERNEL_MARKERS: tuple[bytes, ...] = (
    b"Killed process ",
    b"oom-kill:",
    b"Segmentation fault",
    b"Killed",
    b"Aborted",
    b"Bus error",
    b"Illegal instruction",
    b"Floating point exception",
)

#: The words of a death the kernel's OOM killer caused (:func:`kernel_death`'s ``how``).
KERNEL_OOM = "killed by the kernel's OOM killer"

#: The descriptions a shell prints, alone on a line, for the signals that end its child.
_DESCRIBED = {
    "Killed": signal.SIGKILL,
    "Segmentation fault": signal.SIGSEGV,
    "Aborted": signal.SIGABRT,
    "Bus error": signal.SIGBUS,
    "Illegal instruction": signal.SIGILL,
    "Floating point exception": signal.SIGFPE,
}
_BARE = lazy(r"^\s{0,16}(?P<words>" + "|".join(_DESCRIBED) + r")(?: ?\(core dumped\))?\s*$")
#: The kernel's stamps before its record: dmesg's uptime or its -T time, syslog's and
#: journalctl's ``<time> <host> kernel: `` (a collector's prefix before them is peeled already).
_STAMP = (
    r"^\s{0,16}(?:\[\s{0,12}\d{1,10}\.\d{1,9}\]\s{1,4}|\[[A-Z][a-z]{2} [^\]]{1,40}\]\s{1,4})?"
    r"(?:[^\n]{0,120}?\bkernel: (?:\[\s{0,12}\d{1,10}\.\d{1,9}\]\s{1,4})?)?"
)
_OOM_KILLED = lazy(
    _STAMP + r"(?P<cgroup>Memory cgroup out of memory|Out of memory): Killed process "
    r"(?P<pid>\d{1,10}) \((?P<name>[^)\n]{1,64})\)"
)
_OOM_KILL = lazy(
    _STAMP + r"oom-kill:constraint=(?P<constraint>\w{1,40}),[^\n]{0,2000}?"
    r"\btask=(?P<name>[^,\n]{1,64}),pid=(?P<pid>\d{1,10})\b"
)


def kernel_death(text: str) -> tuple[str, str] | None:
    """(who, how) of the death the kernel's OOM killer record or a shell's bare line ``text``
    reports ('pid 6154 (python)', "died: killed by the kernel's OOM killer ..."), or None for
    another line."""
    line = text.strip("\r\n")
    if (killed := _OOM_KILLED.match(line)) is not None:
        limit = "its memory cgroup's limit" if killed["cgroup"] != "Out of memory" else "the host"
        return f"pid {int(killed['pid'])} ({killed['name']})", (
            f"died: {KERNEL_OOM} (SIGKILL; {limit} ran out of memory)"
        )
    if (record := _OOM_KILL.match(line)) is not None:
        cgroup = record["constraint"] == "CONSTRAINT_MEMCG"
        limit = "its memory cgroup's limit" if cgroup else "the host"
        return f"pid {int(record['pid'])} ({record['name']})", (
            f"died: {KERNEL_OOM} (SIGKILL; {limit} ran out of memory)"
        )
    if (bare := _BARE.match(line)) is not None:
        number = _DESCRIBED[bare["words"]]
        return "a process the shell ran (its line names no pid)", (
            f"died: killed by {number.name} (signal {int(number)}; the shell's report of its child)"
        )
    return None


def bare_kill(text: str) -> bool:
    """True for the shell's bare ``Killed`` line (its child ended by SIGKILL, no pid named)."""
    bare = _BARE.match(text.strip("\r\n"))
    return bare is not None and bare["words"] == "Killed"


def bare_death(text: str) -> bool:
    """True for a shell's bare line of its child's death (``Segmentation fault (core dumped)``,
    ``Killed``, ...): the end of the command the shell ran, whose output the log is."""
    return _BARE.match(text.strip("\r\n")) is not None
