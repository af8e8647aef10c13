"""Facts about the process a capture is taken in: versions, host, ranks.

Only looks: sglang's parallel state is read from ``sys.modules`` when it is there, never
imported; sglang's version is read as text (importing sglang runs its heavy ``__init__``).
"""

from __future__ import annotations

import functools
import sys
from types import ModuleType
from typing import Any

from ppaux.capture.settings import CaptureConfig
from ppaux.dump import make_meta
from ppaux.sglang import PARALLEL_STATE_MODULE

__all__ = ["capture_meta", "pp_position", "sglang_version"]


def capture_meta(
    function: str, exc: BaseException | None, config: CaptureConfig, torch: ModuleType
) -> dict[str, Any]:
    """The metadata record of a capture taken now, in this process (plain values only)."""
    pp_rank, pp_size = pp_position()
    meta = make_meta(
        function,
        exc,
        when=config.when,
        sglang_version=sglang_version(),
        torch_version=getattr(torch, "__version__", None),
        pp_rank=pp_rank,
        pp_size=pp_size,
    )
    if meta["rank"] is None or meta["world_size"] is None:
        rank, world_size = _distributed_rank(torch)
        if meta["rank"] is None:
            meta["rank"] = rank
        if meta["world_size"] is None:
            meta["world_size"] = world_size
    return {k: _plain(v) for k, v in meta.items()}


def _plain(value: object) -> Any:
    # The format promises plain str/int values: torch.__version__ is a str subclass
    # (TorchVersion) that would pickle as a torch class, and an exception may format to one.
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__index__(value)
    return str(value)


def pp_position() -> tuple[int | None, int | None]:
    """This process's PP rank and size from sglang's parallel state, if it is loaded and set."""
    # Only look, never import: the module pulls in half of sglang and may not be initialised.
    state = sys.modules.get(PARALLEL_STATE_MODULE)
    group = getattr(state, "_PP", None) if state is not None else None
    rank = getattr(group, "rank_in_group", None)
    size = getattr(group, "world_size", None)
    return (rank if isinstance(rank, int) else None, size if isinstance(size, int) else None)


def _distributed_rank(torch: ModuleType) -> tuple[int | None, int | None]:
    try:
        dist = torch.distributed
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
    except Exception:
        pass
    return None, None


@functools.lru_cache(maxsize=1)
def sglang_version() -> str | None:
    """The running sglang's version, read as text: importing sglang would run its heavy __init__."""
    try:
        from ppaux import sglang_source as sglang_module

        root = sglang_module.find_sglang_root()
        if root is not None:
            found = sglang_module.sglang_version(root)
            if found:
                return found
    except Exception:
        pass
    try:
        import importlib.metadata

        return importlib.metadata.version("sglang")
    except Exception:
        return None
