"""A capture directory on disk: its layout, its usage against the bounds, and what it holds.

One directory may receive captures from many threads and processes (every scheduler of a
server). Its layout::

    capture-<UTC time>-<host>-<pid>-<seq>-<add|pop>.pt   one finished capture each
    .ppaux-tmp-*                                        a capture being written (renamed when done)
    .ppaux-capture.lock                                 serialises the bound checks across processes
    .ppaux-capture.skipped                              how many captures the bounds refused

Only finished captures count against ``max_files`` and ``max_bytes``. This module never imports
torch: it lists files and reads each capture's metadata with the safe reader (:mod:`ppaux.dump`).
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ppaux.capture.settings import MAX_COUNTER_BYTES
from ppaux.errors import PathError

__all__ = [
    "LOCK_NAME",
    "SKIPPED_NAME",
    "TEMP_PREFIX",
    "CaptureDirError",
    "CaptureEntry",
    "Usage",
    "capture_name",
    "capture_paths",
    "list_captures",
    "read_skipped",
    "usage",
]

LOCK_NAME = ".ppaux-capture.lock"
SKIPPED_NAME = ".ppaux-capture.skipped"
TEMP_PREFIX = ".ppaux-tmp-"

_CAPTURE_RE = re.compile(r"^capture-[^/]+\.pt$")
# Host names become part of a file name: keep letters, digits, '.', '_' and '-' only.
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class CaptureDirError(PathError, ValueError):
    """A capture directory that cannot be used: ``str()`` is '<path>: <reason>'."""


@dataclass(frozen=True)
class Usage:
    """What the finished captures of a directory take: how many files and how many bytes."""

    files: int
    bytes: int


@dataclass(frozen=True)
class CaptureEntry:
    """One capture file: its size and metadata, or why its metadata could not be read."""

    path: Path
    size: int
    meta: dict[str, Any] | None
    problem: str | None = None
    #: The hops the message passed, when a checkpoint took the capture.
    trail: list[dict[str, Any]] | None = None
    #: The code between the last clean and the first dirty hop, when one was resolved.
    culprit: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """The entry as a JSON object (``meta`` as recorded, ``problem`` when unreadable,
        ``trail`` and ``culprit`` when a checkpoint took it)."""
        return {
            "path": str(self.path),
            "size": self.size,
            "meta": self.meta,
            "problem": self.problem,
            "trail": self.trail,
            "culprit": self.culprit,
        }


def capture_name(time: str, host: str, pid: int, seq: int, function: str) -> str:
    """The file name of a capture; unique per host, process and call, sortable by time.

    ``time`` is a compact UTC stamp such as ``20261202T100000Z``; ``function`` is the full
    function name, shortened to ``add`` or ``pop``. ``seq`` counts the captures of one process
    (zero-padded, so that names of one process and second sort in order).
    """
    short = "add" if function.startswith("add") else "pop" if function.startswith("pop") else "call"
    safe_host = _UNSAFE.sub("_", host)[:64] or "host"
    return f"capture-{time}-{safe_host}-{pid}-{seq:04d}-{short}.pt"


def capture_paths(directory: str | os.PathLike[str]) -> list[Path]:
    """The finished captures in ``directory``, oldest name first; [] when it does not exist.

    Raises :class:`OSError` when the directory exists but cannot be listed.
    """
    base = Path(directory)
    try:
        names = os.listdir(base)
    except FileNotFoundError:
        return []
    return [base / n for n in sorted(names) if _CAPTURE_RE.match(n)]


def usage(directory: str | os.PathLike[str]) -> Usage:
    """Files and bytes of the finished captures in ``directory`` (what the bounds count).

    A file that disappears while it is counted (deleted by a user) is simply not counted.
    """
    files = 0
    total = 0
    for path in capture_paths(directory):
        try:
            info = path.lstat()
        except FileNotFoundError:
            continue
        if stat.S_ISREG(info.st_mode):
            files += 1
            total += info.st_size
    return Usage(files, total)


def read_skipped(directory: str | os.PathLike[str]) -> int:
    """How many captures the bounds of ``directory`` refused so far (0 when none recorded)."""
    try:
        with open(Path(directory) / SKIPPED_NAME, "rb") as handle:
            text = handle.read(MAX_COUNTER_BYTES + 1)
    except FileNotFoundError:
        return 0
    if len(text) > MAX_COUNTER_BYTES:
        return 0
    try:
        value = int(text.decode("ascii").strip() or "0")
    except (UnicodeDecodeError, ValueError):
        return 0
    return max(value, 0)


def _candidates(directory: str | os.PathLike[str]) -> list[tuple[Path, bool]]:
    """The files of ``directory`` that may be captures, sorted by name, each with whether its
    name is a capture's: a capture renamed or copied in under another name is found by its
    content, so every dump file (``*.pt``, ``*.pkl``, ...) is a candidate too."""
    from ppaux.dump import DUMP_SUFFIXES

    base = Path(directory)
    try:
        names = os.listdir(base)
    except FileNotFoundError:
        return []
    found = []
    for name in sorted(names):
        named = bool(_CAPTURE_RE.match(name))
        if named or (not name.startswith(".") and name.lower().endswith(DUMP_SUFFIXES)):
            found.append((base / name, named))
    return found


def list_captures(
    directory: str | os.PathLike[str], passed_over: list[CaptureEntry] | None = None
) -> list[CaptureEntry]:
    """Every finished capture in ``directory`` with its metadata, read without torch.

    Captures are found by their content: a file named like a capture, and any other dump file
    that holds a ppaux capture record. A file named like a capture that is not a readable ppaux
    capture is listed with ``meta`` None and the reason in ``problem``; another dump file that
    is not a capture is passed over, and added to ``passed_over`` (when given) with the reason
    in ``problem``. Nothing in a file is ever executed.
    """
    from ppaux.dump import read_culprit, read_dump, read_trail
    from ppaux.errors import DumpError

    entries: list[CaptureEntry] = []
    for path, named in _candidates(directory):
        try:
            size = path.lstat().st_size
        except FileNotFoundError:
            continue
        try:
            record = read_dump(path).capture
        except DumpError as exc:
            taken = entries if named else passed_over
            if taken is not None:
                taken.append(CaptureEntry(path, size, None, exc.reason))
            continue
        if record is None:
            taken = entries if named else passed_over
            if taken is not None:
                taken.append(CaptureEntry(path, size, None, "not a ppaux capture file"))
            continue
        meta = {k: _plain(v) for k, v in record["meta"].items() if isinstance(k, str)}
        entries.append(
            CaptureEntry(path, size, meta, trail=read_trail(record), culprit=read_culprit(record))
        )
    return entries


def _plain(value: object) -> Any:
    # Metadata is plain data when ppaux wrote it; anything else is shown, never trusted.
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)
