"""Opening the files ppaux is given: regular files only, never blocking, never read unbounded.

A FIFO would block an ``open`` until a writer comes, and ``/dev/zero`` never ends; a path can
also be swapped for one between a check and the open. So every input file is opened
non-blocking and checked on the open descriptor, and whole-file reads stop one byte past their
limit. Each reader turns :class:`InputFileError` into its own error type. Directories given as
inputs are walked by :func:`collect_files`.

Output files follow one rule, :func:`check_output`, whatever command writes them: an output is a
regular file or a new path, never a device, FIFO or directory, and never one of the command's
inputs, however it is spelt (relative, absolute, through ``..``, a symbolic link or a hard
link), so that ``-o`` can never replace the only copy of a capture with a report.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from typing import IO, BinaryIO

from ppaux.errors import PathError, path_shown
from ppaux.suggestions import RaiseLimit, limit_note

__all__ = [
    "InputFileError",
    "OutputPathError",
    "check_output",
    "collect_files",
    "open_regular",
    "os_path",
    "read_at_most",
    "read_regular",
    "shareable_path",
    "stdin_hint",
]


class InputFileError(PathError, OSError):
    """A path that is not a readable regular file: ``reason`` says why, in a few words."""


class OutputPathError(PathError, ValueError):
    """An output path ppaux will not write: one of the inputs, a directory, a device or FIFO,
    or a path whose folder does not exist; ``reason`` says which, and what to give instead."""


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


def stdin_hint(path: str, example: str) -> str:
    """What to give instead of ``path`` when it names a stream (a pipe or FIFO, a socket, a
    terminal or another character device) for a command that reads ``-`` from stdin, as a
    clause to append to the error: '; it is standard input: give - to read it (EXAMPLE)' for this
    process's own standard input however it is spelt (``/dev/stdin``, ``/dev/fd/0``), and
    '; give - and send it on standard input (EXAMPLE)' for another stream (``<(zcat ...)``, a
    FIFO). '' for anything else: a regular file, a directory, a missing path, and a device
    other than a terminal on standard input (``/dev/null``, ``/dev/zero``)."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return ""
    pipe = stat.S_ISFIFO(info.st_mode) or stat.S_ISSOCK(info.st_mode)
    if not pipe and not stat.S_ISCHR(info.st_mode):
        return ""
    try:
        own = os.fstat(0)
    except OSError:  # no standard input at all
        own = None
    if own is not None and (own.st_dev, own.st_ino, own.st_rdev) == (
        info.st_dev,
        info.st_ino,
        info.st_rdev,
    ):
        # A device other than a terminal (/dev/null, /dev/zero) is no input to suggest.
        if pipe or os.isatty(0):
            return f"; it is standard input: give - to read it ({example})"
        return ""
    return f"; give - and send it on standard input ({example})" if pipe else ""


#: Bytes asked of a stream at once when its size is not known.
_CHUNK = 1 << 20


def read_at_most(stream: IO[bytes], limit: int) -> bytes:
    """At most ``limit + 1`` bytes of ``stream`` (one past the limit tells an input that is
    larger), never asking for more than a regular file holds or than :data:`_CHUNK` at a time
    otherwise: a read of ``limit + 1`` bytes allocates them before it reads, and a limit raised
    far past any real input (up to 2**63 - 1) would fail there."""
    try:
        info = os.fstat(stream.fileno())
        hint = info.st_size if stat.S_ISREG(info.st_mode) else _CHUNK
    except (OSError, AttributeError, ValueError):  # io.UnsupportedOperation is a ValueError
        hint = _CHUNK
    want = min(limit + 1, hint + 1)
    first = stream.read(want)
    if len(first) < want or len(first) > limit:
        return first  # the end, or past the limit
    parts, total = [first], len(first)
    while total <= limit:
        part = stream.read(min(_CHUNK, limit + 1 - total))
        if not part:
            break
        parts.append(part)
        total += len(part)
    return b"".join(parts)


def read_regular(path: str, max_bytes: int, what: str = "input", limit: str | None = None) -> bytes:
    """The whole of regular file ``path``, or InputFileError when it is over ``max_bytes``:
    named as limit ``limit`` of :class:`~ppaux.limits.Limits` (with the suggestion to raise
    it) when ``max_bytes`` is that limit, else as no ``what`` at all."""
    handle, _ = open_regular(path, what)
    with handle:
        try:
            data = read_at_most(handle, max_bytes)
        except OSError as exc:
            raise InputFileError(path, _reason(exc)) from None
    if len(data) > max_bytes:
        if limit is not None:
            raise InputFileError(
                path, f"larger than {max_bytes} bytes {limit_note(limit, max_bytes)}"
            ).suggest(RaiseLimit(limit, max_bytes))
        raise InputFileError(path, f"larger than {max_bytes} bytes; not a {what}")
    return data


def collect_files(
    paths: Iterable[str],
    suffixes: tuple[str, ...],
    max_files: int,
    what: str = "files",
    *,
    matches: Callable[[str], bool] | None = None,
    patterns: str | None = None,
    limit: str = "max_files",
) -> tuple[list[str], list[PathError]]:
    """Expand directories (recursively, links not followed, in sorted order) into the files
    whose names end with one of ``suffixes`` (case-insensitive), or that ``matches`` accepts
    where it is given; other paths are kept as given.

    A directory with no such file, or one that would take the count past ``max_files`` (the
    limit called ``limit``; the walk stops there), is a :class:`~ppaux.errors.PathError`;
    ``what`` names the files in it and ``patterns`` the names taken (the suffixes by default).
    """
    accept = matches or (lambda name: name.lower().endswith(suffixes))
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
                if not accept(name):
                    continue
                found.append(os.path.join(folder, name))
                if len(files) + len(found) > max_files:
                    too_many = PathError(
                        path,
                        f"holds more than {max_files} {what} {limit_note(limit, max_files)}",
                    )
                    problems.append(too_many.suggest(RaiseLimit(limit, max_files)))
                    return files, problems
        if not found:
            named = patterns or ", ".join("*" + suffix for suffix in suffixes)
            problems.append(PathError(path, f"directory holds no {what} ({named})"))
        files += found
    return files, problems


#: Entries of an input directory looked at when searching it for the output (a bound on the walk).
_MAX_WALK = 100_000


def check_output(
    output: str, inputs: Iterable[str] = (), suffixes: tuple[str, ...] | None = None
) -> None:
    """Raise :class:`OutputPathError` unless ``output`` may be written: a regular file or a new
    path in an existing folder, and none of ``inputs``.

    An input that is a file is compared with ``output`` by identity (device and inode), so a
    relative or absolute spelling, ``..``, a symbolic link and a hard link are all caught; one
    that names nothing yet is compared by its resolved path. An input that is a directory is
    searched (links not followed) for a file that is ``output``: only files whose names end with
    one of ``suffixes`` (case-insensitive) when those are given, as those are the files the
    command reads from it. ``-`` (stdin) among the inputs is skipped.
    """
    try:
        info: os.stat_result | None = os.stat(output)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise OutputPathError(output, f"cannot write: {exc.strerror or exc}") from None
    if info is None:
        folder = os.path.dirname(os.path.realpath(output)) or "."
        if not os.path.isdir(folder):
            raise OutputPathError(output, "its folder does not exist")
    elif stat.S_ISDIR(info.st_mode):
        raise OutputPathError(output, "is a directory; give a file name")
    elif not stat.S_ISREG(info.st_mode):
        raise OutputPathError(
            output,
            "is not a regular file (a FIFO, socket or device); give a file name, or - for stdout",
        )
    target = os.path.realpath(output)
    for given in inputs:
        if given == "-":
            continue
        try:
            seen = os.stat(given)
        except OSError:
            if os.path.realpath(given) == target:
                raise _is_input(output, given) from None
            continue
        if info is not None and (seen.st_dev, seen.st_ino) == (info.st_dev, info.st_ino):
            raise _is_input(output, given)
        if info is not None and stat.S_ISDIR(seen.st_mode):
            found = _find_in(given, info, suffixes)
            if found is not None:
                raise _is_input(output, found, given)


def _is_input(output: str, given: str, folder: str | None = None) -> OutputPathError:
    where = "" if output == given else f" {path_shown(given)}"
    if folder is not None:
        where += f" (read from the directory {path_shown(folder)})"
    return OutputPathError(
        output,
        f"is the input{where}; ppaux never writes over an input: give another output file",
    )


def _find_in(folder: str, info: os.stat_result, suffixes: tuple[str, ...] | None) -> str | None:
    """The file under ``folder`` that is the same file as ``info``, if any (bounded walk)."""
    wanted = tuple(s.lower() for s in suffixes) if suffixes is not None else None
    looked = 0
    for here, dirs, names in os.walk(folder):
        dirs.sort()
        for name in sorted(names):
            looked += 1
            if looked > _MAX_WALK:
                return None
            if wanted is not None and not name.lower().endswith(wanted):
                continue
            path = os.path.join(here, name)
            try:
                seen = os.stat(path)  # a link in the folder is read as its target
            except OSError:
                continue
            if (seen.st_dev, seen.st_ino) == (info.st_dev, info.st_ino):
                return path
    return None


def os_path(path: str) -> str:
    """The absolute path the system names by ``path`` when a file is opened there: its folder
    resolved as the system resolves it (a link followed before the ``..`` after it, where
    ``os.path.abspath`` would drop the link by its text), its last name kept (a link there is the
    output's own business: :func:`check_output`). Where the folder is not there, ``path`` is
    joined to the working directory and left unresolved, for the write to fail as it would."""
    joined = os.path.join(os.getcwd(), path)
    folder, name = os.path.split(joined)
    if name in ("", ".", ".."):
        folder, name = joined, ""
    try:
        resolved = os.path.realpath(folder, strict=True)
    except OSError:
        return joined
    return os.path.join(resolved, name) if name else resolved


def shareable_path(path: str, root: str | None = None) -> str:
    """``path`` as a report a user may share shows it: relative to ``root`` (default: the
    working directory, which the paths the user gave are relative to) when it lies inside it,
    else its file name alone, so that no machine's directory layout leaks into the report.
    A relative path is given back as it is."""
    if not os.path.isabs(path):
        return path
    base = os.path.abspath(root if root is not None else os.getcwd())
    try:
        inside = os.path.commonpath([base, path]) == base
    except ValueError:  # another drive
        inside = False
    return os.path.relpath(path, base) if inside else os.path.basename(path)
