"""Next steps for a process that a runtime's or a launcher's own memory limit ended (Ray's
memory monitor, Slurm's cgroup, a Kubernetes or docker container's limit): where that
mechanism records what it killed and what sets its limit, not the kernel's OOM killer on a
host of one's own (a docker container's exit code 137 may be either: both are looked at)."""

from __future__ import annotations

from ppaux.triage.stepdata import Step

__all__ = ["killer_steps"]


def killer_steps(killer: str) -> list[Step]:
    """The steps for a process the mechanism ``killer`` ended ('ray-memory-monitor',
    'slurm-memory', 'kubernetes-memory', 'container-memory', 'slurm-cancel', 'outside-stop',
    'kernel-memory')."""
    if killer == "ray-memory-monitor":
        return _ray_steps()
    if killer == "slurm-memory":
        return _slurm_steps()
    if killer == "slurm-cancel":
        return _slurm_cancel_steps()
    if killer == "container-memory":
        return _container_steps()
    if killer == "outside-stop":
        return _outside_steps()
    if killer == "kernel-memory":
        return _kernel_steps()
    return _kubernetes_steps()


def _ray_steps() -> list[Step]:
    where = "the Ray cluster's head node"
    return [
        Step(
            None,
            where,
            "Ray's memory monitor killed the workers when their node ran short of host memory: "
            "the raylet's log names them and what they held",
        ),
        Step(("ray", "logs", "raylet.out"), where, "add --node-ip <the node's IP> from the line"),
        Step(
            None,
            where,
            "give the node more host memory, run fewer tasks or actors at once (their "
            "num_cpus/memory requests), or move the kill threshold: RAY_memory_usage_threshold "
            "(0.95 by default; RAY_memory_monitor_refresh_ms=0 turns the monitor off)",
        ),
    ]


def _slurm_steps() -> list[Step]:
    where = "a Slurm login node"
    return [
        Step(
            None,
            where,
            "the job's tasks reached its memory limit (Slurm's cgroup), not the host's: "
            "compare what it asked for with what it used",
        ),
        Step(
            None,
            where,
            "sacct -j JOB --format=JobID,State,ExitCode,ReqMem,MaxRSS (JOB: the step's number "
            "before its dot) shows both",
        ),
        Step(
            None,
            where,
            "ask for more memory (--mem, --mem-per-gpu, --mem-per-cpu) or use less host memory "
            "(fewer loader workers, a smaller CPU-side cache)",
        ),
    ]


def _slurm_cancel_steps() -> list[Step]:
    where = "a Slurm login node"
    return [
        Step(
            None,
            where,
            "Slurm ended the step (its time limit, a pre-emption or a cancellation), not a "
            "failure of the program: see which and how long it ran",
        ),
        Step(
            None,
            where,
            "sacct -j JOB --format=JobID,State,Elapsed,Timelimit (JOB: the step's number "
            "before its dot)",
        ),
        Step(
            None,
            where,
            "for TIMEOUT ask for more time (--time) or checkpoint and resume; for PREEMPTED or "
            "REQUEUED the requeue restarts it; for CANCELLED, who cancelled it (sacct's State "
            "names the user)",
        ),
    ]


def _container_steps() -> list[Step]:
    where = "the container's host"
    return [
        Step(
            None,
            where,
            "exit code 137 is SIGKILL: the container's memory limit or the host's OOM killer "
            "ended its main process",
        ),
        Step(
            ("docker", "inspect", "CONTAINER", "--format", "{{.State.OOMKilled}}"),
            where,
            "true: its own memory limit did (CONTAINER: its name, from 'docker compose ps -a')",
        ),
        Step(("journalctl", "-k", "-g", "Killed process|Out of memory"), where, "or dmesg -T"),
        Step(
            None,
            where,
            "raise the container's memory limit (mem_limit or deploy.resources.limits.memory; "
            "docker run --memory) or use less host memory",
        ),
    ]


def _kubernetes_steps() -> list[Step]:
    where = "a host with kubectl"
    return [
        Step(
            None,
            where,
            "the container went past its memory limit (resources.limits.memory) and the "
            "kubelet's OOM kill ended it (exit code 137)",
        ),
        Step(
            None,
            where,
            "kubectl describe pod POD shows its Limits and Last State; kubectl top pod POD "
            "--containers what it uses now",
        ),
        Step(
            None,
            where,
            "raise the container's memory limit (and request), or use less host memory",
        ),
    ]


def _outside_steps() -> list[Step]:
    """torchrun stopped by a signal from outside the job: who sent it, not a failure inside."""
    where = "where the job was started"
    return [
        Step(
            None,
            where,
            "a signal from outside stopped torchrun and it stopped its workers: the job was "
            "cancelled, pre-empted, deleted or timed out, not failed; find who sent the signal "
            "at the time of the line",
        ),
        Step(
            None,
            where,
            "the scheduler's record of the job: Slurm's sacct -j JOB --format=JobID,State,"
            "Elapsed,Timelimit; Kubernetes' kubectl get events and kubectl describe pod POD "
            "(an eviction, a deletion, a pre-emption); the platform's own log of the job "
            "(Determined, Ray, a CI runner)",
        ),
        Step(
            None,
            where,
            "a timeout around the command (timeout, a CI job's limit, an orchestrator's "
            "deadline) or a user's kill; where none stopped it, the node's shutdown (journalctl "
            "-b -1)",
        ),
    ]


def _kernel_steps() -> list[Step]:
    """A process the kernel's OOM killer ended: its record is the root already; what held the
    host's memory, and less of it."""
    where = "the dead process's host"
    return [
        Step(
            None,
            where,
            "the kernel's OOM killer ended it when memory ran out: its record lists the "
            "process's memory (anon-rss) and the lines above it in the kernel's log every "
            "process's, so the one that grew is seen",
        ),
        Step(
            ("journalctl", "-k", "-g", "Killed process|Out of memory|oom-kill"),
            where,
            "or dmesg -T",
        ),
        Step(("free", "-g"), where, "the host's memory, against what its processes hold"),
        Step(
            None,
            where,
            "use less host memory (fewer processes or workers per host, no other job beside "
            "it, a model loaded in fewer copies at once) or give the host more memory or swap",
        ),
    ]
