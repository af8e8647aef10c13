"""Opening the files ppaux is given: regular files only, never blocking, never read unbounded.

A FIFO would block an ``open`` until a writer comes, and ``/dev/zero`` never ends; a path can
also be swapped for one between a check and the open. So every input file is opened
non-blocking and checked on the open descriptor, and whole-file reads stop one byte past their
limit. Each reader turns :class:`InputFileError` into its own error type. Directories given as
inputs are walked by :func:`collect_files`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from typing import BinaryIO

from ppaux.errors import PathError, limit_note
from ppaux.text import shown

__all__ = ["InputFileError", "collect_files", "open_regular", "read_regular"]


class InputFileError(PathError, OSError):
    """A path that is not a readable regular file: ``reason`` says why, in a few words."""


def _reason(exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return "no such file"
    if isinstance(exc, PermissionError):
        return "permission denied"
    return f"cannot read: {exc.strerror or exc}"


def open_regular(path: str, what: str = "input") -> tuple[BinaryIO, os.stat_result]:
    """Open ``path`` for binary reading if it is a regular file; ``what`` ('dump', ...) names
    the kind of file in errors."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise InputFileError(path, _reason(exc)) from None
    if stat.S_ISDIR(info.st_mode):
        raise InputFileError(path, f"is a directory, not a {what} file")
    if not stat.S_ISREG(info.st_mode):
        raise InputFileError(path, "is not a regular file (a FIFO, socket or device)")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise InputFileError(path, _reason(exc)) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):  # swapped after the check above
        os.close(fd)
        raise InputFileError(path, "is not a regular file (a FIFO, socket or device)")
    return os.fdopen(fd, "rb"), info


def read_regular(path: str, max_bytes: int, what: str = "input") -> bytes:
    """The whole of regular file ``path``, or InputFileError when it is over ``max_bytes``."""
    handle, _ = open_regular(path, what)
    with handle:
        try:
            data = handle.read(max_bytes + 1)
        except OSError as exc:
            raise InputFileError(path, _reason(exc)) from None
    if len(data) > max_bytes:
        raise InputFileError(path, f"larger than {max_bytes} bytes; not a {what}")
    return data


def collect_files(
    paths: Iterable[str], suffixes: tuple[str, ...], max_files: int, what: str = "files"
) -> tuple[list[str], list[PathError]]:
    """Expand directories (recursively, links not followed) into the files whose names end
    with one of ``suffixes`` (case-insensitive), in sorted order; other paths are kept as given.

    A directory with no such file, or one that would take the count past ``max_files`` (the
    walk stops there), is a :class:`~ppaux.errors.PathError`; ``what`` names the files in it.
    """
    files: list[str] = []
    problems: list[PathError] = []
    for path in paths:
        if not os.path.isdir(path):
            files.append(path)
            continue
        found: list[str] = []
        for folder, dirs, names in os.walk(path):
            dirs.sort()
            for name in sorted(names):
                if name.lower().endswith(suffixes):
                    found.append(os.path.join(folder, name))
                    if len(files) + len(found) > max_files:
                        problems.append(
                            PathError(
                                shown(path, None),
                                f"holds more than {max_files} {what} {limit_note('max_files')}",
                            )
                        )
                        return files, problems
        if not found:
            patterns = ", ".join("*" + suffix for suffix in suffixes)
            problems.append(PathError(shown(path, None), f"directory holds no {what} ({patterns})"))
        files += found
    return files, problems
