"""Next steps for NCCL's communicator set-up that failed (:mod:`ppaux.triage.ncclsetup`): how
the job gave out its ranks, devices and bootstrap address, and whether the hosts reach each
other on the interface NCCL chose; never a collective's timeout (that is a run's, not a
set-up's). Beside them, the steps for a cause a line just above a cut traceback names
(:mod:`ppaux.triage.causeabove`): a store's port in use, a message NCCL received truncated."""

from __future__ import annotations

from ppaux.triage.portsteps import port_steps
from ppaux.triage.stepdata import Step

__all__ = ["device_steps", "setup_steps"]


def setup_steps(name: str, device: str | None = None) -> list[Step]:
    """The steps for the set-up failure ``name`` ('duplicate-rank', 'duplicate-gpu',
    'bootstrap-connect', 'ib-verbs'), the transfer that failed in flight ('size-mismatch',
    'ib-completion') or the port a store found in use ('address-in-use'); ``device``: the
    InfiniBand device NCCL's warning names (:func:`~ppaux.triage.ncclflight.ib_device`)."""
    if name == "duplicate-rank":
        return _rank_steps()
    if name == "duplicate-gpu":
        return _device_steps()
    if name == "ib-verbs":
        return _verbs_steps(device)
    if name == "address-in-use":
        return port_steps("", "job")  # the port and its program: the root's own steps
    if name == "size-mismatch":
        return _size_steps()
    if name == "ib-completion":
        return _completion_steps(device)
    return _connect_steps()


def device_steps(device: str | None, where: str = "the host that warned") -> list[Step]:
    """The state of the InfiniBand ``device`` NCCL's warning names, on the host that warned."""
    if device is None:
        return []
    return [
        Step(
            ("ibv_devinfo", "-d", device),
            where,
            "the device NCCL's warning names: its ports' state (PORT_ACTIVE) and firmware",
        ),
        Step(("ibstat", device), where, "its ports' physical state (LinkUp) and rate"),
    ]


def _completion_steps(device: str | None) -> list[Step]:
    where = "both hosts: the one that warned and its peer"
    return [
        Step(
            None,
            where,
            "a transfer on InfiniBand completed in error (status 12 means the transport's retries "
            "ran out): the link between the two hosts, a switch, or the peer's process gone; "
            "collect the peer host's log (its address is in the warning)",
        ),
        *device_steps(device),
        Step(("ibstat",), where, "each port's state (Active) and rate, on both hosts"),
        Step(
            ("export", "NCCL_IB_TIMEOUT=22"),
            "every node",
            "where the fabric is only slow: a longer wait before each retry",
        ),
        Step(("export", "NCCL_IB_RETRY_CNT=7"), "every node", "and the most retries"),
        Step(("export", "NCCL_DEBUG=INFO"), "every node", "the next run names each connection"),
        Step(("export", "NCCL_DEBUG_SUBSYS=INIT,NET"), "every node"),
    ]


def _size_steps() -> list[Step]:
    where = "every node"
    return [
        Step(
            None,
            where,
            "NCCL received a message of another size than this rank expected: the ranks' "
            "collectives (or the stages' sends and receives) disagree on a tensor's size",
        ),
        Step(
            None,
            where,
            "run every rank with the same code, arguments and NCCL settings (NCCL_PROTO, "
            "NCCL_ALGO), and compare the shapes each stage sends with those the next one "
            "receives (micro-batch size, sequence length, hidden size)",
        ),
        Step(
            ("export", "NCCL_DEBUG=WARN"),
            where,
            "the next run names the peer and the sizes of each truncated message",
        ),
    ]


def _verbs_steps(device: str | None) -> list[Step]:
    where = "the host that warned"
    return [
        Step(
            None,
            where,
            "a call NCCL's InfiniBand transport made to the verbs library on this host failed "
            "(ncclSystemError): this host's InfiniBand devices or its limits, not a peer",
        ),
        *device_steps(device, where),
        Step(("ibv_devinfo",), where, "each InfiniBand device, its ports and their state"),
        Step(
            ("ulimit", "-l"),
            where,
            "the locked memory each process may hold: 'unlimited' is what verbs needs (in a "
            "container: docker run --ulimit memlock=-1, and --device /dev/infiniband or "
            "--privileged)",
        ),
        Step(
            None,
            where,
            "then name the devices NCCL may use, a setting to fill in, not to paste: export "
            "NCCL_IB_HCA=<device> for those ibv_devinfo lists as PORT_ACTIVE (or "
            "NCCL_IB_HCA=^<device> to leave the failing one out)",
        ),
        Step(
            ("export", "NCCL_IB_DISABLE=1"),
            where,
            "to confirm: the next run goes over sockets; if it then sets up, the InfiniBand "
            "set-up on this host is the cause",
        ),
    ]


def _rank_steps() -> list[Step]:
    where = "every node"
    return [
        Step(
            None,
            where,
            "two processes joined NCCL's bootstrap as the same rank: the launcher gave two "
            "processes one rank, or two jobs share one bootstrap address and port",
        ),
        Step(
            None,
            where,
            "print each process's RANK, LOCAL_RANK and WORLD_SIZE (under Slurm: SLURM_PROCID, "
            "SLURM_NTASKS; --ntasks-per-node must match the GPUs per node the job uses)",
        ),
        Step(
            None,
            where,
            "give each job its own MASTER_PORT (or --dist-init-addr's port), and make sure no "
            "earlier run of it still holds the port (ss -ltnp)",
        ),
    ]


def _device_steps() -> list[Step]:
    where = "the host that warned"
    return [
        Step(
            None,
            where,
            "two ranks on this host chose the same GPU: this host's set-up, not the network; "
            "each rank must select its own device before its first collective",
        ),
        Step(
            None,
            where,
            "call torch.cuda.set_device(int(os.environ['LOCAL_RANK'])) in each rank before "
            "init_process_group, or give each rank its own CUDA_VISIBLE_DEVICES",
        ),
        Step(("nvidia-smi", "-L"), where, "the GPUs this host has, against the ranks on it"),
    ]


def _connect_steps() -> list[Step]:
    where = "every node"
    return [
        Step(
            None,
            where,
            "NCCL's bootstrap could not connect to another rank's address: the interface it "
            "chose, a route or a firewall between the hosts, or a bootstrap address no one "
            "listens on",
        ),
        Step(
            ("ip", "-brief", "address"),
            where,
            "the interfaces each host has: pick one every host reaches the others by",
        ),
        Step(
            ("export", "NCCL_SOCKET_IFNAME=IFACE"),
            where,
            "IFACE: that interface (a link-local fe80:: address on it cannot be reached from "
            "another host: pick one with a routable address); GLOO_SOCKET_IFNAME too",
        ),
        Step(
            None,
            where,
            "from each host, the address in the warning must answer: ping it, and 'ip route "
            "get ADDRESS' shows the interface it goes out by",
        ),
        Step(
            None,
            where,
            "the bootstrap address (MASTER_ADDR:MASTER_PORT, --dist-init-addr, or a file:// "
            "init file left by an earlier run: delete it) must be the current run's first "
            "rank's, and the hosts' firewalls must let NCCL's ports through",
        ),
        Step(("export", "NCCL_DEBUG=INFO"), where, "the next run names each connection it tries"),
    ]
