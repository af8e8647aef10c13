"""Next steps for lmdeploy TurboMind's out of memory (its one-line ``[TM][ERROR] CUDA runtime
error: out of memory .../allocator.h:233`` record, or a Python exception carrying it): the engine
allocates through its own allocator, which torch's settings (``PYTORCH_CUDA_ALLOC_CONF``,
``torch.cuda.memory_summary()``) do not govern; lmdeploy's own settings bound it (``lmdeploy
serve api_server -h`` and ``lmdeploy chat -h`` list them: ``--cache-max-entry-count``, the
share of free GPU memory the k/v cache takes, ``--max-batch-size``, ``--session-len``,
``--tp``)."""

from __future__ import annotations

from ppaux.triage.programsteps import GPU_MEMORY_CHECK
from ppaux.triage.records import Failure
from ppaux.triage.stepdata import Step
from ppaux.triage.turbomind import TURBOMIND_TYPE

__all__ = ["turbomind_memory", "turbomind_memory_steps"]


def turbomind_memory(root: Failure) -> bool:
    """Whether ``root`` is TurboMind's own out of memory (its record, or the words of it a
    Python exception carries)."""
    said = f"{root.exception or ''}: {root.message[:2000]}"
    return (root.exception == TURBOMIND_TYPE or "[TM][ERROR]" in said) and ("out of memory" in said)


def turbomind_memory_steps() -> list[Step]:
    """lmdeploy's settings that bound TurboMind's memory, then what else holds the GPUs'."""
    return [
        Step(
            None,
            "the launch command",
            "out of memory in lmdeploy's TurboMind engine, whose own allocator torch's settings "
            "(PYTORCH_CUDA_ALLOC_CONF) do not govern: lower the share of free GPU memory its "
            "k/v cache takes (--cache-max-entry-count), the batch (--max-batch-size) or the "
            "session length (--session-len), or spread the model over more GPUs (--tp)",
        ),
        Step(GPU_MEMORY_CHECK, "the failing process's host", "what else holds the GPUs' memory"),
    ]
