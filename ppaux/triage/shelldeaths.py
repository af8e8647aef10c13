"""A process's death as a shell or a container runtime reports it, in its own words:

- bash's report of a child a signal ended, on its stderr: ``./entrypoint.sh: line 28:     7
  Killed                  python3 -m sglang.launch_server ...`` (the script and its line, the
  child's pid, the signal's description, the command); ``Killed`` is SIGKILL, what the
  kernel's OOM killer sends;
- docker compose's ``<service> exited with code 137``: the container's main process ended; a
  code of 128 + N is signal N (137: SIGKILL, from the container's memory limit or the host's
  OOM killer).

Each is read only where the tool writes it: bash's report after ``<script>: line N:``, compose's
as the whole line; never as words inside a sentence about them.
"""

from __future__ import annotations

import signal

from ppaux.patterns import lazy

__all__ = ["SHELL_MARKERS", "shell_death"]

#: What makes a line worth reading for these deaths (added to the scanner's markers).
SHELL_MARKERS: tuple[bytes, ...] = (b" exited with code ", b": line ")

#: The descriptions bash prints for the signals that end a job, and each one's signal.
_DESCRIBED = {
    "Killed": signal.SIGKILL,
    "Terminated": signal.SIGTERM,
    "Segmentation fault": signal.SIGSEGV,
    "Aborted": signal.SIGABRT,
    "Bus error": signal.SIGBUS,
    "Illegal instruction": signal.SIGILL,
    "Floating point exception": signal.SIGFPE,
}
_BASH = lazy(
    r"^(?P<script>[^\s:]{1,250}): line \d{1,9}: {1,16}(?P<pid>\d{1,9}) "
    r"(?P<words>" + "|".join(_DESCRIBED) + r")(?: {1,64}\(core dumped\))?"
    r"(?: {1,64}(?P<command>.*))?$"
)
_COMPOSE = lazy(r"^(?P<service>[A-Za-z0-9][\w.-]{0,252}) exited with code (?P<code>\d{1,3})\s*$")
#: A shell's exit status of a child a signal killed: 128 and the signal's number.
_SHELL_SIGNAL = 128
#: The characters of a command kept in who died.
_COMMAND = 80


def shell_death(text: str) -> tuple[str, str] | None:
    """(who, how) of the death bash's job report or docker compose's exit line ``text``
    reports ('pid 7 (python3 -m ...)', 'died: killed by SIGKILL (signal 9; bash's report of
    its child)'), or None for another line (an exit code of 0 included)."""
    line = text.strip("\r\n")
    if (bash := _BASH.match(line)) is not None:
        number = _DESCRIBED[bash["words"]]
        command = (bash["command"] or "").strip()
        if len(command) > _COMMAND:
            command = command[: _COMMAND - 3] + "..."
        who = f"pid {int(bash['pid'])}" + (f" ({command})" if command else "")
        return who, (
            f"died: killed by {number.name} (signal {int(number)}; bash's report of its child "
            f"in {bash['script']})"
        )
    if (compose := _COMPOSE.match(line)) is not None:
        code = int(compose["code"])
        if code == 0:
            return None
        return f"container {compose['service']} (docker compose)", _compose_end(code)
    return None


def _compose_end(code: int) -> str:
    """How a container compose reports ended with ``code``: 128 + a signal's number, or an
    exit status of its own."""
    number = code - _SHELL_SIGNAL
    if number == signal.SIGKILL:
        return (
            "died: killed by SIGKILL (exit code 137: 128 + signal 9; docker compose: the "
            "container's memory limit or the host's OOM killer)"
        )
    if 0 < number < signal.NSIG:
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"died: killed by {name} (exit code {code}: 128 + signal {number}; docker compose)"
    return f"died: exited with status {code} (docker compose)"
