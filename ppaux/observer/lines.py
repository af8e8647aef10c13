"""Which lines of its own file a hook of the target ran, and so which line made a value.

A finding about what ``to_pp_tensors`` returned (a list under ``'top_ids'``) or what
``from_pp_tensors`` rebuilt (``.top_ids`` sliced) is most useful at the line that made that
value, not at the method's ``def``. While a hook runs, :func:`run_traced` records the lines
executed in the target's own files (its helpers included; ppaux, the standard library and
installed packages such as torch are not traced), at most :data:`MAX_LINES` of them, and the
line its ``return`` ran on. :func:`made_at` then names, for each value name, the latest
line that mentions it, the ``return`` line aside where another line does; the return line, else
nothing, for a name no line mentions.

This runs in the check's child, with the target; the parent only reads the result.
"""

from __future__ import annotations

import linecache
import os
import re
import sys
import sysconfig
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from ppaux.observer.inhand import THREAD_START, started_by_target

__all__ = [
    "MAX_LINES",
    "Announce",
    "Place",
    "Ran",
    "announce_hooks",
    "announce_steps",
    "at_step",
    "last_run",
    "made_at",
    "run_traced",
    "targets_file",
]

#: Lines kept per hook call: the latest ones, where the returned values were made.
MAX_LINES = 2000

#: Names looked up per hook: a value's names are a dict's keys or an output's fields.
MAX_NAMES = 64


#: A line the target ran: its file, its number and the qualified name of its function.
Place = tuple[str, int, str]


@dataclass
class Ran:
    """What one call of a hook ran in the target's own files: ``lines`` as (file, line) in
    order (the latest :data:`MAX_LINES`), the line of the ``return`` that ended the hook's own
    function (None when it raised, or when that function is ppaux's wrapper around the
    target's), and the names of what it returned (a mapping's keys)."""

    lines: deque[Place] = field(default_factory=lambda: deque(maxlen=MAX_LINES))
    returned: Place | None = None
    keys: list[str] = field(default_factory=list)
    #: The hook's own function (its file and qualified name), None when it has no code object.
    own: tuple[str, str] | None = None


#: Told when a hook begins (its method and where its function is defined) and when it ends
#: (None): the child's parent names the hook that was running when the child went silent.
Announce = Callable[[str | None, Place | None], None]


class _Latest(threading.local):
    """Each thread's latest run of each hook (two checks in threads of one process, a test
    suite's, name their own target's lines), and whom to tell when a hook begins and ends."""

    def __init__(self) -> None:
        self.runs: dict[str, Ran] = {}
        self.announce: Announce | None = None
        self.step: Callable[[int, int], None] | None = None


_LAST = _Latest()

_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_LIBRARY = tuple(
    os.path.abspath(p)
    for p in {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
)


def targets_file(file: str) -> bool:
    """Whether ``file`` is the target's own code (see :func:`_targets`)."""
    return _targets(file)


def _targets(file: str) -> bool:
    """Whether ``file`` is the target's own code: not ppaux, the standard library or an
    installed package (torch among them), nor frozen or generated code."""
    if file.startswith("<"):
        return False
    path = os.path.abspath(file)
    return not path.startswith(_HERE) and not path.startswith(_LIBRARY)


def last_run(method: str) -> Ran | None:
    """The latest traced call of the hook ``method`` ('to_pp_tensors', ...) in this thread,
    if any."""
    return _LAST.runs.get(method)


def announce_hooks(announce: Announce | None) -> None:
    """Have this thread's hooks told to ``announce`` as they begin and end (None: to nobody)."""
    _LAST.announce = announce


def announce_steps(step: Callable[[int, int], None] | None) -> None:
    """Have :func:`at_step` told to ``step`` (batch size, step) in this thread (None: to
    nobody): the child's parent names the step at which the child ended."""
    _LAST.step = step


def at_step(batch_size: int, index: int) -> None:
    """Step ``index`` of ``batch_size`` begins (see :func:`announce_steps`)."""
    step = _LAST.step
    if step is not None:
        step(batch_size, index)


def run_traced(method: str, function: Callable[..., Any], *args: object) -> Any:
    """``function(*args)``, with the lines it runs in the target's own files recorded as
    ``method``'s latest run."""
    code = getattr(getattr(function, "__func__", function), "__code__", None)
    ran = Ran()
    if code is not None:
        ran.own = (code.co_filename, code.co_qualname)
    _LAST.runs[method] = ran
    announce = _LAST.announce
    if announce is not None:
        defined = None
        if code is not None:
            defined = (code.co_filename, code.co_firstlineno, code.co_qualname)
        announce(method, defined)
    files: dict[str, bool] = {}

    def local(frame: FrameType, event: str, arg: object) -> Any:
        if event == "line":
            ran.lines.append((frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_qualname))
        elif event == "return" and frame.f_code is code:
            ran.returned = (frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_qualname)
        return local

    def calls(frame: FrameType, event: str, arg: object) -> Any:
        if frame.f_code is THREAD_START:  # the target starts a thread (named if it lingers)
            started_by_target(frame.f_locals["self"], frame)
        file = frame.f_code.co_filename
        if file not in files:
            files[file] = _targets(file)
        return local if files[file] else None

    previous = sys.gettrace()
    sys.settrace(calls)
    try:
        result = function(*args)
    finally:
        sys.settrace(previous)
        if announce is not None:
            announce(None, None)
    if isinstance(result, Mapping):
        try:
            ran.keys = [k for k in list(result)[:MAX_NAMES] if isinstance(k, str)]
        except Exception:  # the target's mapping refuses to be listed: no names from it
            ran.keys = []
    return result


def _mentions(name: str) -> re.Pattern[str]:
    # The name as a string literal ('top_ids', "top_ids") or as a whole identifier.
    quoted = re.escape(name)
    return re.compile(rf"""(['"]){quoted}\1|(?<![\w.]){quoted}(?!\w)|\.{quoted}(?!\w)""")


def made_at(ran: Ran, names: Iterable[str]) -> dict[str, Place]:
    """For each of ``names`` (the first :data:`MAX_NAMES`), the latest line ``ran`` ran that
    mentions it, other than its ``return`` line when another one does; the ``return`` line
    when only it does. Lines of the hook's own function come first: a helper it calls (a
    constructor's ``self.ids = ids``) stores what the hook gave it, so it is where the hook
    mentions no name that the helper's line is the one to change."""
    lines = list(dict.fromkeys(reversed(ran.lines)))  # newest first, each line once
    texts = {place: linecache.getline(place[0], place[1]) for place in lines}
    found: dict[str, Place] = {}
    longest = max(map(len, texts.values()), default=0)  # a longer name is on no line
    for name in list(dict.fromkeys(names))[:MAX_NAMES]:
        if len(name) > longest or not name.isidentifier():
            continue
        pattern = _mentions(name)
        hits = [place for place in lines if pattern.search(texts[place])]
        own = [place for place in hits if (place[0], place[2]) == ran.own]
        for group in (own, hits):
            others = [place for place in group if place != ran.returned]
            if others or group:
                found[name] = (others or group)[0]
                break
    return found
