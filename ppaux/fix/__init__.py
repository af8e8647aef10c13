"""Rewriting dumps so that rank 0 can pop them: :func:`tensorize_dump`, the job behind
``ppaux tensorize``. This is part of the torch wing: the rewrite imports torch when it runs.
"""

from typing import TYPE_CHECKING

from ppaux._lazy import lazy_exports

if TYPE_CHECKING:
    from ppaux.fix.tensorize import (
        Conversion,
        OutputPathError,
        Refusal,
        TensorizeResult,
        tensorize_dump,
    )

#: Each public name and the module that holds it, imported on first use.
_EXPORTS = {
    "Conversion": "tensorize",
    "Refusal": "tensorize",
    "TensorizeResult": "tensorize",
    "OutputPathError": "tensorize",
    "tensorize_dump": "tensorize",
}

__all__ = [
    "Conversion",
    "OutputPathError",
    "Refusal",
    "TensorizeResult",
    "tensorize_dump",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
