"""Opening the files ppaux is given: regular files only, never blocking, never read unbounded.

A FIFO would block an ``open`` until a writer comes, and ``/dev/zero`` never ends; a path can
also be swapped for one between a check and the open. So every input file is opened
non-blocking and checked on the open descriptor, and whole-file reads stop one byte past their
limit. Each reader turns :class:`InputFileError` into its own error type.
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

from ppaux.errors import PathError

__all__ = ["InputFileError", "open_regular", "read_regular"]


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
