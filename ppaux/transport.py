"""sglang's add and pop of auxiliary PP output, re-implemented: a stable import path.

The implementation lives in :mod:`ppaux.replay.transport`; this module keeps
``from ppaux.transport import ...`` working for code written against earlier releases of ppaux.
"""

from ppaux.replay.transport import (
    PipelineParallelAuxiliaryOutput,
    PipelineParallelSamplingObserver,
    add_auxiliary_output_to_pp_tensors,
    pop_auxiliary_output_from_pp_tensors,
)

__all__ = [
    "PipelineParallelAuxiliaryOutput",
    "PipelineParallelSamplingObserver",
    "add_auxiliary_output_to_pp_tensors",
    "pop_auxiliary_output_from_pp_tensors",
]
