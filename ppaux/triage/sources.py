"""The logs ``triage`` reads: files, directories of logs, standard input, gzip, opened as
streams and never read whole.

A directory is walked for log files (:data:`LOG_SUFFIXES`, sorted, links not followed). A
stream that begins with gzip's magic bytes is decompressed as it is read, whatever its name;
one that begins with UTF-16's byte-order mark is decoded as it is read.
"""

from __future__ import annotations

import gzip
import io
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, BinaryIO, cast

from ppaux.errors import PathError
from ppaux.files import InputFileError, open_regular
from ppaux.text import shown

__all__ = [
    "LOG_SUFFIXES",
    "MAX_LOG_FILES",
    "LogOpenError",
    "LogSource",
    "expand_paths",
    "gzip_cut",
    "is_log_name",
    "open_log",
]

#: What a log file is called inside a directory given to ``triage``: plain logs (Kubernetes'
#: ``0.log``, Docker's ``<id>-json.log``, ``server.log``), captured output, rotated and gzip logs.
LOG_SUFFIXES = (".log", ".gz", ".txt", ".out", ".err", ".json", ".jsonl")
#: Files taken from the directories of one run (a bound on the walk, not on what is useful).
MAX_LOG_FILES = 10_000

_GZIP_MAGIC = b"\x1f\x8b"
#: UTF-16's byte-order marks, little- and big-endian.
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_ROTATED = re.compile(r"\.log\.[0-9][0-9-]*(?:\.gz)?$")


class LogOpenError(PathError, OSError):
    """A log that cannot be opened: ``str()`` is '<path>: <reason>'."""


@dataclass(frozen=True)
class LogSource:
    """One log to read: ``name`` is how reports call it (the path as given, or ``<stdin>``)."""

    name: str
    stream: BinaryIO | None = None


def is_log_name(name: str) -> bool:
    """Whether a file found in a directory is taken as a log: one of :data:`LOG_SUFFIXES`, or a
    rotated log (``0.log.20261203-101500``, ``server.log.1``, kubelet's and logrotate's names)."""
    lowered = name.lower()
    return lowered.endswith(LOG_SUFFIXES) or _ROTATED.search(lowered) is not None


def expand_paths(paths: Iterable[str]) -> tuple[list[str], list[PathError]]:
    """Directories expanded into their log files (:func:`is_log_name`; sorted, recursively,
    links not followed, at most :data:`MAX_LOG_FILES`); other paths kept as given."""
    files: list[str] = []
    problems: list[PathError] = []
    for path in paths:
        if not os.path.isdir(path):
            files.append(path)
            continue
        found: list[str] = []
        for folder, dirs, names in os.walk(path):
            dirs.sort()
            found += [os.path.join(folder, n) for n in sorted(names) if is_log_name(n)]
            if len(files) + len(found) > MAX_LOG_FILES:
                problems.append(
                    PathError(shown(path, None), f"holds more than {MAX_LOG_FILES} log files")
                )
                return files, problems
        if not found:
            patterns = ", ".join("*" + suffix for suffix in LOG_SUFFIXES)
            problems.append(
                PathError(shown(path, None), f"directory holds no log files ({patterns}, *.log.N)")
            )
        files += found
    return files, problems


class _Gunzip(io.RawIOBase):
    """A gzip stream read as far as it goes: a cut-off or corrupt tail ends the stream and is
    remembered (``cut``), instead of failing the whole log."""

    def __init__(self, raw: BinaryIO) -> None:
        self._inner = gzip.GzipFile(fileobj=raw, mode="rb")
        self._raw = raw
        self.cut: str | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        if self.cut is not None:
            return 0
        try:
            # One inflation step a call: what a step before a corrupt tail inflated has been
            # handed on already (a readinto that fills the whole buffer would lose it).
            return self._inner.readinto1(buffer)
        except Exception as exc:  # EOFError, BadGzipFile, zlib.error: corrupt from here on
            self.cut = str(exc) or type(exc).__name__
            return 0

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self._raw.close()
            super().close()


class _Utf16(io.RawIOBase):
    """A UTF-16 log read as UTF-8, as it is decoded: Windows PowerShell's ``>`` writes UTF-16
    with a byte-order mark (``kubectl logs pod > sglang.log``), in which no marker would be
    found. Bytes that are not UTF-16 are kept as ``\\xNN``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self._text = io.TextIOWrapper(
            inner, encoding="utf-16", errors="backslashreplace", newline=""
        )
        self._pending = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self._pending:
            text = self._text.read(1 << 20)
            if not text:
                return 0
            self._pending = memoryview(text.encode("utf-8", "backslashreplace"))
        count = min(len(buffer), len(self._pending))
        buffer[:count] = self._pending[:count]
        self._pending = self._pending[count:]
        return count

    def close(self) -> None:
        try:
            self._text.close()
        finally:
            super().close()


def open_log(source: LogSource) -> BinaryIO:
    """A binary stream of ``source``'s bytes, decompressed when they are gzip.

    Raises :class:`LogOpenError` for a path that is not a readable regular file.
    """
    if source.stream is not None:
        raw: BinaryIO = source.stream
    else:
        try:
            raw, _ = open_regular(source.name, "log")
        except InputFileError as exc:
            raise LogOpenError(exc.path, exc.reason) from None
    buffered: Any = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(cast(Any, raw))
    try:
        head = buffered.peek(2)[:2]
    except OSError as exc:
        raise LogOpenError(source.name, f"cannot read: {exc.strerror or exc}") from None
    stream = buffered
    if head == _GZIP_MAGIC:
        stream = io.BufferedReader(_Gunzip(buffered), buffer_size=1 << 20)
    if stream.peek(2)[:2] in _UTF16_BOMS:
        stream = io.BufferedReader(_Utf16(stream), buffer_size=1 << 20)
    return cast(BinaryIO, stream)


def gzip_cut(stream: BinaryIO) -> str | None:
    """Why a gzip log ended early (a cut-off or corrupt stream), or None."""
    raw = getattr(stream, "raw", None)
    if isinstance(raw, _Utf16):
        raw = getattr(raw.inner, "raw", None)
    return raw.cut if isinstance(raw, _Gunzip) else None
