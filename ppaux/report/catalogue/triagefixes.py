"""The fixes of triage's rules (PP802, PP809) for each cause a log's line names: NCCL's
communicator set-up that failed, a transfer NCCL says failed in flight, torch's store whose port
was in use, and who stopped a job from outside (each as (kind, fix) pairs, a rule's
``kind_fixes``)."""

from __future__ import annotations

__all__ = ["ABOVE_FIXES", "FLIGHT_FIXES", "SETUP_FIXES", "STOP_FIXES"]

#: The fix of each way NCCL's communicator set-up fails (``extra.nccl_setup``: its warning
#: names it), for PP809 (the warning alone) and PP802 (a traceback cut below the warning).
SETUP_FIXES = (
    (
        "duplicate-rank",
        "Two processes joined NCCL's bootstrap as the same rank: print each process's RANK, "
        "LOCAL_RANK and WORLD_SIZE (the launcher gave two one rank), and give each job its own "
        "MASTER_PORT (or --dist-init-addr's port) that no earlier run still holds.",
    ),
    (
        "duplicate-gpu",
        "Two ranks on one host chose the same GPU, this host's set-up and not the network: each "
        "rank selects its own device before its first collective "
        "(torch.cuda.set_device(LOCAL_RANK)) or gets its own CUDA_VISIBLE_DEVICES.",
    ),
    (
        "bootstrap-connect",
        "NCCL's bootstrap could not connect to the address its warning names: set "
        "NCCL_SOCKET_IFNAME (and GLOO_SOCKET_IFNAME) to an interface every host reaches the "
        "others by, check the route and firewall to that address from each host, and that the "
        "bootstrap address (MASTER_ADDR:MASTER_PORT, --dist-init-addr) is this run's first "
        "rank's.",
    ),
    (
        "ib-verbs",
        "A call NCCL's InfiniBand transport made to the verbs library on this host failed, this "
        "host's set-up and not a peer: check its devices and their ports (ibv_devinfo), the "
        "locked memory each process may hold (ulimit -l must be unlimited; in a container, "
        "memlock=-1 and the InfiniBand devices passed in), name the active devices in "
        "NCCL_IB_HCA, and confirm with NCCL_IB_DISABLE=1 (sockets) that the set-up then passes.",
    ),
)

#: The fix of each transfer NCCL's warning says failed in flight (``extra.nccl_setup``:
#: :mod:`ppaux.triage.ncclflight`), for PP809 (the warning alone) and PP802 (a traceback cut
#: below the warning).
FLIGHT_FIXES = (
    (
        "ib-completion",
        "A transfer on InfiniBand completed in error (status 12 means the transport's retries ran "
        "out): the link between this host and the peer the warning names, a switch, or the "
        "peer's process gone. Collect the peer host's log, check both hosts' ports (ibstat: "
        "State Active, the rate expected; the switch's error counters), and where the fabric "
        "is only slow raise NCCL_IB_TIMEOUT (22) and NCCL_IB_RETRY_CNT (7).",
    ),
)

#: The fix of each other cause a line just above a cut traceback names (``extra.nccl_setup``:
#: :mod:`ppaux.triage.causeabove`), for PP802.
ABOVE_FIXES = (
    (
        "size-mismatch",
        "NCCL received a message of another size than this rank expected: the ranks' "
        "collectives (or the stages' sends and receives) disagree on a tensor's size. Run every "
        "rank with the same code, arguments and NCCL_PROTO/NCCL_ALGO settings, and compare the "
        "shapes each stage sends with those the next receives (the micro-batch size, the "
        "sequence length, the hidden size); NCCL_DEBUG=WARN names the peer.",
    ),
    (
        "address-in-use",
        "Another process already listens on the store's port (MASTER_PORT, --dist-init-addr's "
        "port): find it with 'ss -ltnp' and end it (an earlier run still alive), or give this "
        "run another free port.",
    ),
)

#: PP809's fixes where the log says who ended its processes (``extra.killer``).
STOP_FIXES = (
    (
        "outside-stop",
        "No process failed: a signal from outside the job stopped it. torchrun's elastic agent "
        "passes on the SIGTERM it was sent (by Slurm's scancel or time limit, by the kubelet "
        "evicting, deleting or pre-empting the pod, by a timeout wrapper, by a user's kill) and "
        "stops its workers. Look where that sender writes: the scheduler's record of the job "
        "(sacct), the pod's events (kubectl get events, kubectl describe pod), the agent's own "
        "log on each node and the log of the node or rank that was stopped first.",
    ),
    (
        "slurm-cancel",
        "Slurm ended the job (its time limit, a pre-emption, a cancellation): sacct shows its "
        "state and times; ask for more time or checkpoint and resume.",
    ),
)
