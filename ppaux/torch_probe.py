"""Whether torch is installed, found without importing it (an import costs seconds)."""

from __future__ import annotations

import importlib.util

from ppaux.errors import TorchMissingError

__all__ = ["has_torch", "require_torch"]


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
