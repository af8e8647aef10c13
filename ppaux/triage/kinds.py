"""What kind of failure a traceback is, from its exception's type, its message and its frames.

- ``auxiliary-output``: one of sglang's nine auxiliary-output messages
  (:mod:`ppaux.sglang.messages`);
- ``hardware``: the GPU or its links failed, not a program: an uncorrectable ECC error, the
  driver's Xid record, an NVLink error, a GPU fallen off the bus or lost. Told first (after the
  nine), in the process's own words, wherever it surfaced (a ``CUDA error: ...`` in NCCL's
  watchdog thread is the device's fault, not a kernel's or the network's);
- ``memory``: the device or host ran out of memory (``torch.OutOfMemoryError``, ``CUDA out of
  memory``, sglang's own ``Not enough memory`` or ``Not enough space`` (a cache's slots), a cuBLAS
  allocation failure, sglang's ``The memory capacity is unbalanced``: GPUs with unequal free
  memory, other processes holding some; a DataLoader worker ``killed by signal: Killed``, as the
  host's OOM killer ends one);
- ``communication-init``: a communicator or process group that could not be set up (NCCL's
  ``ncclCommInitRank``, gloo's ``connectFullMesh``, a rendezvous or TCPStore that timed out,
  an MPI error while a C++ object such as an all-reduce plugin is set up), told by the message
  or by a frame of the set-up code, or, for an NCCL error that says neither, by what its
  process printed next to it (:mod:`ppaux.triage.startup`);
- ``communication``: a collective or a socket that failed in flight (NCCL errors, MPI errors,
  gloo's read and write errors, a closed or reset connection, the NCCL watchdog,
  ``DistBackendError``): what a rank dies of when a peer died first, or when the network failed;
- ``shape-kernel``: a tensor shape or size that does not fit, a kernel that failed (an illegal
  memory access, a device-side assert, a Triton or TVM error, no kernel for the device), a CUDA
  call NCCL made that failed outside a set-up (NCCL's ``unhandled cuda error``, ``Cuda failure
  1 'invalid argument'``: the rank's own GPU, not the network; out of memory is ``memory``). A
  kernel's fault on the device (an illegal memory access or address, a device-side assert, a
  launch failure) is of this kind whatever else its text holds: NCCL's watchdog, its
  ``ProcessGroupNCCL`` frames or a ``DistBackendError`` type say where the fault surfaced (the
  watchdog checks the stream the kernel ran on), not that communication failed;
- ``configuration``: a program's own check of its parallel settings that failed (Megatron's
  layers that do not divide among the stages, TensorRT-LLM's ``mpiSize == tp * pp``, torch's
  pipelining schedule given too few micro-batches, a batch smaller than the stages): an
  assertion or a ValueError whose message names a parallel size or the micro-batches and the
  rule they break; nothing ran yet that another rank could have caused;
- ``other``: anything else; ``unknown``: a traceback cut before its exception line.
"""

from __future__ import annotations

import re

from ppaux.patterns import lazy
from ppaux.sglang import relay_quote, sglang_raised
from ppaux.triage.causeabove import IN_FLIGHT_CAUSES
from ppaux.triage.curesult import CURESULT_TYPE
from ppaux.triage.cutkinds import cut_kind
from ppaux.triage.flattened import outside_quotes
from ppaux.triage.loadkinds import (
    DRIVER,
    LOAD_KINDS,
    checkpoint_mismatch,
    cut_load_kind,
    load_kind,
)
from ppaux.triage.quotedvalues import unquoted_values
from ppaux.triage.records import Failure

__all__ = [
    "AUX",
    "COMMUNICATION",
    "COMMUNICATION_INIT",
    "CONFIGURATION",
    "DRIVER_MISMATCH",
    "HARDWARE",
    "KINDS",
    "MEMORY",
    "OTHER",
    "SHAPE_KERNEL",
    "UNKNOWN",
    "cut_in_setup",
    "kind_of",
    "local_note",
    "quoted_relay",
    "root_of_group",
]

AUX = "auxiliary-output"
HARDWARE = "hardware"
MEMORY = "memory"
COMMUNICATION_INIT = "communication-init"
COMMUNICATION = "communication"
SHAPE_KERNEL = "shape-kernel"
CONFIGURATION = "configuration"
OTHER = "other"
UNKNOWN = "unknown"
#: Every kind, in the order they are told apart.
KINDS = (
    AUX,
    HARDWARE,
    MEMORY,
    COMMUNICATION_INIT,
    COMMUNICATION,
    SHAPE_KERNEL,
    *LOAD_KINDS,
    CONFIGURATION,
    OTHER,
    UNKNOWN,
)

#: Characters of a message looked at.
_READ = 2000

_MEMORY_TYPES = lazy(r"OutOfMemoryError|(?:^|[.(])MemoryError\b")
_MEMORY_TEXT = lazy(
    r"out of memory|CUDA_ERROR_OUT_OF_MEMORY|CUBLAS_STATUS_ALLOC_FAILED|"
    r"Not enough (?:memory|space)|"
    r"insufficient memory|cudaErrorMemoryAllocation|Tried to allocate|"
    r"memory allocation of .{0,80}bytes failed|Failed to CUDA (?:calloc|malloc|host alloc)|"
    # torch's DataLoader worker ended by SIGKILL: the host's OOM killer, as a rule
    r"DataLoader worker \(pids? [\d, ]{1,80}\) is killed by signal: Killed|"
    # sglang's check at start-up that every GPU has as much memory free: other processes hold
    # some (raised while the process group is set up, but of memory, not of communication)
    r"memory capacity is unbalanced",
    re.IGNORECASE,
)
_COMMUNICATION_TYPES = lazy(
    r"(?:^|\.|::)(?:DistBackendError|DistNetworkError|DistStoreError|DistError|"
    r"Rendezvous(?:Connection|Timeout|Closed|State)?Error|"
    r"ConnectionResetError|ConnectionRefusedError|ConnectionAbortedError|BrokenPipeError|"
    r"ConnectionError|socket\.timeout|NCCLError|nccl[A-Z]\w{0,40}Error)$"
)
_COMMUNICATION_TEXT = lazy(
    r"Connection closed by peer|Connection reset by peer|Broken pipe|Watchdog caught|"
    r"NCCL (?:error|communicator was aborted|WARN)|\bnccl\w*Error\b|ncclRemoteError|"
    r"\bnccl[A-Z]\w{0,40} failed|"  # an NCCL call that failed (``ncclCommInitRank failed: ...``)
    r"ncclSystemError|ncclInternalError|ncclUnhandledCudaError|TCPStore|"
    r"recvValue failed|sendBytes failed|recvBytes failed|Socket Timeout|"
    r"Timed out waiting|timed out in|Connection refused|Connection was likely closed|"
    r"Connection timed out|process group has been aborted|ProcessGroupGloo|ProcessGroupNCCL|"
    r"gloo/transport|\bgloo\b|Read error|Write error|connectFullMesh|No route to host|"
    r"Network is unreachable|rendezvous|Address already in use|EADDRINUSE|"
    r"\bMPI error\b|\bMPI_ERR_[A-Z_]{1,40}\b|\bMPI_\w{1,40} failed|/mpiUtils\.cpp:\d|"  # MPI
    r"An error occurred in MPI_|\bMPI_ERRORS_ARE_FATAL\b",  # Open MPI's own block, its handler
)
#: What only a communicator's or a process group's set-up says, in its message or its frames.
_INIT_TEXT = lazy(
    r"ncclCommInitRank|ncclCommInitAll|ncclGetUniqueId|connectFullMesh|rendezvous|"
    r"init_process_group|Address already in use|EADDRINUSE|TCPStore\(|"
    r"NCCL's init\.cc:|"  # NCCL's own communicator set-up, where its warning says it failed
    r"\bMPI_Init\w{0,20}|"
    # a C++ frame of an object's set-up (``AllreducePlugin::initialize()``)
    r"\w::initiali[sz]e\(\)"
)
#: torch.distributed.elastic's rendezvous errors: set-up by definition, whatever the frames say.
_RENDEZVOUS = lazy(r"(?:^|\.)Rendezvous(?:Connection|Timeout|Closed|State)?Error$")
_INIT_FUNCTIONS = frozenset(
    {
        "init_process_group",
        "init_distributed_environment",
        "init_worker_distributed_environment",
        "ensure_model_parallel_initialized",
        "initialize_model_parallel",
        "init_model_parallel_group",
        "init_world_group",
        "ncclCommInitRank",
        "new_group",
        "_new_process_group_helper",
        "_store_based_barrier",
        "rendezvous",
        "_create_c10d_store",
        "init_torch_distributed",
    }
)
#: NCCL's words for a CUDA call of its own that failed (``unhandled cuda error``, its
#: ``ncclUnhandledCudaError``, its warning's ``Cuda failure 1 'invalid argument'``).
_NCCL_CUDA = lazy(
    r"unhandled cuda error|ncclUnhandledCudaError|Cuda failure(?: \d{1,4})? '", re.IGNORECASE
)
#: A kernel's fault on the device, as CUDA names it: never a communication failure, whichever
#: thread or call it surfaced in.
_KERNEL_FAULT = lazy(
    r"illegal memory access|an illegal (?:address|instruction)|device-side assert|"
    r"misaligned address|unspecified launch failure|launch timed out and was terminated|"
    r"cudaError(?:IllegalAddress|LaunchFailure|Assert|MisalignedAddress|IllegalInstruction)",
    re.IGNORECASE,
)
#: The GPU's or its links' own fault, as CUDA, the driver or nvidia-smi name it.
_HARDWARE = lazy(
    r"uncorrectable ECC error|\bECC errors? (?:detected|encountered|occurred)|"
    r"(?:cudaError|CUDA_ERROR_)(?:ECCUncorrectable|ECC_UNCORRECTABLE|NvlinkUncorrectable|"
    r"NVLINK_UNCORRECTABLE)|"
    # the driver's Xid codes of the device's own faults (ECC, NVLink, the bus, the GPU's
    # micro-controllers and firmware); others (13, 31, 43: a program's) say no such thing
    r"\bXid \([^()\n]{0,64}\): (?:48|61|62|63|64|74|79|92|94|95|119|120|140)\b|NVLink error|"
    r"fallen off the bus|\bGPU is lost\b",
    re.IGNORECASE,
)
#: A CUDA driver API call that failed, named by its result (``CUDA_ERROR_INVALID_VALUE``): no
#: kernel ran wrong, the driver refused the call; its out of memory is ``memory``, the device's
#: own faults ``hardware`` (a native library's ``CUresult error result=N`` record is of this
#: kind whatever other result it names: the driver's steps, as ``explain`` gives them).
_DRIVER_CALL = lazy(r"\bCUDA_ERROR_[A-Z_]{2,64}\b")
_SHAPE_TEXT = lazy(
    r"size mismatch|shape mismatch|must match the size|shapes cannot be multiplied|"
    r"mat1 and mat2|invalid shape|shape '\[|Expected .{0,80}shape|doesn't match the broadcast|"
    r"Mismatch in shape|CUDA runtime error|"  # autograd's check; lmdeploy TurboMind's record
    r"illegal memory access|device-side assert|misaligned address|illegal instruction|"
    r"no kernel image|invalid configuration argument|Triton Error|CUDA error|CUBLAS_STATUS|"
    r"CUDNN_STATUS|cutlass|Invalid configuration|Attempted to load weight|into parameter \(|"
    r"size of tensor|mismatch between collectives|OutOfResources|\bout of resource: \w|"
    r"cudaError(?:IllegalAddress|LaunchFailure|Assert|MisalignedAddress|IllegalInstruction)",
    re.IGNORECASE,
)
#: Functions of sglang's memory planning: what fails there is the memory left for the KV cache
#: (a negative token count, an assertion on the pool), whatever the exception says.
_MEMORY_FUNCTIONS = frozenset({"init_memory_pool", "profile_max_num_token"})
#: A setting of parallelism or of the micro-batches, as a program's own check names it.
_PARALLEL_SETTING = lazy(
    r"\b(?:pipeline|tensor|data|context|expert)_model_parallel_size\b|"
    r"\b(?:pp|tp|dp|ep|cp)_(?:size|degree)\b|\bmpiSize\b|\bworld_size\b|\btp \* pp\b|"
    r"\b(?:pp_)?micro_?batch(?:_size|es)?\b|\bn_microbatches\b|\barg_mbs\b|\bnum_stages\b"
)
#: The rule such a check says was broken.
_SETTING_RULE = lazy(
    r"divisible|\bmust be\b|\bshould be\b|\bExpecting\b|\bexpected\b|==|!=|>=|<=|"
    r"Assertion failed|\bbut got\b|\bnot equal\b|\bmultiple of\b"
)
#: The exceptions a program's own check of its settings raises (and Triton's model that did
#: not load, whose words are its backend's check: :mod:`ppaux.triage.tritonstatus`).
_SETTING_TYPES = lazy(
    r"(?:^|\.)(?:AssertionError|ValueError|RuntimeError)$|^Triton model UNAVAILABLE$"
)
_SHAPE_TYPES = lazy(r"(?:^|\.|::)(?:InternalError|TVMError|CompilationError|AcceleratorError)$")
_KERNEL_MODULES = lazy(r"(?:^|\.)(?:tvm|triton|flashinfer|sgl_kernel|deep_gemm)\b")


def _texts(failure: Failure) -> list[tuple[str, str]]:
    """(type, first characters of the message) of the last exception and of its chain."""
    found: list[tuple[str, str]] = []
    if failure.exception is not None:
        found.append((failure.exception, failure.message[:_READ]))
    found += [(t, m[:_READ]) for t, m in reversed(failure.chain)]
    return found


def quoted_relay(message: str) -> str | None:
    """The error text a relay's ``message`` quotes (vLLM's ``Worker failed with error '<e>',
    please check ...``, in straight, double or curly quotes), or None."""
    quoted = relay_quote(message)
    return None if quoted is None else quoted[0]


def _aux(failure: Failure) -> bool:
    for exception, message in _texts(failure):
        if sglang_raised(exception, message.split("\n", 1)[0]) is not None:
            return True
        # a relay quoting one of the nine word for word: sglang raises them as RuntimeError
        quoted = quoted_relay(message)
        if quoted is not None and sglang_raised("RuntimeError", quoted) is not None:
            return True
    return False


def _at_init(failure: Failure, message: str) -> bool:
    """Whether the message, a frame's function or source line, or a fragment's source line
    before its first frame says a communicator's or a process group's set-up."""
    if failure.startup or _INIT_TEXT.search(message) or _INIT_TEXT.search(failure.context):
        return True
    return any(
        frame.function in _INIT_FUNCTIONS or _INIT_TEXT.search(frame.code)
        for frame in failure.frames
    )


def cut_in_setup(failure: Failure) -> bool:
    """Whether ``failure`` is a traceback cut before its exception inside a communicator's or
    a process group's set-up (a frame of ``ncclCommInitRank``, ``init_process_group``, ...):
    what failed there is not shown, but where it failed is."""
    if failure.exception is not None:
        return False
    return any(
        frame.function in _INIT_FUNCTIONS or _INIT_TEXT.search(frame.code) is not None
        for frame in failure.frames[-200:]
    )


#: A connection that closed: what a socket's failure says before anything it carries.
_CLOSED = lazy(r"Connection (?:closed|reset) by peer|Broken pipe")


def _own_words(pattern: re.Pattern[str], text: str) -> bool:
    """Whether ``text`` says what ``pattern`` finds in its own words: not inside a string
    literal it quotes (NCCL's ``Cuda failure 'an illegal memory access ...'``, a peer's last
    words) or a value it names in quotes (:func:`~ppaux.triage.quotedvalues.unquoted_values`),
    nor after a closed connection's words (what a socket's message carries after
    them)."""
    fault = pattern.search(unquoted_values(outside_quotes(text)))
    if fault is None:
        return False
    closed = _CLOSED.search(text, 0, fault.start())
    return closed is None


def _kernel_fault(text: str) -> bool:
    """Whether ``text`` says a kernel faulted, in its own words (:func:`_own_words`)."""
    return _own_words(_KERNEL_FAULT, text)


def _setting_check(last: tuple[str, str]) -> bool:
    """Whether the last exception (type, message) is a program's own check of its parallel
    settings: an assertion or a ValueError whose first line names a parallel size or the
    micro-batches, and the rule they break."""
    exception, message = last
    first = message.split("\n", 1)[0][:400]
    return (
        _SETTING_TYPES.search(exception) is not None
        and _PARALLEL_SETTING.search(first) is not None
        and _SETTING_RULE.search(first) is not None
    )


def kind_of(failure: Failure) -> str:
    """The kind of ``failure`` (one of :data:`KINDS`)."""
    if failure.warned is not None and failure.exception is None:  # cut, below what failed
        if failure.warned[0] == "undefined-symbol":  # an import's, as its complete one is
            return OTHER
        return COMMUNICATION if failure.warned[0] in IN_FLIGHT_CAUSES else COMMUNICATION_INIT
    texts = _texts(failure)
    if not texts:
        return cut_load_kind(failure) or cut_kind(failure, cut_in_setup(failure)) or UNKNOWN
    if _aux(failure):
        return AUX
    exception = texts[0][0]
    # A record of C++ or of a tool names no exception type: its words stand there (``CUDA
    # error`` of NCCL's watchdog record) and are read as the message's.
    every = " ".join(f"{t}: {m}" if " " in t else m for t, m in texts)
    if _own_words(_HARDWARE, every):
        return HARDWARE
    if any(_MEMORY_TYPES.search(t) for t, _ in texts) or _MEMORY_TEXT.search(every):
        return MEMORY
    if exception == CURESULT_TYPE or _DRIVER_CALL.search(unquoted_values(every)) is not None:
        return DRIVER  # the driver refused a call (its result named), not a kernel's fault
    if _kernel_fault(every):
        return SHAPE_KERNEL
    if checkpoint_mismatch(every):
        return CONFIGURATION  # the model's configuration against the checkpoint's
    if (loaded := load_kind(failure, texts, every)) is not None:
        return loaded  # a build, a full disk, the weights: what it loads or writes, not a peer
    own = unquoted_values(every)  # the message's own words, not a value it quotes
    if any(_COMMUNICATION_TYPES.search(t) for t, _ in texts) or _COMMUNICATION_TEXT.search(own):
        if _at_init(failure, every) or any(_RENDEZVOUS.search(t) for t, _ in texts):
            return COMMUNICATION_INIT  # a rendezvous is the set-up of the job's processes
        # a CUDA call NCCL made that failed: this rank's own GPU, not the network
        return SHAPE_KERNEL if _NCCL_CUDA.search(every) else COMMUNICATION
    if (
        _SHAPE_TEXT.search(own)
        or _SHAPE_TYPES.search(exception)
        or _KERNEL_MODULES.search(exception)
    ):
        return SHAPE_KERNEL
    if _setting_check(texts[0]):
        return CONFIGURATION
    # No word of the message tells: the frames do. A failure inside a communicator's set-up
    # (a library that will not load, an assertion in pynccl) or in the memory planning is of
    # that kind, whatever its exception.
    functions = {frame.function for frame in failure.frames}
    if functions & _INIT_FUNCTIONS:
        return COMMUNICATION_INIT
    if functions & _MEMORY_FUNCTIONS:
        return MEMORY
    return OTHER


#: How the sub-exceptions of an exception group rank for its root, by kind: one of sglang's
#: nine messages first, then what a process fails of by itself (its GPU's fault, memory, a
#: shape or a kernel, a communicator that could not be set up, anything else), and a
#: communication failure in flight (what a task dies of when another failed) last.
_ROOT_RANK = {
    AUX: 0,
    HARDWARE: 1,
    MEMORY: 2,
    SHAPE_KERNEL: 3,
    CONFIGURATION: 4,
    **dict.fromkeys(LOAD_KINDS, 4),
    COMMUNICATION_INIT: 5,
    OTHER: 6,
    COMMUNICATION: 7,
    UNKNOWN: 8,
}


def root_of_group(subs: list[Failure]) -> int:
    """The index of an exception group's root among its sub-exceptions ``subs`` (in the
    log's order, each with its own chain and frames): the first of the kind that ranks
    highest (:data:`_ROOT_RANK`). Where two hold one of sglang's nine messages, the first
    sub-exception's stands, as ``ppaux explain`` names the first the text holds."""
    return min(range(len(subs)), key=lambda k: (_ROOT_RANK[kind_of(subs[k])], k))


#: CUDA's words for a driver older than the runtime (``cudaErrorInsufficientDriver``).
DRIVER_MISMATCH = "CUDA driver version is insufficient"
#: NCCL's errors that most often come from the host's own set-up rather than a peer's death.
_LOCAL_NCCL = lazy(
    r"unhandled (?:system|cuda) error|ncclSystemError|ncclUnhandledCudaError|"
    r"CUDA driver version is insufficient"
)


def local_note(text: str) -> str | None:
    """What to know of an NCCL error that is most often the host's own (``unhandled system
    error``, ``unhandled cuda error``), or None for any other text."""
    if _LOCAL_NCCL.search(text[:_READ]) is None:
        return None
    if "system not yet initialized" in text[:_READ]:
        return (
            "CUDA's 'system not yet initialized' (802) is this host's own set-up: on a system "
            "whose GPUs share NVSwitches, the fabric manager has not initialised them "
            "(systemctl status nvidia-fabricmanager; its version must match the driver's)"
        )
    if DRIVER_MISMATCH in text[:_READ]:
        return (
            "the NVIDIA driver is older than the CUDA runtime the process was built for (a "
            "mismatch of driver and toolkit, no shape, kernel or network failure): nvidia-smi "
            "shows the highest CUDA the driver supports, torch.version.cuda the runtime's; "
            "upgrade the driver, or install a build for the CUDA it supports"
        )
    return (
        "NCCL's 'unhandled system error' and 'unhandled cuda error' most often come from this "
        "host's own set-up (the driver or CUDA, shared memory such as a container's small "
        "/dev/shm, a network interface NCCL cannot use), not from a peer that died first: "
        "NCCL_DEBUG=INFO on this rank names the call that failed"
    )
