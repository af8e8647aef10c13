"""An application logger's own prefix before a one-line exception record.

A process that logs what it caught through its own logger puts that logger's prefix before
the exception's line, and the line is then no exception line by its shape:

- DeepSpeed's logger: ``[2026-12-03 14:56:07,001] [ERROR] [engine.py:2100:step] ``, its place
  in brackets left out by some of its callers (``[<time>] [ERROR] [rank1]: ...``);
- glog's (and absl's, and C++ libraries'): ``E1203 14:56:07.123456 123 worker.py:10] ``;
- Python logging's ``<time> <LEVEL> `` behind the pod a k9s or stern view names first
  (``sglang-0 2026-12-03 14:56:07,001 ERROR ``), and either of the above behind such a pod.

The prefix is taken off only where what follows it (past torch's ``[rankN]:`` tag) has an
exception line's shape: any other line of such a logger is kept as it was written.
"""

from __future__ import annotations

from ppaux.patterns import lazy
from ppaux.triage.lineshapes import TORCH_PYTHON_RANK
from ppaux.triage.tracelines import raised

__all__ = ["AppPrefix", "app_prefix"]

_LEVEL = r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)"
_TIME = r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?"
#: DeepSpeed's logger: its time and level in brackets (the level's left out by some wrappers),
#: then its place (``[file.py:N:func]``). These three are matched at a given place, not at 0.
_DEEPSPEED = lazy(
    rf"\[(?P<time>{_TIME})\] (?:\[{_LEVEL}\]|{_LEVEL}) "
    r"(?:\[[\w./-]{1,200}:\d{1,9}(?::[\w.<>-]{1,200})?\] )?"
)
#: glog's prefix: severity letter, month and day, clock, thread, file and line.
_GLOG = lazy(r"[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{1,9} +\d{1,10} [\w./-]{1,200}:\d{1,9}\] ")
#: Python logging's time and level (the level left out by some formats).
_PYTHON = lazy(rf"(?P<time>{_TIME}) (?:{_LEVEL}:? )?")
#: The pod (or container) a k9s or stern view names before a line.
_POD = lazy(r"^(?P<pod>[a-z0-9][a-z0-9.-]{0,252}) (?=\[?\d|[IWEF]\d{4} )")


class AppPrefix:
    """What an application logger's prefix said: the pod named before it (or None), its time
    as written (None where it gave no year), the line behind it, and whether its level was
    ERROR, CRITICAL or FATAL (``severe``)."""

    __slots__ = ("pod", "rest", "severe", "time")

    def __init__(self, pod: str | None, time: str | None, rest: str, severe: bool = False) -> None:
        self.pod = pod
        self.time = time
        self.rest = rest
        self.severe = severe


def app_prefix(text: str) -> AppPrefix | None:
    """The :class:`AppPrefix` of ``text``, when an application logger's prefix stands before
    an exception line there; None for any other line."""
    pod: str | None = None
    at = 0
    head = text[:1]
    if head.islower() or (head.isdigit() and text[4:5] != "-"):
        named = _POD.match(text)
        if named is None:
            return None
        pod, at = named.group("pod"), named.end()
    found = _stamp(text, at, pod is not None)
    if found is None:
        return None
    time, end = found
    rest = text[end:]
    if _exception_line(rest):
        return AppPrefix(pod, time, rest, _severe(text[at:end]))
    return None


#: A level that reports a failure, as these loggers write it.
_SEVERE = lazy(r"^[EF]\d{4} |\b(?:ERROR|CRITICAL|FATAL)\b")


def _severe(prefix: str) -> bool:
    """True where a logger's ``prefix`` gives a level that reports a failure."""
    return _SEVERE.search(prefix) is not None


def _stamp(text: str, at: int, podded: bool) -> tuple[str | None, int] | None:
    """(time, end) of the logger's prefix at ``at``; a bare Python time counts only behind a
    pod (a row's own time, with no pod, is the envelope's to read)."""
    char = text[at : at + 1]
    if char == "[":
        deepspeed = _DEEPSPEED.match(text, at)
        return None if deepspeed is None else (deepspeed.group("time"), deepspeed.end())
    if char in ("I", "W", "E", "F"):
        glog = _GLOG.match(text, at)
        return None if glog is None else (None, glog.end())
    if podded and char.isdigit():
        python = _PYTHON.match(text, at)
        return None if python is None else (python.group("time"), python.end())
    return None


def _exception_line(rest: str) -> bool:
    """True when ``rest``, past torch's rank tag, has an exception line's shape."""
    tag = TORCH_PYTHON_RANK.match(rest) if rest[:5] == "[rank" else None
    return raised(rest if tag is None else rest[tag.end() :]) is not None
