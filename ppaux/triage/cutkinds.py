"""The kind of a traceback cut before its exception line, where its last frames say where it
failed: inside a communicator's set-up (told by :func:`ppaux.triage.kinds.cut_in_setup`),
inside Triton's launch of a kernel (its compiler's or autotuner's frames), or inside a pipeline
stage's send or receive of a tensor (Megatron-Core's ``p2p_communication``); a native
backtrace through torch's NCCL watchdog thread (its abort on a failed collective). What failed there
is not shown; the kind says where, so that the finding and the steps speak of the same thing,
and the steps still begin with the whole log (:data:`CUT_ROOT`).
"""

from __future__ import annotations

from ppaux.patterns import lazy
from ppaux.triage.records import Failure

__all__ = ["CUT_ROOT", "cut_kind"]

#: What to do first where the root's traceback is cut before its exception.
CUT_ROOT = (
    "the root's traceback is cut before its exception: collect that process's whole log (its "
    "stderr, every line) and run ppaux triage on it"
)
#: The last frames looked at: where the paste cut the traceback.
_LAST = 3
#: torch's NCCL watchdog thread, in a native backtrace's frames: it aborts the process when a
#: collective failed or timed out.
_WATCHDOG = "ProcessGroupNCCL::ncclCommWatchdog"
#: A backtrace's frames looked at for it.
_WATCHED_FRAMES = 64
#: Triton's launch of a kernel: its JIT's, compiler's or autotuner's own files.
_TRITON = lazy(r"/triton/(?:runtime|compiler)/[\w.]{1,64}\.py$")
#: A pipeline stage's point-to-point transfer of activations or gradients (Megatron-Core's
#: ``pipeline_parallel/p2p_communication.py``).
_PIPELINE_P2P = lazy(r"/pipeline_parallel/p2p_communication\.py$")
_P2P_FUNCTIONS = frozenset(
    {"recv_forward", "recv_backward", "send_forward", "send_backward", "_communicate"}
)


def cut_kind(failure: Failure, in_setup: bool) -> str | None:
    """The kind of ``failure``, a traceback cut before its exception, told by its last frames
    (``in_setup``: they are a communicator's set-up); None where they do not tell."""
    if failure.exception is not None or not failure.frames:
        return None
    if any(_WATCHDOG in f.function for f in failure.frames[-_WATCHED_FRAMES:]):
        return "communication"  # the NCCL watchdog thread aborted the process on an error
    if failure.said:
        return None
    if in_setup:
        return "communication-init"
    last = failure.frames[-_LAST:]
    if _TRITON.search(last[-1].file) is not None:
        return "shape-kernel"
    if any(f.function in _P2P_FUNCTIONS and _PIPELINE_P2P.search(f.file) is not None for f in last):
        return "communication"
    return None
