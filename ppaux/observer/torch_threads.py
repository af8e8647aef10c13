"""Which threads torch's own code started (a compile pool of ``torch.compile``, a loader's
workers): they are torch's, not the target's, and a check never names them as threads the
target left running.

A thread is torch's when the code that started it (the first caller of ``Thread.start`` outside
:mod:`threading` and :mod:`concurrent.futures`, so that a pool's worker counts as started by the
code that submitted to the pool) is a module of torch's, or when the function it runs is. A
thread the target starts from its own code, through a stdlib executor too, stays the target's.

Imports nothing beyond the standard library.
"""

from __future__ import annotations

import sys
import threading
import weakref
from types import FrameType
from typing import Any

__all__ = ["is_torchs", "note_torchs_threads", "torchs_module"]

#: The modules that start a thread for their caller (a pool's worker is its submitter's).
_ON_BEHALF = ("threading", "concurrent.futures")

_torchs: weakref.WeakSet[threading.Thread] = weakref.WeakSet()
_noted = False


def torchs_module(name: object) -> bool:
    """Whether a module of that name is torch's own (``torch`` or ``torch.*``)."""
    return isinstance(name, str) and (name == "torch" or name.startswith("torch."))


def _on_behalf(name: object) -> bool:
    return isinstance(name, str) and any(
        name == module or name.startswith(module + ".") for module in _ON_BEHALF
    )


def starter(frame: FrameType | None) -> object:
    """The module name of the first frame from ``frame`` outward that is not the standard
    library's thread machinery (None when there is none)."""
    while frame is not None and _on_behalf(frame.f_globals.get("__name__")):
        frame = frame.f_back
    return None if frame is None else frame.f_globals.get("__name__")


def note_torchs_threads() -> None:
    """From now on, remember each thread that torch's code starts (in this process, once)."""
    global _noted
    if _noted:
        return
    _noted = True
    original = threading.Thread.start

    def start(self: threading.Thread) -> Any:
        if torchs_module(starter(sys._getframe(1))):
            _torchs.add(self)
        return original(self)

    start.__wrapped__ = original  # type: ignore[attr-defined]
    threading.Thread.start = start  # type: ignore[method-assign]


def is_torchs(thread: threading.Thread) -> bool:
    """Whether ``thread`` was started by torch's code or runs a function of torch's."""
    if thread in _torchs:
        return True
    function = getattr(thread, "_target", None)
    return torchs_module(getattr(function, "__module__", None))
