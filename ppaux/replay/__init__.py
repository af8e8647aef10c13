"""The torch wing: the reference transport (sglang's add and pop, re-implemented), tensors
materialised from dumps, the emulated and torch.distributed wires, and :func:`replay_paths`, the
job behind ``ppaux replay``. Every module here imports torch when it is used.
"""

from ppaux._lazy import lazy_exports

_EXPORTS = {
    "add_auxiliary_output_to_pp_tensors": "transport",
    "pop_auxiliary_output_from_pp_tensors": "transport",
    "replay_paths": "run",
    "ReplayOptions": "run",
    "ReplayConfigError": "run",
    "Impl": "run",
    "Sender": "run",
    "Transport": "run",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
