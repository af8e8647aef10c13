"""Each kind of failure (:mod:`ppaux.triage.kinds`) in words, as a report or ``ppaux explain``
says it."""

from __future__ import annotations

from ppaux.triage.kinds import (
    AUX,
    COMMUNICATION,
    COMMUNICATION_INIT,
    CONFIGURATION,
    HARDWARE,
    MEMORY,
    OTHER,
    SHAPE_KERNEL,
    UNKNOWN,
)
from ppaux.triage.loadkinds import BUILD, DISK, DRIVER, WEIGHTS

__all__ = ["DESCRIPTIONS"]

#: Each kind in words, as a report or ``ppaux explain`` says it.
DESCRIPTIONS = {
    AUX: "one of sglang's nine auxiliary-output messages",
    HARDWARE: "a hardware fault (the GPU or its links: an ECC error, an Xid, NVLink, a GPU "
    "fallen off the bus), not sglang's",
    MEMORY: "a memory failure (the device or host ran out of memory)",
    COMMUNICATION_INIT: "a communication failure at set-up (a communicator or process group "
    "that could not be created: NCCL, gloo, a rendezvous)",
    COMMUNICATION: "a communication failure in flight (NCCL, gloo or a socket): what a rank "
    "dies of when a peer died first, or when the network failed",
    SHAPE_KERNEL: "a shape or kernel failure (a tensor size that does not fit, a kernel error)",
    BUILD: "a build failure (a kernel compiled at start-up, JIT: torch's extensions, "
    "flashinfer, Triton, nvcc)",
    DISK: "a full disk (no space left on a disk or in shared memory, /dev/shm)",
    WEIGHTS: "a weight-loading failure (the model's files missing, damaged or of another "
    "model, or the Hugging Face Hub refusing the download)",
    DRIVER: "a CUDA driver failure (a driver and build mismatch: the NVIDIA driver older than "
    "the CUDA the build was made for, or a build without the GPU's architecture; or a driver "
    "API call the driver refused, its CUDA_ERROR_ or CUresult named), no shape or kernel "
    "failure",
    CONFIGURATION: "a configuration error (the program's own check of its parallel settings: "
    "the stages, the parallel sizes, the micro-batches)",
    OTHER: "a failure of no kind ppaux tells apart",
    UNKNOWN: "a traceback cut before its exception",
}
