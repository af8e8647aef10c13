"""Whether torch is installed, found without importing it (an import costs seconds), and
torch's import for the jobs that need it (:func:`import_torch`)."""

from __future__ import annotations

import gc
import importlib.util
import sys
from types import ModuleType

from ppaux.errors import TorchMissingError

__all__ = ["freeze_after_torch_import", "has_torch", "import_torch", "require_torch"]

#: Whether :func:`import_torch` freezes the heap once torch is in (see
#: :func:`freeze_after_torch_import`).
_FREEZE = [False]


def freeze_after_torch_import() -> None:
    """Ask :func:`import_torch` to move every object alive after torch's import to the
    collector's permanent generation (``gc.freeze``), so that the collections the job runs
    later never scan torch's modules again. For a process that is ppaux's own (the command
    line): in a caller's process that is the caller's choice to make."""
    _FREEZE[0] = True


def import_torch() -> ModuleType:
    """``import torch`` with the cyclic garbage collector paused while its modules load: the
    full collections the interpreter would run in the middle of it free next to nothing and
    cost about 0.1 s of CPU (docs/benchmarks.md). The collector is left as it was found."""
    known = sys.modules.get("torch")
    if known is not None:
        return known
    enabled = gc.isenabled()
    gc.disable()
    try:
        import torch
    finally:
        if enabled:
            gc.enable()
    if _FREEZE[0]:
        gc.freeze()
    return torch


def has_torch() -> bool:
    """True when ``import torch`` would find a package (it may still fail to load)."""
    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):  # a broken or half-removed installation
        return False


def require_torch(feature: str) -> None:
    """Raise :class:`TorchMissingError` naming ``feature`` when torch is not installed."""
    if not has_torch():
        raise TorchMissingError(feature)
