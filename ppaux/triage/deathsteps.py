"""Next steps for a process another reports dead, of what the log does not say: by how it
ended (a kill, most often the kernel's OOM killer; a crash of its own; an error status of its
own)."""

from __future__ import annotations

from ppaux.triage.killsteps import killer_steps
from ppaux.triage.stepdata import Step

__all__ = ["death_steps", "record_steps"]


def death_steps(
    crash: bool, exited: bool, killer: str | None = None, relayed: bool = False
) -> list[Step]:
    """The steps for a dead process: ``crash``, it died of a crash of its own (SIGSEGV,
    SIGABRT); ``exited``, it ended with an exit status of its own; ``killer``, a runtime's or
    a launcher's memory limit ended it (:func:`~ppaux.triage.runtimedeaths.killer`);
    ``relayed``, the process that reports it relays an exception the other raised (its own
    traceback is the root); else it was killed."""
    if relayed:
        return _relayed_steps()
    if killer is not None:
        return killer_steps(killer)
    if crash:
        return _crash_steps()
    return _exit_steps() if exited else _killed_steps()


def _killed_steps() -> list[Step]:
    """A process another reports dead, of what the log does not say: the kernel's OOM kills
    and the dead process's own output."""
    where = "the dead process's host"
    return [
        Step(
            None,
            where,
            "a process died and the log does not say of what: on its host, look for the "
            "kernel's OOM killer ('Killed process', 'Out of memory') at that time",
        ),
        Step(("journalctl", "-k", "-g", "Killed process|Out of memory"), where, "or dmesg -T"),
        Step(("free", "-g"), where, "the host's memory, against what its processes hold"),
        Step(
            None,
            where,
            "and read the dead process's own log (a Ray worker's: "
            "/tmp/ray/session_latest/logs/ on its node; a torchrun rank's: its stderr)",
        ),
    ]


def _relayed_steps() -> list[Step]:
    """A process that relays the exception of one it started (vLLM's engine of a worker whose
    start-up raised): that worker's own traceback is the root; a kill only where its output
    holds none."""
    where = "the failing process's host"
    return [
        Step(
            None,
            where,
            "a process it started raised (a worker's start-up, as a rule: loading the model, "
            "its memory, its device): that process's own traceback is the root, printed above "
            "the relaying one under its own name (vLLM: '(VllmWorker rank=N pid=N)' or "
            "'(Worker pid=N)' before each line); collect the whole log from the start and run "
            "ppaux triage on it",
        ),
        Step(
            None,
            where,
            "where the log holds no traceback of it, rerun with its output kept (vLLM: "
            "VLLM_LOGGING_LEVEL=DEBUG); only then look for a kill of it on its host:",
        ),
        Step(("journalctl", "-k", "-g", "Killed process|Out of memory"), where, "or dmesg -T"),
    ]


def _exit_steps() -> list[Step]:
    """A process that ended with an error status of its own: no kill to look for; its own
    output holds the error."""
    where = "the dead process's host"
    return [
        Step(
            None,
            where,
            "a process ended with an error of its own (an exit status, no signal): its own "
            "output holds the error; read its stderr or its log file for its traceback",
        ),
        Step(
            None,
            where,
            "where its output is lost, run it again with its output kept (DeepSpeed: "
            "--enable_each_rank_log DIR; torchrun: --log-dir DIR --tee 3)",
        ),
    ]


def _crash_steps() -> list[Step]:
    """A process that died of a crash of its own (SIGSEGV, SIGABRT): where it crashed is in its
    core dump and its fault handler's output, not in the kernel's OOM kills."""
    where = "the dead process's host"
    return [
        Step(
            None,
            where,
            "a process crashed (a signal of its own: SIGSEGV, SIGABRT, ...) and the log does "
            "not say where: read its core dump, or make the next run write one",
        ),
        Step(("coredumpctl", "list"), where, "or the core file in its working directory"),
        Step(("ulimit", "-c", "unlimited"), where, "before the next run, for a core file"),
        Step(
            ("export", "PYTHONFAULTHANDLER=1"),
            where,
            "the next run prints every thread's Python frames when it crashes",
        ),
        Step(
            None,
            where,
            "and read the dead process's own log (its stderr) for what it did last",
        ),
    ]


def record_steps() -> list[Step]:
    """A child whose exit torchrun recorded, its exception in no log (torchrun's summary says
    ``error_file: <N/A>`` where the entry point is not decorated): how to make the next
    failure's traceback reach the summary, and where this one's is."""
    return [
        Step(
            None,
            "the host that ran the rank",
            "torchrun recorded only the child's exit code: its traceback went to that rank's "
            "own stderr (read it there, and triage it); torchrun's summary carries the "
            "traceback only where the script's entry point is decorated with @record (from "
            "torch.distributed.elastic.multiprocessing.errors import record), which writes "
            "it to the error_file the summary shows as <N/A> without it",
        ),
    ]
