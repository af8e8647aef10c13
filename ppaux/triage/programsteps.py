"""Next steps for a memory failure and a shape or kernel failure, fitted to the program that
failed: sglang's server arguments and ``python3 -m sglang.check_env`` only where the logs show
sglang ran (:attr:`~ppaux.triage.stepdata.Deployment.sglang`, decided once from the logs);
for another program (a training job under torchrun) the steps any PyTorch program takes: its
batch size, ``PYTORCH_CUDA_ALLOC_CONF``, ``torch.cuda.memory_summary()``, a rerun with
``CUDA_LAUNCH_BLOCKING=1`` and ``compute-sanitizer``.

A kernel failure's first step is the same in both and in ``ppaux explain``
(:data:`LAUNCH_BLOCKING`): CUDA reports a kernel's fault at a later call, so the traceback
names the kernel only in a rerun with launches made synchronous. Not so Triton's resource
limit (``OutOfResources: out of resource: shared memory``): it is raised on the host, before
the launch, by the kernel's configuration (:func:`resource_steps`).
"""

from __future__ import annotations

from ppaux.patterns import lazy
from ppaux.triage.stepdata import Deployment, Step, unsafe

__all__ = [
    "GPU_MEMORY_CHECK",
    "HOST_MEMORY_CHECK",
    "LAUNCH_BLOCKING",
    "host_memory",
    "kernel_steps",
    "memory_steps",
    "resource_limit",
    "resource_steps",
    "shape_failure",
]

#: The rerun that makes CUDA report a kernel's fault at the call that launched it.
LAUNCH_BLOCKING = ("export", "CUDA_LAUNCH_BLOCKING=1")

#: What holds the GPUs' memory: the command of a device's out of memory that every program's
#: steps give, and ``ppaux explain``'s first word on one.
GPU_MEMORY_CHECK = ("nvidia-smi", "--query-gpu=index,memory.used,memory.total", "--format=csv")
#: The kernel's record of the processes its OOM killer ended: the host's out of memory's first
#: command, in triage's steps and ``ppaux explain``'s words alike.
HOST_MEMORY_CHECK = ("dmesg", "-T")

#: The host's memory, not a device's: a host allocation that failed, Python's own
#: ``MemoryError`` (not torch's ``OutOfMemoryError``), C++'s ``std::bad_alloc``, torch's CPU
#: allocator, a DataLoader worker the OOM killer ended, pinned host memory.
_HOST_MEMORY = lazy(
    r"memory allocation of .{0,80}bytes failed|(?<![\w.])MemoryError\b|std::bad_alloc|"
    r"DefaultCPUAllocator|is killed by signal: Killed|Cannot allocate memory|"
    r"CPU out of memory|CUDA host alloc"
)


def host_memory(text: str) -> bool:
    """True where the out of memory ``text`` says is the host's, not a GPU's."""
    return _HOST_MEMORY.search(text) is not None


def _host_memory_steps() -> list[Step]:
    where = "the failing process's host"
    return [
        Step(
            None,
            where,
            "the host ran out of memory, not a GPU: the kernel's OOM killer ends a process "
            "with SIGKILL ('Killed'), and its record names the process and what it held",
        ),
        Step(HOST_MEMORY_CHECK, where, "look for 'Out of memory: Killed process'"),
        Step(("free", "-h"), where, "the host's memory and swap"),
        Step(
            None,
            "the job's configuration",
            "use less host memory: fewer DataLoader workers (num_workers) and a smaller "
            "prefetch_factor, fewer processes per host, smaller CPU-side buffers; or give the "
            "host (the container's or the job's memory limit) more",
        ),
    ]


def memory_steps(deployment: Deployment, host: bool = False) -> list[Step]:
    """Out of memory: the settings that bound the failing program's memory; ``host``: the
    host's memory ran out, not a GPU's (:func:`host_memory`)."""
    if host:
        return _host_memory_steps()
    if deployment.sglang:
        return [
            Step(
                None,
                "the launch command",
                "out of memory: the server arguments that bound sglang's memory, each lowered a "
                "step: --mem-fraction-static (the KV cache's share), --chunked-prefill-size, "
                "--max-running-requests, --cuda-graph-max-bs, --max-total-tokens; a higher "
                "--pp-size or --tp-size spreads the weights",
            ),
            Step(GPU_MEMORY_CHECK, "each stage's host", "what else holds the GPUs' memory"),
        ]
    where = "the failing process's host"
    return [
        Step(
            None,
            "the job's configuration",
            "out of memory in the job (not sglang's server): lower its batch size (or the "
            "micro-batch, the sequence length), or spread the model over more GPUs (sharding, "
            "activation checkpointing, CPU offload)",
        ),
        Step(
            ("export", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"),
            "the job's environment",
            "where the error says reserved memory is far above allocated (fragmentation)",
        ),
        Step(
            None,
            "the job's code",
            "print(torch.cuda.memory_summary()) where it fails shows what holds the memory",
        ),
        Step(GPU_MEMORY_CHECK, where, "what else holds the GPUs' memory"),
    ]


#: A failure of tensors' shapes, as torch and the libraries over it word one: the sizes of two
#: tensors disagree (autograd's ``Mismatch in shape``, a matmul's ``mat1 and mat2``, a
#: checkpoint's ``size mismatch``), found on the host before any kernel runs.
_SHAPE_WORDS = lazy(
    r"size mismatch|shape mismatch|must match the size|shapes cannot be multiplied|mat1 and mat2|"
    r"invalid shape|shape '\[|Expected .{0,80}shape|doesn't match the broadcast|"
    r"Mismatch in shape|size of tensor"
)
#: Words of a kernel's or the device's own error: a failure that says them is a kernel's.
_DEVICE_WORDS = lazy(
    r"CUDA|cuda|illegal|device-side|misaligned|kernel image|CUBLAS|CUDNN|cutlass|Triton|"
    r"launch failure|cudaError",
)


def shape_failure(text: str) -> bool:
    """True where ``text`` (a shape or kernel failure's words) says tensors' shapes disagree
    and nothing of a kernel's or the device's error: a shape failure, which a rerun with
    launches made synchronous or a memory checker tells nothing more of."""
    head = text[:2000]
    return _SHAPE_WORDS.search(head) is not None and _DEVICE_WORDS.search(head) is None


def _shape_steps(deployment: Deployment, release: str | None) -> list[Step]:
    """A shape failure: what sets the shapes that disagree, then what to report."""
    if deployment.sglang:
        model = deployment.model
        about = f"the model ({model})" if model and unsafe(model) is None else "the model"
        fits = f"the release (the frames fit {release})" if release else "the release"
        return [
            Step(
                None,
                "the server's arguments",
                "a shape failure: two tensors' sizes disagree where the traceback's last frames "
                "use them; check what sets them (the model's config against the checkpoint, the "
                "parallel sizes, the batch and sequence limits)",
            ),
            Step(
                None,
                "any host",
                f"report it upstream with {about}, {fits}, the server arguments and the traceback",
            ),
            Step(("python3", "-m", "sglang.check_env"), "the failing stage's host", "the release"),
        ]
    return [
        Step(
            None,
            "the job's configuration",
            "a shape failure: two tensors' sizes disagree where the traceback's last frames use "
            "them; check what sets them (the model's config, the batch, sequence and "
            "micro-batch sizes, and in a pipeline the shapes each stage sends and the next "
            "expects)",
        ),
        Step(
            None,
            "any host",
            "if the settings agree, report it to the project whose frames it fails in, with "
            "the traceback, the settings and the versions of torch and the library",
        ),
        Step(
            ("python3", "-c", "import torch; print(torch.__version__, torch.version.cuda)"),
            "the job's environment",
            "the versions of torch and CUDA",
        ),
    ]


def kernel_steps(deployment: Deployment, release: str | None, shape: bool = False) -> list[Step]:
    """A shape or kernel failure: the rerun that names the kernel, then what to report to the
    project whose code failed; ``shape``: a shape failure (:func:`shape_failure`), no
    kernel's fault, whose steps are those of the shapes (:func:`_shape_steps`)."""
    if shape:
        return _shape_steps(deployment, release)
    rerun = [
        Step(
            None,
            "the failing process's environment",
            "CUDA reports a kernel's fault at a later call: rerun with launches made "
            "synchronous, so that the traceback names the kernel that failed",
        ),
        Step(LAUNCH_BLOCKING, "the failing process's environment"),
    ]
    if deployment.sglang:
        model = deployment.model
        about = f"the model ({model})" if model and unsafe(model) is None else "the model"
        fits = f"the release (the frames fit {release})" if release else "the release"
        return [
            *rerun,
            Step(
                None,
                "any host",
                "a shape or kernel failure in sglang or a kernel it calls: report it upstream "
                f"with {about}, {fits}, the server arguments and the traceback",
            ),
            Step(("python3", "-m", "sglang.check_env"), "the failing stage's host", "the release"),
        ]
    return [
        *rerun,
        Step(
            None,
            "the failing process's host",
            "for an illegal memory access, run the failing step under compute-sanitizer "
            "--tool memcheck (compute-sanitizer --tool memcheck python3 SCRIPT ...): it names "
            "the kernel and the address",
        ),
        Step(
            None,
            "any host",
            "a shape or kernel failure in the job (not sglang): report it to the project whose "
            "frames it fails in (the library or the kernel), with the traceback and the "
            "versions of torch and CUDA",
        ),
        Step(
            ("python3", "-c", "import torch; print(torch.__version__, torch.version.cuda)"),
            "the job's environment",
            "the versions of torch and CUDA",
        ),
    ]


#: Triton's refusal to launch a kernel whose configuration needs more of a resource than the
#: GPU has (``triton.runtime.errors.OutOfResources: out of resource: shared memory, Required:
#: 165888, Hardware limit: 163840.``).
_RESOURCE_LIMIT = lazy(r"(?:^|\.)OutOfResources$|^out of resource: \w")


def resource_limit(exception: str | None, message: str) -> bool:
    """True for Triton's resource limit (its type, or its message where the type is cut)."""
    return _RESOURCE_LIMIT.search(exception or "") is not None or (
        _RESOURCE_LIMIT.search(message.lstrip()) is not None
    )


def resource_steps() -> list[Step]:
    """A Triton kernel's configuration that needs more of the GPU than it has: what to change,
    the GPU it ran on, and what to report to the kernel's project."""
    where = "the failing process's host"
    return [
        Step(
            None,
            "the kernel's configuration",
            "Triton refused to launch the kernel on the host (no fault of a kernel that ran): "
            "its configuration needs more shared memory (or registers) than this GPU has; "
            "reduce its block sizes or num_stages, or give its autotuner configurations that fit",
        ),
        Step(
            ("nvidia-smi", "--query-gpu=index,name,compute_cap", "--format=csv"),
            where,
            "the GPU: a configuration tuned on a GPU with more shared memory does not fit it",
        ),
        Step(
            None,
            "any host",
            "report it to the project whose kernel it is (its configurations for this GPU), "
            "with the traceback and the versions of torch and Triton",
        ),
        Step(
            ("python3", "-c", "import torch, triton; print(torch.__version__, triton.__version__)"),
            "the job's environment",
            "the versions of torch and Triton",
        ),
    ]
