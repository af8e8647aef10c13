"""The capture's state in this process, held in one object, :data:`STATE`.

The hot path reads ``STATE.config`` (one attribute load) and nothing else when capture is off;
every change happens under ``STATE.lock``. Tests and tools reset it with :meth:`activate`.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from importlib.abc import MetaPathFinder
from typing import Any

from ppaux.capture.settings import CaptureConfig
from ppaux.capture.trail import Followed
from ppaux.sglang import ADD, POP

__all__ = ["STATE", "CaptureState", "CaptureStats"]


@dataclass(frozen=True)
class CaptureStats:
    """What the capture did in this process since it was (last) installed."""

    written: int
    skipped: int
    failed: int
    last_path: str | None


class CaptureState:
    """Everything the capture changes while it runs: settings, patches, counters, messages."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        #: One writer of this process inside the directory lock at a time.
        self.io_lock = threading.Lock()
        self.config: CaptureConfig | None = None
        #: True when config.when == "always": lets the hot path skip the counters.
        self.sampling = False
        self.counters: dict[str, itertools.count[int]] = {
            ADD: itertools.count(),
            POP: itertools.count(),
        }
        #: target name -> (owner module or class, original, wrapper) for what install() patched.
        self.patched: dict[str, tuple[object, Callable[..., Any], Callable[..., Any]]] = {}
        #: The import hook install() put on sys.meta_path, if any.
        self.watcher: MetaPathFinder | None = None
        #: True once the sglang plugin registered the hooks with sglang's HookRegistry.
        self.plugin_hooks = False
        self.seq = itertools.count(1)
        self.written = 0
        self.skipped = 0
        self.failed = 0
        self.last_path: str | None = None
        self.warned: set[str] = set()
        #: id(message dict) -> the hops it passed (bits, or its trail once dirty), for the output
        #: messages being followed (oldest first: a dict keeps insertion order).
        self.messages: dict[int, Followed] = {}
        #: Hop name -> why it is not checked in this process (its target is missing).
        self.skipped_hops: dict[str, str] = {}
        #: The scheduler class last seen on the output path (for the culprit), if any.
        self.scheduler_type: type | None = None
        #: The PP group class last seen on the wire (for the culprit), if any.
        self.group_type: type | None = None
        #: id of the dict sglang's release add last filled through ppaux's hook.
        self.last_add: int | None = None
        #: (last clean hop, dirty hop) whose next message the line tracer follows, if any.
        self.trace_armed: tuple[str, str] | None = None

    def activate(self, config: CaptureConfig | None) -> None:
        """Put ``config`` in force (None: off) and start the counts afresh."""
        with self.lock:
            self.config = config
            self.sampling = config is not None and config.when == "always"
            for name in self.counters:
                self.counters[name] = itertools.count()
            self.written = self.skipped = self.failed = 0
            self.last_path = None
            self.warned.clear()
            self.messages.clear()
            self.trace_armed = None
            self.scheduler_type = self.group_type = None

    def stats(self) -> CaptureStats:
        """Counts of captures written, skipped by the bounds and failed, in this process."""
        return CaptureStats(self.written, self.skipped, self.failed, self.last_path)


#: The one state of this process.
STATE = CaptureState()
