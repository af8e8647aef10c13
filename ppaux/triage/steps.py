"""What to run next, as data: each step an argument vector, where to run it, and a comment,
chosen by the kind of each incident's root (:mod:`ppaux.triage.kinds`).

- auxiliary output: ``ppaux check-observer`` where the root is the sampling observer's to
  check; the capture settings (ppaux installed in sglang's environment, ``PPAUX_CAPTURE_DIR`` on
  every stage, ``PPAUX_CAPTURE_STRICT=1`` where the last stage runs), set as the log's deployment
  sets an environment (a Kubernetes pod spec and a volume, ``docker run -e``/``-v``, or the
  shell); ``ppaux fingerprint``/``check-skew`` across the stages; ``ppaux capture list``,
  ``inspect`` and ``replay`` on what the capture writes;
- communication (at set-up, in flight, or no root in the log): the NCCL and gloo variables
  that make the next failure say why, and what to collect from every node; first, where NCCL's
  error is most often the host's own (a CUDA driver older than the runtime, ``unhandled cuda
  error``), the driver, the CUDA runtime and the shared memory of that host;
- hardware (an ECC error, an Xid, NVLink, a GPU fallen off the bus): the GPU's own state and
  the driver's Xid records on its host, then the node drained and the GPU reset or replaced;
- memory: the server arguments that bound sglang's memory, or, for another program (a
  training job), its batch size and PyTorch's allocator (:mod:`ppaux.triage.programsteps`);
- a process that died of what the log does not say: the kernel's OOM kills on its host and
  that process's own log;
- shape or kernel: a rerun with ``CUDA_LAUNCH_BLOCKING=1``, then what to report upstream (for
  sglang the model, the release, the server arguments; for another program its versions);
- anything else: the stage comparison where the logs show pipeline stages; else what to read
  first (the root's own record, or the whole log of a process whose traceback is cut).

A step is shown with :func:`shlex.join` (:func:`render`), so that the shell gives back its
argument vector as it is; text taken from the log goes after ``--`` where it is an operand,
and a relative path that begins with '-' is written ``./-...``, so that it never becomes an
option. Text that cannot be shown safely (control characters) is never put in a command: the
step is a comment naming the problem.
"""

from __future__ import annotations

from ppaux.errors import TORCH_INSTALL_HINT
from ppaux.sglang import MessageMatch
from ppaux.triage.buildsteps import build_steps
from ppaux.triage.causeabove import IN_FLIGHT_CAUSES
from ppaux.triage.configsteps import configuration_steps
from ppaux.triage.cutkinds import CUT_ROOT as _CUT_ROOT
from ppaux.triage.deathsteps import death_steps, record_steps
from ppaux.triage.kindsteps import (
    hang_steps,
    hardware_steps,
    hccl_steps,
    host_steps,
    network_steps,
    signal_steps,
)
from ppaux.triage.loadkinds import LOAD_KINDS
from ppaux.triage.loadsteps import load_steps
from ppaux.triage.ppkeys import pp_key_steps
from ppaux.triage.programsteps import kernel_steps, memory_steps
from ppaux.triage.setupsteps import device_steps, setup_steps
from ppaux.triage.stepdata import (
    DEFAULT_CAPTURE_DIR,
    MAX_LISTED_STAGES,
    Deployment,
    Lead,
    Step,
    from_log,
    operand,
    render,
    unsafe,
)

__all__ = [
    "DEFAULT_CAPTURE_DIR",
    "MAX_LISTED_STAGES",
    "Deployment",
    "Step",
    "next_steps",
    "operand",
    "render",
]

_CODE = "any host with the observer's code"
_CAPTURE_HOST = "the capture's host"


def _stages(deployment: Deployment) -> tuple[int | None, str]:
    """(the number of stages, how it is known)."""
    if deployment.pp_size is not None:
        return deployment.pp_size, f"--pp-size {deployment.pp_size} from {deployment.pp_size_from}"
    if deployment.highest_stage is not None and deployment.highest_stage > 0:
        stages = deployment.highest_stage + 1
        return (
            stages,
            f"--pp-size {stages} is a lower bound: the highest stage seen; the logs hold no "
            "server arguments",
        )
    return None, "the logs do not say how many stages there are"


def _compare_steps(deployment: Deployment) -> list[Step]:
    stages, known = _stages(deployment)
    steps: list[Step] = []
    size = f" ({known})"
    if deployment.single_launch:
        where = "the host that runs the launch"
        steps.append(
            Step(
                None,
                where,
                f"compare the stages: one launch runs them all, on this host, with the Python "
                f"that runs sglang{size}",
            )
        )
    else:
        where = "each stage's host"
        steps.append(
            Step(
                None,
                where,
                f"compare the stages: on each stage's host, with the Python that runs sglang{size}",
            )
        )
    if stages is not None and stages <= MAX_LISTED_STAGES:
        for rank in range(stages):
            argv = (
                "ppaux",
                "fingerprint",
                "--pp-rank",
                str(rank),
                "--pp-size",
                str(stages),
                "-o",
                f"stage-{rank}.json",
            )
            host = where if deployment.single_launch else f"PP{rank}'s host"
            steps.append(Step(argv, host, "" if deployment.single_launch else f"on {host}"))
    else:
        given: tuple[str, ...] = () if stages is None else ("--pp-size", str(stages))
        out = "stages/stage-N.json"
        # One command per stage is too many to list (or their count is unknown): the command
        # is said in a comment, its N never written into a command line to be run as it is;
        # so is the comparison of the files it writes, which no command above makes.
        template = " ".join(("ppaux", "fingerprint", "--pp-rank", "N", *given, "-o", out))
        first = "PP0's host" if not deployment.single_launch else where
        steps.append(
            Step(("mkdir", "-p", "stages"), where, "the folder each stage's file is written to")
        )
        # The first stage is there whatever the count: its command is one to run as it is.
        steps.append(
            Step(
                ("ppaux", "fingerprint", "--pp-rank", "0", *given, "-o", "stages/stage-0.json"),
                first,
                "the first stage's",
            )
        )
        steps.append(
            Step(
                None,
                where,
                f"then on each other stage's host, N its pipeline rank ({known}): {template}",
            )
        )
        steps.append(
            Step(
                ("ppaux", "check-skew", "--", "stages/"),
                "any host",
                "with every stage's file in stages/",
            )
        )
        return steps
    steps.append(
        Step(
            _compare_argv(stages),
            "any host",
            "with every stage's file in one place",
        )
    )
    return steps


def _pipelined(deployment: Deployment) -> bool:
    """True when the logs show pipeline stages: a --pp-size over 1, or a ``PPn`` prefix
    (sglang writes one only when there are several stages)."""
    return (deployment.pp_size or 0) > 1 or deployment.highest_stage is not None


def _cut_steps(kind: str, torchrun: bool) -> list[Step]:
    """Where the root's traceback is cut before its exception (a child torchrun recorded
    aside: :func:`record_steps` says it), collecting the whole log comes first."""
    return [Step(None, "any host", _CUT_ROOT)] if kind == "unknown" and not torchrun else []


def _read_steps(kind: str, torchrun: bool = False, sglang: bool = True) -> list[Step]:
    """A failure the logs show no pipeline stage in: comparing stages is beside the point;
    what the root's own record says is where to start (for a child torchrun recorded,
    :func:`record_steps` says it). ``sglang``: the logs are sglang's, so a pipeline-parallel
    deployment they do not show may be compared; another program's (a training job, vLLM)
    has no stages ppaux fingerprints."""
    if torchrun:
        said = ""
    elif kind == "unknown":
        said = _CUT_ROOT
    else:
        said = (
            "read the root's exception and frames at the line given; ppaux explain 'TYPE: "
            "message' says what ppaux knows of that line"
        )
    steps = [Step(None, "any host", said)] if said else []
    if sglang:
        steps.append(
            Step(
                None,
                "any host",
                "the logs show no pipeline stage (no PPn prefix, no --pp-size): where this is "
                "a pipeline-parallel deployment, compare the stages with ppaux fingerprint (run "
                "by the Python that runs sglang) and ppaux check-skew",
            )
        )
    return steps


def _compare_argv(stages: int | None) -> tuple[str, ...]:
    """check-skew over each stage's fingerprint: one file per stage up to
    :data:`MAX_LISTED_STAGES` (a count from a log is bounded only by its digits), the folder
    of them past that."""
    if stages is not None and stages > MAX_LISTED_STAGES:
        return ("ppaux", "check-skew", "--", "stages/")
    return ("ppaux", "check-skew", "--", *(f"stage-{r}.json" for r in range(stages or 2)))


def _capture(deployment: Deployment, directory: str, last: str) -> list[Step]:
    """How to turn the capture on, as the deployment sets an environment."""
    problem = unsafe(directory)
    if problem is not None:
        return [
            Step(None, "sglang's environment", f"the capture directory is not shown: {problem}")
        ]
    strict_where = (
        "every stage (one launch shares one environment)" if deployment.single_launch else last
    )
    if deployment.runtime == "kubernetes":
        return [
            Step(
                None,
                "the pod spec",
                "capture the failing message: install ppaux in sglang's image; in the pod spec "
                f"of every stage set env PPAUX_CAPTURE_DIR={directory} and mount a volume there "
                "(a PersistentVolumeClaim or hostPath: an emptyDir is lost with the pod), and "
                f"PPAUX_CAPTURE_STRICT=1 on {strict_where}; or, on a Deployment:",
            ),
            Step(
                ("kubectl", "set", "env", "deployment/SGLANG", f"PPAUX_CAPTURE_DIR={directory}"),
                "a host with kubectl",
                "SGLANG: the Deployment or StatefulSet of each stage; add the volume in its spec",
            ),
            Step(
                ("kubectl", "set", "env", "deployment/SGLANG", "PPAUX_CAPTURE_STRICT=1"),
                "a host with kubectl",
                f"on {strict_where}: SGLANG here is that stage's Deployment",
            ),
        ]
    if deployment.runtime == "docker":
        return [
            Step(
                None,
                "the host that runs the container",
                "capture the failing message: install ppaux in sglang's image, then restart "
                "the container with the capture on and a host directory kept past a restart:",
            ),
            Step(
                (
                    "docker",
                    "run",
                    "-e",
                    f"PPAUX_CAPTURE_DIR={directory}",
                    "-v",
                    f"{operand(directory)}:{directory}",
                    "IMAGE",
                ),
                "the host that runs the container",
                "every stage's container; IMAGE and the rest: as the container runs now; in "
                "compose, environment: and volumes: of the service",
            ),
            Step(
                None,
                "the host that runs the container",
                f"and on {strict_where}, -e PPAUX_CAPTURE_STRICT=1 beside it: stop where a "
                "non-tensor value enters the output message",
            ),
        ]
    return [
        Step(
            None,
            "sglang's environment",
            "capture the failing message: install ppaux in sglang's environment on every "
            "stage, then restart sglang with",
        ),
        Step(("export", f"PPAUX_CAPTURE_DIR={directory}"), "every stage"),
        Step(
            ("export", "PPAUX_CAPTURE_STRICT=1"),
            strict_where,
            f"on {strict_where}: stop where a non-tensor value enters the output message",
        ),
    ]


def _aux_steps(
    deployment: Deployment, captures: list[tuple[str, bool]], observers: list[str]
) -> list[Step]:
    steps: list[Step] = []
    for target in observers:
        steps.append(
            Step(
                None,
                "any host with the observer's code",
                "check the sampling observer as sglang's PP transport runs it, without a "
                "restart (its module or file, and its class)",
            )
        )
        steps.append(from_log(("ppaux", "check-observer", "--"), target, "the observer", _CODE, ""))
    directory = captures[0][0] if captures else DEFAULT_CAPTURE_DIR
    stages, _ = _stages(deployment)
    last = f"PP{stages - 1} only" if stages else "the last stage only"
    if not captures:
        steps += _capture(deployment, directory, last)
    steps += _compare_steps(deployment)
    # The comment goes with the commands that read the capture, after the comparison.
    read = (
        "the logs show ppaux's capture on: read what it wrote"
        if captures
        else ("then read what the capture wrote")
    )
    steps.append(
        Step(None, "the capture's host", f"{read} (replay needs torch there: {TORCH_INSTALL_HINT})")
    )
    for argv in (
        ("ppaux", "capture", "list", "--dir"),
        ("ppaux", "inspect", "--"),
        ("ppaux", "replay", "--"),
    ):
        steps.append(from_log(argv, directory, "the capture directory", _CAPTURE_HOST, ""))
    return steps


def next_steps(
    roots: list[tuple[str, MessageMatch | None]],
    deployment: Deployment,
    captures: list[tuple[str, bool]],
    observers: list[str] | None = None,
    release: str | None = None,
    no_root: str | None = None,
    host: bool = False,
    crash: bool = False,
    exited: bool = False,
    killer: str | None = None,
    torchrun: bool = False,
    pp_key: str | None = None,
    setup: str | None = None,
    host_memory: bool = False,
    build: tuple[str, str] | None = None,
    relayed: bool = False,  # the dead process's exception is relayed by the one that says so
    setting: str | None = None,  # a configuration error's program (:mod:`.configsteps`)
    cut_setup: bool = False,  # the first root's traceback is cut inside NCCL's set-up
    lead: Lead | None = None,  # the first root's own steps, first, and the kinds' they replace
) -> list[Step]:
    """Steps for incidents whose roots are of ``roots`` (kind, and the auxiliary-output message
    matched, if any), in the order the kinds first appear; ``no_root``: why the logs hold no
    root ('network-or-other-node', ...), when they hold none; ``captures``: capture directories
    the logs show in use; ``observers``: targets for ``ppaux check-observer``; ``release``: the
    releases the root's frames fit; ``host``: a communication root's words say its host's own
    set-up failed (:func:`ppaux.triage.kinds.local_note`); ``crash``: the process that died
    (``no_root`` 'process-died') died of a crash of its own, not of the OOM killer;
    ``exited``: it ended with an exit status of its own, an error it reported; ``killer``: a
    runtime's or a launcher's memory limit ended it ('ray-memory-monitor', ...); ``torchrun``:
    the first root is a child's exit torchrun recorded, its exception in no log; ``pp_key``:
    the first root is a KeyError on that key of the PP message (:mod:`ppaux.triage.ppkeys`);
    ``setup``: NCCL's communicator set-up failed so (``no_root`` 'nccl-setup', or a root cut
    below NCCL's warning of it: 'duplicate-rank', ...); ``host_memory``: a memory root is the
    host's, not a GPU's; ``build``: the first root is a library that does not load (the
    library and the symbol it needs); the others: as commented."""
    steps = (record_steps() if torchrun else []) + (list(lead[0]) if lead else [])
    done: set[str] = set(lead[1]) if lead else set()  # a fault's core dump: no stages' skew
    kinds = [kind for kind, _ in roots]
    if no_root in ("network-or-other-node", "signals-and-nccl-warnings"):
        kinds.append("communication")
    if no_root == "process-died":
        steps += death_steps(crash, exited, killer, relayed)
    if no_root == "nccl-setup" and setup is not None:
        steps += setup_steps(setup, deployment.ib_device)
    if no_root == "hang":
        steps += hang_steps()
    if no_root in ("signals-only", "signals-and-nccl-warnings"):
        steps += signal_steps()
    for kind in kinds:
        group = "communication" if kind.startswith("communication") else kind
        if group in done:
            continue
        done.add(group)
        if kind == "auxiliary-output":
            steps += _aux_steps(deployment, captures, observers or [])
        elif setup is not None and _named_cause(kind, setup, no_root):
            steps += setup_steps(setup, deployment.ib_device)  # NCCL's set-up, or a transfer
        elif group == "communication":
            steps += _host_first(host, deployment) + (
                hccl_steps(kind == "communication-init")
                if deployment.ascend
                else network_steps(kind == "communication-init", deployment.sglang)
            )
        elif kind == "hardware":
            steps += hardware_steps()
        elif kind == "memory":
            steps += memory_steps(deployment, host_memory)
        elif kind in LOAD_KINDS:
            steps += load_steps(kind, deployment.model)
        elif kind == "configuration":
            steps += configuration_steps(setting or ("sglang" if deployment.sglang else "job"))
        elif kind == "shape-kernel":
            # a CUDA call of NCCL's that failed on the host: its own set-up first
            steps += (host_steps() if host else []) + kernel_steps(deployment, release)
        elif "compare" not in done:
            done.add("compare")
            steps += _other_steps(kind, deployment, observers or [], torchrun, pp_key, build)
    cut = cut_setup and kinds[:1] == ["unknown"]  # the root cut inside NCCL's set-up
    return _once(steps + (network_steps(True, deployment.sglang) if cut else []))


def _host_first(host: bool, deployment: Deployment) -> list[Step]:
    """A communication root's steps on its own host, first: its set-up (``host``: its words
    say so) and the InfiniBand device NCCL's warnings name."""
    return (host_steps() if host else []) + device_steps(deployment.ib_device)


def _named_cause(kind: str, setup: str, no_root: str | None) -> bool:
    """Whether NCCL's (or c10d's) warning ``setup`` has steps of its own for a root of
    ``kind``: its set-up's, below which a root was cut; a transfer's that failed in flight, a
    root cut below it or the only failure the logs hold."""
    if setup in IN_FLIGHT_CAUSES:
        return no_root in (None, "network-or-other-node")
    return kind == "communication-init" and no_root is None


def _other_steps(
    kind: str,
    deployment: Deployment,
    observers: list[str],
    torchrun: bool,
    pp_key: str | None,
    build: tuple[str, str] | None,
) -> list[Step]:
    """A root of no kind with steps of its own (or cut before its exception): the observers to
    check, the stages to compare where the logs show stages, else what to read first; a
    library that does not load (``build``: the library and the symbol it needs), what to
    compare its build with."""
    steps = [
        from_log(("ppaux", "check-observer", "--"), target, "the observer", _CODE, "")
        for target in observers
    ]
    steps += pp_key_steps(pp_key) if pp_key else []
    if build is not None:
        return steps + build_steps(*build)
    if _pipelined(deployment) or observers or pp_key:
        return steps + _cut_steps(kind, torchrun) + _compare_steps(deployment)
    return steps + _read_steps(kind, torchrun, deployment.sglang)


def _once(steps: list[Step]) -> list[Step]:
    """``steps`` without a command given again (two kinds' steps that share one: the versions
    of torch and CUDA, for the host's set-up and for a kernel's report)."""
    given: set[tuple[str, ...]] = set()
    kept: list[Step] = []
    for step in steps:
        if step.argv is not None:
            if step.argv in given:
                continue
            given.add(step.argv)
        kept.append(step)
    return kept
