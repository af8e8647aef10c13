"""The next steps of the kinds of failure whose steps do not depend on how the deployment runs:
a communication failure (at set-up or in flight), signals only, this host's set-up, the
hardware."""

from __future__ import annotations

from ppaux.triage.stepdata import Step

__all__ = [
    "hang_steps",
    "hardware_steps",
    "hccl_steps",
    "host_steps",
    "network_steps",
    "signal_steps",
]


def hang_steps() -> list[Step]:
    """Processes that hung (sglang's watchdog, a py-spy dump) and no failure: every rank's
    stacks, to find the one that did not reach what the others wait in."""
    where = "every node"
    return [
        Step(
            None,
            where,
            "a hang, no failure: while it hangs, dump every sglang process's stacks on every "
            "node and compare where each waits (a send whose receive never came, a collective "
            "one rank never entered): the rank that is elsewhere is the cause",
        ),
        Step(
            ("pgrep", "-af", "sglang::"), where, "sglang's processes, by the titles it gives them"
        ),
        Step(None, where, "then for each of their pids: py-spy dump --pid PID"),
        Step(
            ("export", "TORCH_NCCL_TRACE_BUFFER_SIZE=2000"),
            where,
            "for the next run: torch's flight recorder, whose dump on a timeout names the "
            "collective each rank was in",
        ),
        Step(("export", "TORCH_NCCL_DUMP_ON_TIMEOUT=1"), where),
        Step(
            None,
            where,
            "collect every node's sglang log around the watchdog's timeout (its 'debug info' "
            "and 'watchdog timeout' lines, and what each rank logged last)",
        ),
    ]


def network_steps(at_init: bool, sglang: bool = True) -> list[Step]:
    """What makes the next communication failure say why, and what to collect; ``sglang``:
    the logs are sglang's (else another program's, a training job's: no sglang setting)."""
    what = "set-up" if at_init else "collective"
    program = "sglang" if sglang else "the job"
    meeting = (
        "--dist-init-addr must be reachable from every node"
        if sglang
        else "the address the processes meet at (MASTER_ADDR and MASTER_PORT, or the "
        "launcher's rendezvous endpoint) must be reachable from every node"
    )
    return [
        Step(
            None,
            "every node",
            f"a communication failure ({what}): make the next one say why, on every node, "
            f"then restart {program}",
        ),
        Step(("export", "NCCL_DEBUG=INFO"), "every node"),
        Step(("export", "NCCL_DEBUG_SUBSYS=INIT,NET"), "every node"),
        Step(
            None,
            "every node",
            "and NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME to the interface that reaches the "
            "other nodes (ip -brief address lists them)",
        ),
        Step(
            ("export", "TORCH_NCCL_TRACE_BUFFER_SIZE=2000"),
            "every node",
            "torch's flight recorder: the dump on a timeout holds its entries, none without it",
        ),
        Step(("export", "TORCH_NCCL_DUMP_ON_TIMEOUT=1"), "every node"),
        *(
            []
            if at_init
            else [
                Step(
                    None,
                    "every node",
                    "where a collective timed out, before the watchdog's timeout ends the ranks: "
                    "dump every rank's Python stacks (for each rank's pid: py-spy dump --pid "
                    "PID) and compare where each waits: the rank that never entered the "
                    "collective, or entered another, is the cause",
                )
            ]
        ),
        Step(
            None,
            "every node",
            f"collect every node's {'sglang ' if sglang else ''}log, with what it says of the "
            "interfaces and GPUs:",
        ),
        Step(("ip", "-brief", "address"), "every node"),
        Step(("nvidia-smi", "topo", "-m"), "every node"),
        Step(
            None,
            "every node",
            f"{meeting}, its port open; the nodes' firewalls must let NCCL's and gloo's ports "
            "through",
        ),
    ]


def hccl_steps(at_init: bool) -> list[Step]:
    """A communication failure on Ascend's NPUs: HCCL's settings (its set-up's timeout, the
    interface it uses), synchronous launches, CANN's logs and the NPUs' and their links' state
    (``npu-smi``, ``hccn_tool``), none of NCCL's."""
    what = "set-up" if at_init else "collective"
    return [
        Step(
            None,
            "every node",
            f"a communication failure of HCCL ({what}) on Ascend NPUs: make the next one say "
            "why, on every node, then restart the job",
        ),
        Step(("export", "ASCEND_GLOBAL_LOG_LEVEL=1"), "every node", "CANN's log at INFO"),
        Step(("export", "ASCEND_SLOG_PRINT_TO_STDOUT=1"), "every node", "into the job's log"),
        Step(
            ("export", "ASCEND_LAUNCH_BLOCKING=1"),
            "every node",
            "launches made synchronous: the error names the operator that failed",
        ),
        Step(
            None,
            "every node",
            "HCCL_CONNECT_TIMEOUT (seconds) bounds the set-up's wait for the other ranks, "
            "HCCL_EXEC_TIMEOUT a collective's; HCCL_SOCKET_IFNAME (or HCCL_IF_IP) the interface "
            "that reaches the other nodes",
        ),
        Step(None, "every node", "the NPUs' state and their network ports' links:"),
        Step(("npu-smi", "info"), "every node"),
        Step(("hccn_tool", "-i", "0", "-link", "-g"), "every node", "for each NPU (-i 0 to 7)"),
        Step(
            None,
            "every node",
            "collect every node's log and CANN's logs (~/ascend/log/), of every rank: the "
            "rank that failed first names the cause",
        ),
    ]


def signal_steps() -> list[Step]:
    """The parent's SIGQUIT only: the failing child's own output is elsewhere."""
    return [
        Step(
            None,
            "every node",
            "the parent's SIGQUIT says a child process failed, not which or of what: collect "
            "each rank's own output (its stderr, where sglang writes 'Scheduler hit an "
            "exception' and the traceback), from every node, and triage them together",
        ),
    ]


def host_steps() -> list[Step]:
    """A communication failure whose words say the host's own set-up failed (the driver, CUDA,
    shared memory): what to compare there before the network."""
    where = "the failing process's host"
    return [
        Step(
            None,
            where,
            "NCCL's error is most often this host's own: its driver against the CUDA runtime "
            "the serving process was built for (a driver older than the runtime needs fails "
            "as 'CUDA driver version is insufficient': upgrade the driver, or install a build "
            "for the CUDA the driver supports), and its shared memory",
        ),
        Step(
            ("nvidia-smi", "--query-gpu=index,name,driver_version", "--format=csv"),
            where,
            "the driver's version; nvidia-smi alone also shows the highest CUDA it supports",
        ),
        Step(
            ("python3", "-c", "import torch; print(torch.__version__, torch.version.cuda)"),
            "the serving process's environment",
            "the CUDA runtime torch was built for",
        ),
        Step(("df", "-h", "/dev/shm"), where, "the shared memory NCCL uses between processes"),
    ]


def hardware_steps() -> list[Step]:
    """A fault of the GPU or its links: nothing in sglang to change; the device to check, and
    the node to take out of service."""
    where = "the failing process's host"
    return [
        Step(
            None,
            where,
            "a hardware fault of the GPU or its links, not sglang's: check the GPU, then take "
            "the node out of service until it is reset or replaced",
        ),
        Step(
            ("nvidia-smi", "-q", "-d", "ECC,PAGE_RETIREMENT,ROW_REMAPPER"),
            where,
            "the GPUs' ECC error counts and retired pages or remapped rows (nvidia-smi -q shows "
            "all)",
        ),
        Step(
            ("journalctl", "-k", "-g", "NVRM: Xid"),
            where,
            "or dmesg -T: the driver's Xid records name the fault (48, 63, 64, 94, 95: ECC; "
            "74: NVLink; 79: the GPU fell off the bus)",
        ),
        Step(("nvidia-smi", "nvlink", "-e"), where, "the NVLink error counters"),
        Step(
            None,
            where,
            "drain the node (kubectl drain, scontrol update ... state=DRAIN, or take it out of "
            "the pool), restart the stage on another, and reset (nvidia-smi -r) or replace "
            "the GPU before the node serves again",
        ),
    ]
