"""Exceptions ppaux raises for inputs it cannot use; each message names the input and the fault."""

from __future__ import annotations

__all__ = [
    "PpauxError",
    "PathError",
    "DumpError",
    "LimitExceeded",
    "TORCH_INSTALL_HINT",
    "TorchMissingError",
]


class PpauxError(Exception):
    """Base of every error ppaux raises on purpose for bad input."""


class PathError(PpauxError):
    """Base of the errors about one input path: ``str()`` is '<path>: <reason>'."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class DumpError(PathError, ValueError):
    """A file that cannot be read as a dump: ``str()`` is '<path>: <reason>'."""


class LimitExceeded(DumpError):
    """A dump that goes over one of the reader's limits (see :class:`ppaux.limits.Limits`)."""

    def __init__(self, path: str, limit: str, value: int, reason: str) -> None:
        super().__init__(path, f"{reason} (limit {limit}={value}; raise it with --limit {limit}=N)")
        self.limit = limit
        self.value = value


#: How to get torch where it is missing. ppaux runs with the torch of the deployment it checks,
#: so the advice is to pin that version rather than to take whatever the index has.
TORCH_INSTALL_HINT = (
    "pip install torch==VERSION, with the torch VERSION your sglang deployment runs"
)


class TorchMissingError(PpauxError, ImportError):
    """A feature that needs torch, asked for where torch is not installed."""

    def __init__(self, feature: str) -> None:
        super().__init__(f"{feature} needs torch, which is not installed: {TORCH_INSTALL_HINT}")
        self.feature = feature
