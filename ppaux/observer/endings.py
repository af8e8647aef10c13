"""How the check's child ended, as the target's failures (PP715): a timeout, an exit or a
signal before or after its last record, processes and timers it left, signals it sent this
process, forks; read from :class:`~ppaux.observer.child.ChildEnd` and the hook slot's record.
Imports nothing beyond the standard library, :mod:`.findings` and :mod:`.signals` (:mod:`.child`
for its types)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ppaux.observer.findings import Ending
from ppaux.observer.signals import SignalLog

if TYPE_CHECKING:
    from ppaux.observer.child import ChildEnd
    from ppaux.report import ReportBuilder

__all__ = [
    "LOADING",
    "SETTING_UP",
    "LeftBehind",
    "endings",
    "foreign_signals",
    "left_behind",
    "timers_left",
]


class LeftBehind(SignalLog, Protocol):
    """What the target's processes did besides ending, as the check's process saw it: the
    child's end (:class:`~ppaux.observer.child.ChildEnd`) or an in-hand check's guard
    (:class:`~ppaux.observer.handguard.HandGuard`)."""

    #: The processes it started that were still running at the end (killed), each named.
    outlived: list[str]
    #: The pids of forks that tried to answer for it.
    forks: set[int]


#: The most distinct signals a finding names (there are fewer than 70 signals in all).
_MOST_SIGNALS = 64

#: The stages the child announces in the hook slot besides the target's methods: importing the
#: target (its module, the observer made), and ppaux's set-up after it (the implementation, the
#: wire, the stand-ins) before the first step.
LOADING = "loading the target"
SETTING_UP = "setting up"
#: How each stage is said in a finding.
_STAGES = {
    LOADING: "while still loading the target (importing its module, making the observer)",
    SETTING_UP: (
        "after the target loaded, while ppaux set up the paths (the implementation, the wire, "
        "the stand-ins), before the first step"
    ),
}
#: What sends each signal that ends a process when no code of its own raised it.
_SENDERS = {
    "SIGKILL": (
        "the kernel killed it (at a hard CPU-time limit, RLIMIT_CPU, or out of memory), or "
        "another process did"
    ),
    "SIGXCPU": "its CPU-time limit (RLIMIT_CPU, set by setrlimit or the shell) ran out",
    "SIGXFSZ": "it wrote past its file-size limit (RLIMIT_FSIZE)",
}


def timers_left(left: list[tuple[str, float]]) -> Ending:
    """The interval timers the target left running (signal name, seconds left), cancelled."""
    shown = ", ".join(f"{name} in {seconds:g} s" for name, seconds in left[:3])
    return Ending(
        "timers",
        f"the target left a timer running ({shown}: signal.alarm or setitimer); it was "
        "cancelled, but in sglang the signal would come later and end the scheduler",
    )


def endings(
    end: ChildEnd,
    timeout_s: float,
    hook: dict[str, Any] | None = None,
    lowered: dict[str, int] | None = None,
) -> list[Ending]:
    """How the child ended, as the target's failures (none for a child that finished);
    ``hook`` is the child's last record of a hook it began and did not end; ``lowered``: the
    limits the run set below their defaults, each with its default."""
    import signal

    found: list[Ending] = []
    flooded = getattr(end, "flooded", None)
    if flooded is not None:
        # As for garbled records: it was stopped there, and that is how it ended.
        name, value, where = flooded
        default = (lowered or {}).get(name)
        found.append(_flooded(name, value, where, getattr(end, "costly", None), default))
    elif end.garbled:
        # The stream it wrote over is how it ended: its process was stopped there, so its
        # exit status and its silence afterwards say nothing more about the target.
        found.append(
            Ending("garbled", f"the target's process wrote over its records: {end.garbled}")
        )
    elif end.timed_out:
        found.append(_timeout(timeout_s, hook))
    elif not end.finished:
        code = end.returncode
        causes = " (os._exit, abort, a crash in native code, or closed descriptors)"
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = str(-code)
            how = f"was killed by signal {name}"
            causes = f": {_SENDERS[name]}" if name in _SENDERS else causes
        else:
            how = f"exited with status {code}"
        method, location = _running(hook)
        during = _during(method, getattr(end, "step", None))
        if code is not None and code < 0 and name in (getattr(end, "signalled", None) or ()):
            # The signal the target's code sent ppaux's process, its parent: rank 0's process
            # is the child's own child, so the same code there signals the child.
            during = _during(method if method in _STAGES else None, None) or _at(end)
            causes = _FROM_RANK0
        crashed_at = getattr(end, "crashed_at", None)
        if crashed_at is not None:
            # The line it ended on (faulthandler's frames), not only where the method is.
            location = crashed_at
            during += f" in {crashed_at['function']} at {crashed_at['file']}:{crashed_at['line']},"
        found.append(
            Ending(
                "signal" if code is not None and code < 0 else "exit",
                f"the target's process {how}{during} before it sent every record{causes}; its "
                "output says more",
                location,
            )
        )
    elif end.lingered:
        found.append(
            Ending(
                "timeout",
                f"the target's process sent every record, then did not exit within its timeout "
                f"({timeout_s:g} s) and was killed with its whole process group: its code hung "
                "on the way out (a replaced sys.stdout's flush, a finaliser, a thread)",
            )
        )
    elif end.returncode and not end.killed:
        found.append(_after_the_records(end.returncode))
    found.extend(left_behind(end))
    return found


def left_behind(end: LeftBehind) -> list[Ending]:
    """What the target did besides ending: processes that outlived it, signals it sent this
    process, forks."""
    found: list[Ending] = []
    if end.outlived:
        found.append(
            Ending(
                "outlived",
                f"a process the target started outlived the run: {len(end.outlived)} "
                f"({', '.join(end.outlived[:5])}) still running when the target's process ended "
                "were killed; in sglang they would run on beside the scheduler",
            )
        )
    if getattr(end, "signalled", None):
        names = end.signalled[:_MOST_SIGNALS]
        more = len(end.signalled) - len(names)
        names += [f"{more} more"] if more > 0 else []
        found.append(
            Ending(
                "signalled",
                f"ppaux's process received {', '.join(names)} while the target ran "
                "(its code signalled its parent: os.kill(os.getppid(), ...)); in sglang the "
                "signal would reach the process that started the scheduler",
            )
        )
    if end.forks:
        found.append(
            Ending(
                "fork",
                f"the target forked: {_copies(len(end.forks))} of the checking process tried to "
                f"answer for it and {'was' if len(end.forks) == 1 else 'were'} stopped; only the "
                "original process's records count",
            )
        )
    return found


def _copies(count: int) -> str:
    return "1 copy" if count == 1 else f"{count:,} copies"


#: What each bound on the records says the child went past.
_FLOODS = {
    "max_record_bytes": "sent a record longer than {value:,} bytes",
    "max_step_records": "sent more than {value:,} records in one step",
    "max_run_record_bytes": "sent more than {value:,} bytes of records in all",
}


def _flooded(
    name: str, value: int, where: str, costly: int | None = None, default: int | None = None
) -> Ending:
    """The child went past the bound ``name`` (``value`` in the run) on its records, ``where``
    the run was (``costly``: a record that would cost more than that many bytes to read;
    ``default``: the limit's default, where the run set it lower)."""
    what = _FLOODS.get(name, "sent more than {value:,}").format(value=value)
    if costly is not None:
        what = (
            f"sent a record that would take more than {costly:,} bytes of memory to read "
            "(objects packed tighter than a record's)"
        )
    if default is not None:
        # A bound set below its default: the check's own records may reach it.
        return Ending(
            "flooded",
            f"the check's process {what} ({where}; limit {name} reached, set below its "
            f"default of {default:,} for this run): it was stopped there; a correct "
            "observer's records can reach a lowered limit, so raise it to check on",
            limit=(name, value),
        )
    return Ending(
        "flooded",
        f"the target's process {what} ({where}; limit {name} reached), far more than the "
        "check's own records: it was killed with its whole process group there (its code "
        "wrote to the check's records descriptor)",
        limit=(name, value),
    )


def _after_the_records(code: int) -> Ending:
    """The child sent every record, then ended with status ``code`` (not 0; negative: the
    signal), where ppaux's own child exits 0: the target's code, on the way out."""
    import signal

    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = str(-code)
        how, kind = f"was killed by signal {name}", "signal"
    else:
        how, kind = f"exited with status {code}", "exit"
    return Ending(
        kind,
        f"the target's process sent every record, then {how} on the way out, as it shut "
        "down after its last step (a replaced sys.stdout's or sys.stderr's flush, a finaliser "
        "(__del__) of an object it kept, a thread); in sglang the scheduler would end so",
    )


#: Why the child got a signal that the target's code also sent ppaux's process (as sglang's
#: run_scheduler_process sends SIGQUIT to its parent on a failure: scheduler.py 0.5.19
#: l.5605, 0.5.23 l.6373).
_FROM_RANK0 = (
    ": the signal the target's code sends its parent (ppaux's process received it too); "
    "rank 0's process runs as this process's child, so there the same code signalled this "
    "process, where in sglang rank 0's scheduler would signal the launcher that started it"
)


def _at(end: object) -> str:
    step = getattr(end, "step", None)
    return "" if step is None else f" at batch size {step[0]}, step {step[1]},"


def _during(method: str | None, step: tuple[int, int] | None) -> str:
    """Where the child was when it ended, as a clause: the method it was running and the step
    it was at; between the methods, what runs there (ppaux describing and sending what they
    returned, and the target's finalisers, ``__del__``, as ppaux lets go of its objects)."""
    at = "" if step is None else f" at batch size {step[0]}, step {step[1]}"
    if method in _STAGES:
        return f" {_STAGES[method]},"
    if method is not None:
        return f" while {method} ran{at},"
    if step is None:
        return ""
    return (
        f" between the observer's methods{at} (while ppaux described and sent what they "
        "returned, where a finaliser of the target's, __del__, runs as ppaux lets go of its "
        "objects),"
    )


def _running(hook: dict[str, Any] | None) -> tuple[str | None, dict[str, Any] | None]:
    """The method the child said it was running (None between hooks), and where it is
    defined."""
    if hook is None:
        return None, None
    where = hook.get("where")
    location = None
    if isinstance(where, list) and len(where) == 3 and isinstance(where[1], int):
        location = {"file": str(where[0]), "line": where[1], "function": str(where[2])}
    return str(hook.get("method"))[:100], location


def _timeout(timeout_s: float, hook: dict[str, Any] | None) -> Ending:
    """The child sent nothing in time: in the hook it said it was running, if any."""
    head = (
        f"the target's process did not finish a step within its timeout ({timeout_s:g} s, "
        "whatever it sent meanwhile) and was killed with its whole process group"
    )
    method, location = _running(hook)
    if method in _STAGES:
        return Ending("timeout", f"{head}, {_STAGES[method]}: it hangs")
    if method is None:
        return Ending(
            "timeout",
            f"{head}, between the observer's methods (while ppaux described what they "
            "returned, or sent it down a path): a value of the target's that takes that long "
            "to walk, or a wire that does not answer",
        )
    return Ending("timeout", f"{head} while {method} ran: it hangs", location)


def foreign_signals(report: ReportBuilder, end: SignalLog) -> None:
    """The signals another process than the target's sent this one while the check ran, in
    the report's data (``observer.signals_from``) and notes."""
    if not end.foreign:
        return
    report.data.setdefault("observer", {})["signals_from"] = [
        {"signal": name, "pid": pid} for name, pid in end.foreign
    ]
    for name, pid in end.foreign:
        sender = "the kernel" if pid == 0 else f"pid {pid}"
        report.notes.append(
            f"ppaux's process received {name} from {sender}, which is neither the target's "
            "process nor one it started: taken, and the check went on"
        )
