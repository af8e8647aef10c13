"""Rules about sglang server logs (codes PP8xx), for ``ppaux triage LOG...``.

An incident's root is an error (PP801 when it is one of sglang's nine auxiliary-output
messages, PP802 for any other failure); what follows from it (other ranks' communication
failures, the parent's SIGQUIT) is a warning pointing at the root; what the frames of a
traceback say (the build, an out-of-tree frame, ranks that disagree) comes beside it.
"""

from __future__ import annotations

from ppaux.report.catalogue.triagefixes import ABOVE_FIXES, FLIGHT_FIXES, SETUP_FIXES, STOP_FIXES
from ppaux.report.findings import Rule, Severity
from ppaux.sglang.messages import ADD_NOT_TENSOR, POP_NON_TENSOR

__all__ = ["RULES"]

_LOCATION = (
    "The finding is placed on the log file and the line where the record starts, so that a CI "
    "job that collects a failed run's logs gets the annotation on the traceback."
)

RULES = (
    Rule(
        code="PP801",
        name="triage-root-aux-output",
        severity=Severity.ERROR,
        summary="The first failing ranks raised one of sglang's auxiliary-output PP errors.",
        explanation=(
            "The earliest scheduler failure of an incident, named with its ranks exactly as the "
            "log prefix spells them (PP0 TP1), raised one of the nine RuntimeErrors of sglang's "
            "pipeline-parallel auxiliary transport (sglang/srt/sampling/sampling_observer_pp.py, "
            "0.5.19 and later). Ranks that failed with the same error at the same moment are one "
            "incident. The finding's extra names ppaux's rule for the message (extra.rule: PP101 "
            "for the non-tensor error on the first stage, PP115 for the last stage's add, PP401 "
            "for the first stage's other refusals) and the causes of that message, raised on that "
            "side (extra.causes, as 'ppaux explain' on the message gives them); the report shows "
            "those causes. " + _LOCATION
        ),
        causes=(
            "The first stage's pop: out-of-tree code on the last stage (a plugin, a Scheduler "
            "subclass) writes a non-tensor value under a __sampling_observer_output__. key.",
            "The first stage's pop: the sampling observer installed on the first stage lacks "
            "from_pp_tensors, or returns None from it.",
            "The last stage's add: its sampling observer's to_pp_tensors returns a value that is "
            "not a tensor, an empty mapping or a name sglang refuses ('ppaux check-observer' "
            "runs it as sglang's add does).",
            "The stages run different sglang builds.",
        ),
        fix=(
            "When the last stage's add raised it, run 'ppaux check-observer' on its sampling "
            "observer. In every case, capture the failing message (PPAUX_CAPTURE_DIR in "
            "sglang's environment, PPAUX_CAPTURE_STRICT=1 on the last stage), then 'ppaux "
            "capture list', 'ppaux inspect' and 'ppaux replay' on what it writes, and 'ppaux "
            "check-skew' across the stages."
        ),
        example=(
            "PP0 TP0 failed first at 2026-12-03 14:22:07 (local time of the host, zone unknown) "
            f"(server.log:1042): RuntimeError: {POP_NON_TENSOR.text}"
        ),
        area="triage",
    ),
    Rule(
        code="PP802",
        name="triage-root",
        severity=Severity.ERROR,
        summary="The first failing ranks raised an error that is not an auxiliary-output error.",
        explanation=(
            "The earliest scheduler failure of an incident raised an exception other than the "
            "nine auxiliary-output messages (a KeyError from mismatched logprob keys, a CUDA "
            "error, an out-of-memory error, an assertion in a model). It is still the root of "
            "what follows, and ppaux claims no auxiliary-output cause for it. Its kind "
            "(extra.kind: communication-init, communication, hardware, memory, shape-kernel, "
            "configuration, other, unknown) is told from the exception's type, message and "
            "frames, and chooses the next steps. A communicator that could not be set up, with "
            "no failure before it, is a root. A traceback cut off before its exception line is "
            "reported here with its exception unknown. " + _LOCATION
        ),
        causes=(
            "Any failure in the scheduler's event loop or its start-up.",
            "A communicator or process group that could not be set up (NCCL, gloo, the "
            "network between the nodes).",
            "Memory (the KV cache, CUDA graphs, the weights of a stage).",
            "A shape or kernel failure in sglang, a model or a kernel it calls.",
            "A fault of the GPU or its links (an ECC error, an Xid, NVLink, a GPU fallen off "
            "the bus).",
            "Stages that disagree on the PP output message (a KeyError on a logprob key).",
        ),
        fix=(
            "Read the traceback at the line given, then act on its kind, which the message "
            "names: a finding shows its own kind's fix, listed below. ppaux triage's text and "
            "Markdown reports list the next steps as commands."
        ),
        example=(
            "PP0 TP0 failed first at 2026-12-03 14:22:07 (local time of the host, zone unknown) "
            "(server.log:1042): KeyError: "
            "'sampling_mask_token_ids'"
        ),
        kind_fixes=(
            (
                "mpi",
                "Read the traceback at the line given: an MPI call failed, not NCCL. Check that "
                "every rank loads the same MPI library (mpirun --version, ompi_info) and that "
                "the world (mpirun -n) is the size the program expects.",
            ),
            (
                "communication-init",
                "Read the traceback at the line given: the communicator or process group could "
                "not be set up. Check that every node reaches the others (the master address and "
                "port, the network interface: NCCL_SOCKET_IFNAME), set NCCL_DEBUG=INFO and "
                "collect every rank's log.",
            ),
            (
                "communication",
                "Read the traceback at the line given, set NCCL_DEBUG=INFO and collect every "
                "rank's log: the first rank to fail is the one to look at; run 'ppaux "
                "check-skew' across the stages when the error comes from the PP path.",
            ),
            (
                "memory",
                "Read the traceback at the line given, then lower what bounds the failing "
                "program's memory (sglang's --mem-fraction-static or --max-running-requests; a "
                "training job's batch size) or give it more memory; the next steps name the "
                "settings of the program the logs show.",
            ),
            (
                "shape-kernel",
                "Read the traceback at the line given; run 'ppaux check-skew' across the stages "
                "when the error comes from the PP path, else report the model, the release "
                "and the arguments to the project whose code failed (the next steps name it).",
            ),
            (
                "configuration",
                "The program's own check of its parallel settings failed before anything ran: "
                "set the settings its message names to fit (the stages, the parallel sizes, the "
                "micro-batches); nothing to collect from other ranks.",
            ),
            (
                "hardware",
                "Check the GPU (nvidia-smi -q, the driver's Xid records) and drain the node "
                "before restarting the server on it.",
            ),
            (
                "unknown",
                "The log does not show the exception (the traceback is cut before it, or only "
                "an exit code was logged): collect that process's whole log (its stderr, every "
                "line) and run ppaux triage on it.",
            ),
            (
                "build",
                "A kernel compiled at start-up did not build: read the compiler's output above "
                "the traceback (ninja's FAILED: line, nvcc's error); the CUDA toolkit must match "
                "the CUDA torch was built for; clear the build's cache (~/.cache/flashinfer, "
                "~/.cache/torch_extensions, ~/.triton/cache) and build again, or install the "
                "release's prebuilt kernels.",
            ),
            (
                "disk",
                "A disk or the shared memory is full (ENOSPC): df -h /dev/shm /tmp and the "
                "caches' disks; give a container more shared memory (--shm-size, --ipc=host, an "
                "emptyDir of medium Memory on Kubernetes) or move the caches to a disk with room.",
            ),
            (
                "weights",
                "The model's weights could not be read or fetched: check that every file the "
                "checkpoint's index names is in the model's directory and whole, that it is the "
                "model the arguments name, that the filesystem can map files (copy them to a "
                "local disk), and for the Hub the token (HF_TOKEN) and the model's access.",
            ),
            (
                "driver",
                "The NVIDIA driver refused a call (its CUDA_ERROR_ name says what), or it, the "
                "CUDA runtime and the installed build do not fit each other: compare the "
                "driver's highest CUDA (nvidia-smi) and the GPU's architecture with the CUDA and "
                "architectures the build was made for (torch.version.cuda, "
                "torch.cuda.get_arch_list()); upgrade the driver, or install the build for them.",
            ),
            (
                "other",
                "Read the traceback at the line given; run 'ppaux check-skew' across the stages "
                "when the error comes from the PP path (a KeyError on a key of the PP message).",
            ),
            *SETUP_FIXES,
            *FLIGHT_FIXES,
            *ABOVE_FIXES,
        ),
        area="triage",
    ),
    Rule(
        code="PP803",
        name="triage-collateral",
        severity=Severity.WARNING,
        summary="Ranks that failed after the root, of communication errors that follow from it.",
        explanation=(
            "Once one rank's scheduler has died, the ranks waiting for it fail too: NCCL "
            "watchdog timeouts, gloo 'Connection closed by peer', TCPStore errors, "
            "DistBackendError. These are reported as collateral of the incident's root, with "
            "how long after it they came; they are not the cause. " + _LOCATION
        ),
        causes=("The root failure stopped a rank that the others were waiting for.",),
        fix="Look at the root finding (PP801 or PP802) that this one names.",
        example=(
            "PP1 TP0 failed 0.4 s after the root with RuntimeError: Connection closed by peer "
            "(collateral of PP0 TP0 at server.log:1042)"
        ),
        area="triage",
    ),
    Rule(
        code="PP804",
        name="triage-parent-sigquit",
        severity=Severity.WARNING,
        summary="The parent process logged that a child sent SIGQUIT.",
        explanation=(
            "sglang's run_scheduler_process sends SIGQUIT to its parent after logging "
            "'Scheduler hit an exception'; the parent logs 'Received sigquit from a child "
            "process' while launching or 'SIGQUIT received ... It usually means one child "
            "failed.' once running. The line follows from the root; it is not a cause. " + _LOCATION
        ),
        causes=("A scheduler process failed (the incident's root).",),
        fix="Look at the root finding (PP801 or PP802) that this one names.",
        example="the parent received SIGQUIT from a failing child (collateral of PP0 TP0 ...)",
        area="triage",
    ),
    Rule(
        code="PP805",
        name="triage-out-of-tree-frame",
        severity=Severity.WARNING,
        summary="A failing traceback passes through code that is neither sglang, torch nor Python.",
        explanation=(
            "A frame of the traceback lies outside sglang, the packages sglang's wheel requires "
            "(flashinfer, sgl_kernel, transformers, triton, ...), torch, ppaux and the standard "
            "library: an out-of-tree Scheduler subclass, a plugin, a model or observer of the "
            "deployment's own. The innermost such frame is named, with its file and line, as "
            "the likely culprit. " + _LOCATION
        ),
        causes=(
            "A Scheduler subclass overrides a PP method (such as _pp_prepare_tensor_dict).",
            "A plugin or observer of the deployment's own raised, or wrote what sglang refused.",
        ),
        fix=(
            "Read the named function first. When it is a sampling observer's from_pp_tensors or "
            "to_pp_tensors, 'ppaux check-observer FILE:Class' (the file this finding names) runs "
            "the observer as sglang does; when the root is an auxiliary-output error, a capture "
            "(PPAUX_CAPTURE_DIR in sglang's environment) shows what the function wrote."
        ),
        example="/app/plugins/scores.py:42 in _pp_prepare_tensor_dict",
        area="triage",
    ),
    Rule(
        code="PP806",
        name="triage-sglang-build",
        severity=Severity.INFO,
        summary="Where the failing ranks' sglang is installed and which releases its lines fit.",
        explanation=(
            "From the paths of sglang's frames: a wheel in site-packages (or dist-packages) or a "
            "source checkout (python/sglang). From their line numbers: the releases in ppaux's "
            "table whose functions hold those lines. Lines that fit no release mean a modified "
            "build, or a release the table does not know. " + _LOCATION
        ),
        causes=("Reported for every root, so that the build is known before anything else.",),
        fix=(
            "Compare with the other stages ('ppaux check-skew'); a build that fits no release "
            "is worth a 'ppaux fingerprint' on that host."
        ),
        example="sglang is a wheel in /usr/lib/python3.11/site-packages; its lines fit 0.5.23",
        area="triage",
    ),
    Rule(
        code="PP807",
        name="triage-rank-skew",
        severity=Severity.WARNING,
        summary="Ranks' tracebacks show different sglang builds.",
        explanation=(
            "The frames of two failing ranks fit no common release, or come from sglang "
            "installed in different places: the stages do not run the same code, which "
            "sglang's PP path never checks. " + _LOCATION
        ),
        causes=(
            "Hosts upgraded one at a time.",
            "A source checkout on one host and a wheel on another.",
        ),
        fix="Run 'ppaux check-skew' across the stages and install the same release everywhere.",
        example="PP0 TP0 fits 0.5.23, PP1 TP0 fits 0.5.19",
        area="triage",
    ),
    Rule(
        code="PP808",
        name="triage-capture-strict",
        severity=Severity.INFO,
        summary="The failure was raised by ppaux's own capture in strict mode.",
        explanation=(
            "With PPAUX_CAPTURE_STRICT=1 the capture makes the last stage raise the message "
            f"sglang's add would give ({ADD_NOT_TENSOR.format('...', str)!r}) at the first "
            "hop where the output message holds a non-tensor auxiliary value, and writes a "
            "capture that names the culprit. The traceback's raising frame lies in ppaux's "
            "capture, or the log shows the capture's own lines. " + _LOCATION
        ),
        causes=("PPAUX_CAPTURE_STRICT=1 in the last stage's environment, as asked for.",),
        fix="Read the capture: 'ppaux capture list DIR', then 'ppaux inspect' on the file.",
        example="PP1 TP0 stopped at ppaux's strict capture (hop_hooks.py)",
        area="triage",
    ),
    Rule(
        code="PP809",
        name="triage-no-root",
        severity=Severity.WARNING,
        summary=(
            "No root in these logs: communication failures only, a process's death whose cause "
            "is elsewhere, signals only, or neither."
        ),
        explanation=(
            "The logs hold failures that follow from another (watchdog timeouts, closed or "
            "timed-out connections, store errors) or only the parent's SIGQUIT, and no failure "
            "before them that caused them. Where every failing rank failed of communication "
            "and nothing else, the finding says so plainly: the cause is on the network or on "
            "another node, not in this log (extra.no_root: network-or-other-node); so is a log "
            "that holds only NCCL's warnings (NCCL WARN lines). Where the "
            "log holds only signals, the failing process's own output is elsewhere "
            "(signals-only); where NCCL's warnings stand beside them, the finding names both "
            "(extra.nccl_warnings counts the warnings: a connection between ranks broke) and "
            "what to collect: every rank's own log, with NCCL_DEBUG=INFO. "
            "Where another process reports that one died (torchrun's summary of a rank killed by "
            "a signal, exit code -9 for SIGKILL; Ray's ActorDiedError or the raylet's 'A worker "
            "died or was killed'; DeepSpeed's launcher's 'Killing subprocess N' and its "
            "'[<command>] exits with return code = -11', the child that ended first, named by its "
            "--local_rank; vLLM's 'Worker proc X died unexpectedly'), what ended it is not in the "
            "log (process-died): the finding names the dead process and where to look (the "
            "kernel's OOM killer on its host, its own log; for a crash of its own, SIGSEGV or "
            "SIGABRT, or a shell's 128 + its number (139), its core dump and fault handler: "
            "extra.crashed; for an exit status of its own, an error it reported, its own "
            "output: extra.exited; for torchrun's agent stopped by a signal from outside the job, "
            "'Received 15 death signal, shutting down workers' or its SignalException, who sent "
            "it: extra.killer outside-stop); a launcher's "
            "ChildFailedError is its summary of the child, never a root. So is an exception that "
            "relays another process's failure and says to look elsewhere for its root cause "
            "(vLLM's 'WorkerProc initialization failed ... See stack trace for root cause', "
            "its engine's 'Engine core initialization failed. See root cause above.'), where the "
            "log does not hold that failure; where it does, the relay follows from it; a relay "
            "that quotes one of sglang's nine messages word for word ('Worker failed with error "
            "'<message>'') is that message (PP801). "
            "Where NCCL's warnings say its communicator's set-up failed (nccl-setup, "
            "extra.nccl_setup: 'Bootstrap Root : rank N of M ranks has already checked in', "
            "duplicate-rank; 'Duplicate GPU detected', duplicate-gpu, this host's own set-up; "
            "socketStartConnect's or socketPollConnect's 'Connect to <address> failed', "
            "bootstrap-connect), the finding names it and the steps are the set-up's (ranks, "
            "devices, NCCL_SOCKET_IFNAME, the bootstrap address), an error. "
            "Where the log shows processes that hung and no failure (sglang's watchdog's "
            "'Scheduler debug info:' and 'Scheduler watchdog timeout (...)', a py-spy dump of an "
            "sglang process), it says so (hang): an error where sglang's watchdog found it (it "
            "takes the server down), a warning for a dump; the steps say what to collect. "
            "A communicator that could not be set up (ncclCommInitRank, "
            "connectFullMesh) with no failure before it is a root (PP802), not this. The parent's "
            "SIGQUIT follows any failure and changes none of this. The finding is an error where "
            "processes failed (the deployment is down, whatever caused it), a rank's NCCL "
            "watchdog timeout included (the watchdog takes its process down), so that a gate "
            "fails on such a log; it is a warning where the log holds only signals or store "
            "warnings."
        ),
        causes=(
            "The network between the nodes failed (a link, a firewall, an interface NCCL or "
            "gloo chose), or another node's process died and its log is not here.",
            "The logs of the rank that failed first were not collected.",
            "A process was killed by the kernel (its OOM killer sends SIGKILL) or the "
            "orchestrator, or a Ray worker died.",
        ),
        fix=(
            "Collect the logs of every node and the parent process; check the network between "
            "the nodes (NCCL_DEBUG=INFO, NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME) and OOM kills."
        ),
        example=(
            "no root in this log: the cause is on the network or another node; 6 communication "
            "failures on TP10, TP11, TP12 and nothing else"
        ),
        kind_fixes=(
            *SETUP_FIXES,
            *FLIGHT_FIXES,
            *STOP_FIXES,
            (
                "relayed",
                "A process another relays the failure of (a worker's start-up, as a rule) raised "
                "first: find that process's own traceback, above the relaying one under its own "
                "name or in its own log, and triage it; only where no log holds it, look for a "
                "kill of it on its host (the kernel's OOM killer).",
            ),
            (
                "process-died",
                "A process died of what this log does not say: collect its own log and its "
                "host's kernel log (OOM kills, a crash), and the logs of every node and the "
                "parent process.",
            ),
            (
                "hang",
                "Dump every rank's stacks (py-spy dump --pid of each sglang::scheduler process, "
                "on every node) and compare where each waits: the stage that never reached the "
                "collective or the receive the others wait in is the cause; collect every node's "
                "log around the watchdog's timeout.",
            ),
            (
                "hccl",
                "Collect the logs of every node, the parent process's and CANN's (~/ascend/log/); "
                "check the network between the nodes (ASCEND_GLOBAL_LOG_LEVEL=1, "
                "HCCL_SOCKET_IFNAME or HCCL_IF_IP, HCCL_CONNECT_TIMEOUT, HCCL_EXEC_TIMEOUT; "
                "hccn_tool's links) and OOM kills.",
            ),
        ),
        area="triage",
    ),
    Rule(
        code="PP810",
        name="triage-log-cut",
        severity=Severity.INFO,
        summary="A traceback or a log is cut off; what was there was triaged.",
        explanation=(
            "A traceback ends before its exception line (the process was killed while "
            "writing, or the log was rotated), or a compressed log (gzip, bzip2, xz, zstd) "
            "ends early, or lines longer than the limit max_log_line were read cut (their "
            "start, and a JSON record's end beside it) in a log that holds a failure (PP813 "
            "when it holds none). The part that is there is still used. " + _LOCATION
        ),
        causes=("Log rotation, a killed process, a partial copy.",),
        fix="Collect the whole log if the exception is needed.",
        example="the traceback of PP0 TP0 ends before its exception line",
        area="triage",
    ),
    Rule(
        code="PP811",
        name="triage-input-unread",
        severity=Severity.WARNING,
        summary="Part of the input could not be read as an sglang log.",
        explanation=(
            "A file given beside other logs holds no line of sglang's shape, of a launcher's "
            "or of a traceback (a README, a torch dump, a one-line text file): it is left out "
            "and the other logs are triaged (alone, it is refused: an error line, exit 2). Or "
            "a line holds a rank or a frame's line number of more digits than any real one: "
            "the line is read without it. " + _LOCATION
        ),
        causes=(
            "The wrong file was given, or a directory holds more than logs.",
            "A damaged or crafted log.",
        ),
        fix="Give the server's logs only; look at the line named.",
        example="notes.txt is not an sglang log: no line has the shape of sglang's",
        area="triage",
    ),
    Rule(
        code="PP812",
        name="triage-log-cut-no-failure",
        severity=Severity.ERROR,
        summary="A compressed log ends early or is corrupt, and no failure can be read from it.",
        explanation=(
            "A compressed log (gzip, bzip2, xz, zstd) ends before its end-of-stream marker, and "
            "no failure is in the lines inflated before the cut: the failure, if there was one, "
            "may be in the part that could not be read, so the log does not show a healthy run. "
            "A cut log that does hold a failure is triaged and said cut (PP810). A log whose "
            "compressed data is corrupt (a failed CRC or integrity check, an invalid block) is "
            "reported here whatever it seemed to hold: what it inflated to is garbled from a "
            "point that cannot be told, so none of its text is read as failures. " + _LOCATION
        ),
        causes=(
            "A partial copy or download, a log rotated while it was being compressed.",
            "A damaged file (bytes changed in transfer or on disk).",
        ),
        fix="Collect the whole log again (check its size against the source) and triage it.",
        example=(
            "the gzip stream ends early (Compressed file ended before the end-of-stream marker "
            "was reached) and the 29914 lines before the cut hold no failure: the rest could "
            "not be read"
        ),
        area="triage",
    ),
    Rule(
        code="PP813",
        name="triage-lines-cut-no-failure",
        severity=Severity.ERROR,
        summary="Lines of a log were longer than triage reads and the rest holds no failure.",
        explanation=(
            "Lines longer than the limit max_log_line were read cut (their start, and a JSON "
            "record's end beside it), and no failure is in what was read: a failure written "
            "inside what was left out (a traceback in one record, a message run on with "
            "others) would not show, so the log does not show a healthy run. A log that does "
            "hold a failure is triaged as usual, its cut lines said (PP810). " + _LOCATION
        ),
        causes=(
            "A collector or an export that put many lines in one record.",
            "Output without line ends (progress written with carriage returns, a binary dump).",
        ),
        fix=(
            "Look at the line named; give the log one record per line, or raise the limit "
            "max_log_line."
        ),
        example=(
            "2 lines of sglang.log are longer than 65536 bytes (the first: line 13) and were "
            "read cut; the 40 lines read hold no failure (limit max_log_line=65536 reached)"
        ),
        area="triage",
    ),
)
