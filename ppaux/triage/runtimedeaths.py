"""A process's death as the runtime or the launcher that ran it reports it, in its own words:

- sglang's launcher: ``Rank 0 scheduler is dead. Please check if there are relevant logs.``,
  and on a line after it ``Exit code: -9`` (multiprocessing's exit code: a signal's number
  below 0); its engine's ``Scheduler or DataParallelController 1234 terminated with -9``;
- Ray's raylet: ``node_manager.cc:3069: 1 Workers (tasks / actors) killed due to memory
  pressure (OOM), 0 Workers crashed due to other reasons at node (ID: ..., IP: 10.0.0.1)``:
  Ray's memory monitor killed them, not the kernel;
- Slurm: ``slurmstepd: error: Detected 1 oom_kill event in StepId=4242.0`` (its older
  releases: ``Detected 8 oom-kill event(s) in step 4242.batch cgroup``), ``srun: error:
  <node>: task 1: Out Of Memory`` (the step's memory limit, its cgroup), ``srun: error: <node>:
  task 1: Exited with exit code 1`` and ``... task 0: Killed`` (srun ending the step's other
  tasks); ``slurmstepd: error: *** STEP 4242.0 ON node CANCELLED AT <time> DUE TO TIME LIMIT
  ***`` (the step ended by Slurm: its time limit, a pre-emption, ``scancel``) and ``srun: error:
  <node>: tasks 0-1,3: Terminated`` (its tasks ended with it);
- Kubernetes: ``Reason: OOMKilled`` in ``kubectl describe pod``'s container state: the
  container went past its memory limit;
- a shell's or docker compose's report of a child it ran (:mod:`ppaux.triage.shelldeaths`);
- the kernel's OOM killer's record, a shell's bare line (:mod:`ppaux.triage.kerneldeaths`).

Each is read where the tool writes it: at the line's start, behind a logger's prefix (``] ``)
or behind a wrapper's labels (Slurm's records: ``qdo-srun.py: srun#64: ``),
never as words inside a sentence about it. :func:`runtime_death` gives who died and how;
:func:`killer` names the mechanism whose own next steps apply.
"""

from __future__ import annotations

import re
import signal

from ppaux.patterns import lazy
from ppaux.triage.agentstops import AGENT_STOP_MARKER, agent_stop, stopped_from_outside
from ppaux.triage.kerneldeaths import KERNEL_MARKERS, KERNEL_OOM, kernel_death
from ppaux.triage.shelldeaths import SHELL_MARKERS, shell_death

__all__ = ["RUNTIME_MARKERS", "exit_code_after", "killer", "killer_hint", "runtime_death"]

#: What makes a line worth reading for these deaths (added to the scanner's markers).
RUNTIME_MARKERS: tuple[bytes, ...] = (
    b"scheduler is dead. Please check",
    b"Scheduler or DataParallelController ",
    b"killed due to memory pressure",
    b"oom_kill event",
    b"oom-kill event",
    b": Out Of Memory",
    b": Exited with exit code",
    b": Killed",
    b"CANCELLED AT",
    b": Terminated",
    b"OOMKilled",
    b"Exit code: ",
    b"has been marked dead because the detector",
    b"Raylet is terminated. Termination is unexpected",
    AGENT_STOP_MARKER,
    *SHELL_MARKERS,
    *KERNEL_MARKERS,
)

#: Where a tool's record begins: the line's start, or behind its logger's prefix.
_AT = r"(?:^|(?<=\] ))"
_SCHEDULER_DEAD = lazy(
    _AT + r"Rank (?P<rank>\d{1,6}) scheduler is dead\. Please check if there are relevant logs"
)
#: The exit code sglang's launcher logs after a dead scheduler's line.
_EXIT_CODE = lazy(_AT + r"Exit code: (?P<code>-?\d{1,4})\s*$")
_TERMINATED = lazy(
    _AT + r"Scheduler or DataParallelController (?P<pid>\d{1,9}) terminated with "
    r"(?P<code>-?\d{1,4})\s*$"
)
#: (the line's start, with its count, may be on a line of its own where a terminal wrapped it:
#: ``actors) killed due to memory pressure ...`` then starts the line read)
_RAY_OOM = lazy(
    r"(?:\.cc:\d{1,6}: (?P<killed>\d{1,9}) Workers \(tasks / |^\s{0,4})"
    r"actors\) killed due to memory pressure \(OOM\), (?P<crashed>\d{1,9}) Workers crashed "
    r"due to other reasons at node"
    r"(?: \(ID: [0-9a-f]{1,64}, IP: (?P<ip>[\w.:-]{1,64})\))?"
)
#: Labels a wrapper put before a tool's record: words without spaces, each closed by a colon
#: (``qdo-srun.py: srun#64: ``, a relay's ``StdErr: "``), never an exception's type (whose
#: message may quote a record).
_LABELS = r"^(?:(?![\w.]{0,60}(?:Error|Exception|Warning): )[\w.#@/-]{1,64}: ?\"?){0,4}"
_SLURM_OOM_EVENT = lazy(
    _LABELS + r"slurmstepd(?:-[\w.-]{1,253})?: error: Detected (?P<count>\d{1,9}) "
    r"(?:oom_kill events?|oom-kill event\(s\)) in "
    r"(?:StepId=|step )(?P<step>\d{1,12}(?:\.\w{1,32})?)"
)
_SRUN_TASK = lazy(
    _LABELS + r"srun: error: (?P<node>[\w.-]{1,253}): "
    r"tasks? (?P<tasks>\d{1,7}(?:[-,]\d{1,7}){0,16}): "
    r"(?:(?P<oom>Out Of Memory)|Exited with exit code (?P<code>\d{1,3})|(?P<killed>Killed)"
    r"|(?P<terminated>Terminated))\s*$"
)
#: slurmstepd's record of a step or job Slurm ended, and why where it says (``DUE TO TIME
#: LIMIT``, ``DUE TO PREEMPTION``, ``DUE TO JOB REQUEUE``; none: ``scancel`` or an
#: administrator). It may follow a progress bar's ``]`` on the same line.
_SLURM_CANCELLED = lazy(
    r"(?:^|(?<=\])|(?<=\] ))slurmstepd(?:-[\w.-]{1,253})?: error: \*\*\* (?P<what>STEP|JOB) "
    r"(?P<id>[\w.+-]{1,40}) ON (?P<node>[\w.-]{1,253}) CANCELLED AT [\w:.+-]{1,40}"
    r"(?: DUE TO (?P<why>[A-Z][A-Z ]{0,40}?))? \*\*\*"
)
_OOMKILLED = lazy(r"^\s{0,16}Reason:\s{1,32}OOMKilled\s*$")
#: Ray's record of a node whose heartbeats stopped (its raylet died, or the network to it
#: failed), and of a raylet that ended unexpectedly: the processes on that node are gone.
_RAY_NODE_DEAD = lazy(
    r"The node with node id: [0-9a-f]{1,64} and address: (?P<ip>[\w.:-]{1,64})"
    r"(?: and node name: [^\s]{1,253})? has been marked dead because the detector has missed"
)
_RAYLET_TERMINATED = lazy(r"Raylet is terminated\. Termination is unexpected\.")
#: Lines within which sglang's ``Exit code: N`` follows the dead scheduler's line.
_EXIT_NEAR = 4


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _code_end(code: int, by: str) -> str:
    """How a process multiprocessing reports with exit ``code`` ended."""
    if code < 0:
        return f"died: killed by {_signal_name(-code)} (signal {-code}; {by})"
    return f"died: exited with status {code} ({by})"


def runtime_death(text: str) -> tuple[str, str] | None:
    """(who, how) of the death a runtime's or a launcher's record in ``text`` reports
    ('rank 0 scheduler', 'died: killed by SIGKILL (signal 9; sglang's launcher)'), or None
    for another line."""
    if (stopped := agent_stop(text)) is not None:
        return stopped
    if (dead := _SCHEDULER_DEAD.search(text)) is not None:
        who = f"rank {int(dead['rank'])} scheduler"
        said = _EXIT_CODE.search(text.rsplit("\n", 1)[-1]) if "\n" in text else None
        if said is not None:
            return who, _code_end(int(said["code"]), "sglang's launcher")
        return who, "died: the log does not give its exit code (sglang's launcher)"
    if (ended := _TERMINATED.search(text)) is not None:
        code = int(ended["code"])
        if code == 0:
            return None
        return f"scheduler pid={int(ended['pid'])}", _code_end(code, "sglang's engine")
    if (ray := _RAY_OOM.search(text)) is not None:
        return _ray_death(ray)
    if (node := _RAY_NODE_DEAD.search(text)) is not None:
        return (
            f"Ray node {node['ip']}",
            "died: marked dead by Ray, its heartbeats stopped (its raylet crashed or was "
            "killed, or the network to it failed)",
        )
    if _RAYLET_TERMINATED.search(text) is not None:
        return (
            "a raylet",
            "died: terminated unexpectedly (Ray names SIGKILL by the user or the OOM killer, "
            "or a crash)",
        )
    if (event := _SLURM_OOM_EVENT.search(text)) is not None:
        return (
            f"a task of Slurm step {event['step']}",
            "died: killed by the OOM killer inside the step's memory limit (Slurm's cgroup: "
            f"{int(event['count'])} oom_kill event(s))",
        )
    if (cancelled := _SLURM_CANCELLED.search(text)) is not None:
        return _slurm_cancelled(cancelled)
    if (task := _SRUN_TASK.search(text)) is not None:
        who = f"Slurm task {task['tasks']} (on {task['node']})"
        if task["oom"] is not None:
            return who, "died: killed for memory (Slurm: Out Of Memory, the step's memory limit)"
        if task["killed"] is not None:
            return who, "was killed by srun (it ends a step's other tasks when one fails)"
        if task["terminated"] is not None:
            return who, "was terminated by Slurm (its step was cancelled or ran out of time)"
        return who, f"died: exited with status {int(task['code'])} (srun)"
    if _OOMKILLED.search(text) is not None:
        return (
            "a Kubernetes container",
            "died: killed for memory (Kubernetes OOMKilled: the container's memory limit)",
        )
    return shell_death(text) or kernel_death(text)


def _slurm_cancelled(found: re.Match[str]) -> tuple[str, str]:
    """Who Slurm's cancellation record names and how it ended."""
    who = f"Slurm {found['what'].lower()} {found['id']} (on {found['node']})"
    why = found["why"]
    if why == "TIME LIMIT":
        return who, "died: cancelled by Slurm at its time limit (the job's --time)"
    if why in ("PREEMPTION", "JOB REQUEUE"):
        return (
            who,
            f"died: cancelled by Slurm: pre-empted ({why.lower()}), not a failure of its own",
        )
    said = f" (due to {why.lower()})" if why else " (scancel, an administrator or a node's failure)"
    return who, f"died: cancelled by Slurm{said}"


def _ray_death(found: re.Match[str]) -> tuple[str, str] | None:
    crashed = int(found["crashed"])
    node = f" on {found['ip']}" if found["ip"] else ""
    if found["killed"] is None:  # the count is on the line before, cut off by a wrap
        return (
            f"Ray worker(s){node}",
            "died: killed by Ray's memory monitor (memory pressure on its node; raylet; how "
            "many, the line before says)",
        )
    killed = int(found["killed"])
    if killed:
        return (
            f"{killed} Ray worker(s){node}",
            "died: killed by Ray's memory monitor (memory pressure on its node; raylet)",
        )
    if crashed:
        return f"{crashed} Ray worker(s){node}", "died: its Ray worker process ended (raylet)"
    return None


def exit_code_after(dead: str, number: int, text: str, line: int) -> str | None:
    """The text of the dead scheduler's record ``dead`` (an event's, at line ``number``) with
    sglang's ``Exit code: N`` line ``text`` (at line ``line``, just after it) joined to it;
    None where ``text`` is no such line or ``dead`` no such record."""
    if "\n" in dead or _SCHEDULER_DEAD.search(dead) is None:
        return None
    if not 0 < line - number <= _EXIT_NEAR or _EXIT_CODE.search(text) is None:
        return None
    return f"{dead}\n{text.strip()}"


#: How each mechanism's deaths are worded (:func:`runtime_death`), and its name.
_KILLERS = (
    ("Ray's memory monitor", "ray-memory-monitor"),
    ("Slurm", "slurm-memory"),
    ("Kubernetes OOMKilled", "kubernetes-memory"),
    ("docker compose: the container's memory limit", "container-memory"),
)


def killer(how: str) -> str | None:
    """The mechanism that ended a process that died ``how``, where it has steps of its own
    ('ray-memory-monitor', 'slurm-memory', 'kubernetes-memory', 'container-memory', the
    kernel's OOM killer: 'kernel-memory'), or Slurm
    ending it ('slurm-cancel': its time limit, a pre-emption, a cancellation), or a signal from
    outside the job stopping torchrun ('outside-stop'); None for another death."""
    if "cancelled by Slurm" in how or "terminated by Slurm" in how:
        return "slurm-cancel"
    if stopped_from_outside(how):
        return "outside-stop"
    if "memory" not in how:
        return None
    if KERNEL_OOM in how:
        return "kernel-memory"
    return next((name for words, name in _KILLERS if words in how), None)


_HINTS = {
    "kernel-memory": (
        "the kernel's OOM killer ended it when memory ran out (its record gives the process's "
        "anon-rss); 'free -g' and the other processes on the host show what held the rest; "
        "use less host memory (fewer processes per host, no other jobs beside it) or add memory"
    ),
    "outside-stop": (
        "the job was stopped from outside (cancelled, pre-empted, deleted or timed out), not by "
        "a failure inside it: find who sent the signal at that time (the scheduler's record "
        "of the job: sacct, 'kubectl get events', the platform's experiment log; a timeout "
        "wrapper; a user's kill)"
    ),
    "slurm-cancel": (
        "'sacct -j JOB --format=JobID,State,Elapsed,Timelimit' (JOB: the step's number before "
        "its dot) shows its state and times; for a time limit ask for more (--time) or "
        "checkpoint and resume; a pre-emption's requeue restarts it"
    ),
    "container-memory": (
        "exit code 137 is SIGKILL: the container's memory limit or the host's OOM killer "
        "ended it: 'docker inspect <container> --format {{.State.OOMKilled}}' says whether its "
        "limit did, 'journalctl -k' (or dmesg -T) shows the kernel's 'Killed process'; raise "
        "the limit (mem_limit, deploy.resources.limits.memory) or use less host memory"
    ),
    "ray-memory-monitor": (
        "Ray's memory monitor killed it when its node ran short of host memory: the raylet's "
        "log on that node (raylet.out; 'ray logs raylet.out --node-ip <ip>') names the "
        "workers and their memory; give the node more memory or run fewer tasks at once "
        "(RAY_memory_usage_threshold sets when the monitor kills)"
    ),
    "slurm-memory": (
        "the job's memory limit (its cgroup) was reached, not the host's: 'sacct -j <job> "
        "--format=JobID,State,ReqMem,MaxRSS' shows what it asked for and used; ask for more "
        "(--mem, --mem-per-gpu) or use less host memory"
    ),
    "kubernetes-memory": (
        "the container went past its memory limit (resources.limits.memory): 'kubectl "
        "describe pod' and 'kubectl top pod' show the limit and the use; raise the limit or "
        "use less host memory"
    ),
}


def killer_hint(name: str) -> str:
    """Where to look, for a process the mechanism ``name`` (:func:`killer`) ended."""
    return _HINTS[name]
