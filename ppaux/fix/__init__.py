"""Rewriting dumps so that rank 0 can pop them: :func:`tensorize_dump`, the job behind
``ppaux tensorize``. This is part of the torch wing: the rewrite imports torch when it runs.
"""

from ppaux._lazy import lazy_exports

_EXPORTS = {
    "Conversion": "tensorize",
    "Refusal": "tensorize",
    "TensorizeResult": "tensorize",
    "OutputPathError": "tensorize",
    "tensorize_dump": "tensorize",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
