"""Where ``-o``/``--output`` may write: never over an input, stdin's included.

Every command's ``--output`` follows one rule, checked here and nowhere else in the command
line, before any work: a regular file or a new path in an existing folder, and none of the
inputs (:func:`ppaux.files.check_output` compares them by device and inode, so no spelling, link
or hard link gets past it). ``-`` among the inputs is stdin, and a regular file behind it is an
input like any other:

* ``ppaux triage - -o s.log < s.log``: stdin *is* the file; the output is refused before
  anything is read (:func:`check_output_path`);
* ``cat s.log | ppaux inspect - -o s.log``: stdin is a pipe, and what fills it cannot be asked.
  The command reads stdin through :func:`stdin_reader`, which keeps a digest of every byte it
  hands on; before the report is written, :func:`refuse_stdin_copy` refuses an output that
  holds exactly what stdin gave (the file the pipe was filled from, or a copy of it).

The null device (``-o /dev/null``, or a link to it) is the one output that is not a regular file
and is taken: a CI step that keeps only the exit code discards the report there, and it is
written to directly (:func:`is_null_device`). Every other device, a FIFO, a socket and a
directory is refused.

Each refusal is one line naming ``--output``, exit 2, and the file is left as it was.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import stat
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from ppaux.errors import path_shown
from ppaux_cli.exits import fail

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

__all__ = [
    "StdinReader",
    "check_output_path",
    "is_null_device",
    "output_error",
    "output_identity",
    "refuse_changed_output",
    "refuse_input_as_output",
    "refuse_stdin_copy",
    "stdin_reader",
    "write_fresh",
]

#: The name stdin goes by among the inputs.
_STDIN = "-"

#: Bytes of an output file compared at a time with what stdin gave.
_CHUNK = 1 << 20

#: Where a command read only part of stdin, the least of it that an output file must begin with
#: to be taken for the input (a shorter common beginning may be chance: two dumps share a header).
_PREFIX = 1 << 16


def is_null_device(output: str) -> bool:
    """Whether ``output`` names the null device (:data:`os.devnull`, by any spelling or link):
    the same character device, compared by its device number."""
    try:
        found = os.stat(output)
        null = os.stat(os.devnull)
    except (OSError, ValueError):
        return False
    return (
        stat.S_ISCHR(found.st_mode)
        and stat.S_ISCHR(null.st_mode)
        and (found.st_rdev == null.st_rdev)
    )


def output_error(output: str, exc: OSError) -> str:
    """The line of an output that could not be written (a read-only folder, a full disk): the
    same for every command that writes one, ``--output PATH: cannot write: REASON``."""
    return f"--output {path_shown(output)}: cannot write: {exc.strerror or exc}"


def check_output_path(
    output: str | None, inputs: Iterable[str] = (), suffixes: tuple[str, ...] | None = None
) -> None:
    """Exit 2 with one line, before anything is written, unless ``--output`` may be written:
    a regular file or a new path, and none of ``inputs`` (:func:`ppaux.files.check_output`),
    where ``-`` is stdin and the file behind it, if it is one. None, ``-`` (stdout) and the
    null device (:func:`is_null_device`: nothing is kept there, so no input can be lost) always
    may."""
    if output is None or output == _STDIN:
        return
    if not output:
        fail("--output: an empty path; give a file name, or - for stdout")
    if is_null_device(output):
        return
    from ppaux.files import OutputPathError, check_output

    given = list(inputs)
    try:
        check_output(output, given, suffixes)
    except OutputPathError as exc:
        fail(f"--output {exc}")
    if _STDIN in given:
        _refuse_stdin_file(output)


def _refuse_stdin_file(output: str) -> None:
    """Refuse ``output`` when stdin is that very file (``< s.log``), by device and inode."""
    try:
        behind = os.fstat(sys.stdin.fileno())
        target = os.stat(output)
    except (AttributeError, OSError, ValueError):  # no descriptor, or no such output yet
        return
    if stat.S_ISREG(behind.st_mode) and (behind.st_dev, behind.st_ino) == (
        target.st_dev,
        target.st_ino,
    ):
        fail(
            f"--output {path_shown(output)}: is the input (read from stdin); ppaux never writes "
            "over an "
            "input: give another output file"
        )


def refuse_input_as_output(
    output: str | None, values: Iterable[Any], suffixes: tuple[str, ...] | None
) -> None:
    """:func:`check_output_path` for a command's arguments ``values`` (paths, lists of paths,
    and anything else, which is skipped); a directory among them is searched for files named
    ``*suffix`` (dumps when ``suffixes`` is None)."""
    if output is None or output == _STDIN:
        return
    if suffixes is None:
        from ppaux.dump import DUMP_SUFFIXES

        suffixes = DUMP_SUFFIXES
    inputs: list[str] = []
    for value in values:
        if isinstance(value, str):
            inputs.append(value)
        elif isinstance(value, list | tuple):
            inputs += [item for item in value if isinstance(item, str)]
    check_output_path(output, inputs, suffixes)


class StdinReader(io.RawIOBase):
    """Stdin's bytes, handed on as they are read, with their digest and count kept."""

    def __init__(self, raw: BinaryIO) -> None:
        super().__init__()
        self._raw = raw
        self.digest = hashlib.sha256()
        self.size = 0

    def readable(self) -> bool:
        """Always: this is an input."""
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        """Read at most ``len(buffer)`` bytes into ``buffer``, noting them."""
        view = memoryview(buffer).cast("B")
        read1 = getattr(self._raw, "read1", None)
        data = read1(len(view)) if read1 is not None else self._raw.read(len(view))
        view[: len(data)] = data
        self.digest.update(data)
        self.size += len(data)
        return len(data)


def stdin_reader(output: str | None) -> tuple[BinaryIO, StdinReader | None]:
    """Stdin for a command that reads ``-``: the stream to read, and the reader to hand to
    :func:`refuse_stdin_copy` (None when ``output`` is stdout or not given, as nothing can be
    overwritten then)."""
    raw = sys.stdin.buffer
    if output is None or output == _STDIN:
        return raw, None
    reader = StdinReader(raw)
    return cast(BinaryIO, io.BufferedReader(reader)), reader


#: What an input read from stdin is called in reports and messages.
STDIN_NAME = "<stdin>"


def stdin_streams(
    paths: list[str], output: str | None
) -> tuple[list[str], dict[str, BinaryIO], StdinReader | None]:
    """The inputs of a command that reads ``-`` as stdin: ``paths`` with ``-`` named
    :data:`STDIN_NAME`, the stream under that name, and the reader for
    :func:`refuse_stdin_copy`. Exits 2 with one line where ``-`` is given twice."""
    if paths.count(_STDIN) > 1:
        fail("-: stdin can be read only once")
    if _STDIN not in paths:
        return paths, {}, None
    stream, reader = stdin_reader(output)
    return [STDIN_NAME if p == _STDIN else p for p in paths], {STDIN_NAME: stream}, reader


def refuse_stdin_copy(reader: StdinReader | None, output: str | None) -> None:
    """Exit 2 with one line when the file ``output`` holds the bytes read from stdin (the file
    a pipe was filled from, ``cat s.log | ppaux inspect - -o s.log``): writing the report there
    would lose the input. The file holds them when it is exactly those bytes, or, where the
    command stopped reading early (a limit), when it begins with at least :data:`_PREFIX` of
    them."""
    if reader is None or output is None or reader.size == 0:
        return
    try:
        size = os.path.getsize(output)
        if size < reader.size or (size > reader.size and reader.size < _PREFIX):
            return
        digest = hashlib.sha256()
        left = reader.size
        with open(output, "rb") as handle:
            while left and (chunk := handle.read(min(_CHUNK, left))):
                digest.update(chunk)
                left -= len(chunk)
    except OSError:  # a new path, or one that cannot be read (the writer will say so)
        return
    if digest.digest() == reader.digest.digest():
        fail(
            f"--output {path_shown(output)}: holds what was read from stdin, so it is the input "
            "(or a copy "
            "of it); ppaux never writes over an input: give another output file"
        )


#: What :func:`output_identity` says of an output: per path (the file, then each folder above
#: it up to the root), its device, inode, file type and (a file's) link count, or None where
#: absent.
Identity = tuple[tuple[str, tuple[int, ...] | None], ...]


def _what(path: str, file: bool) -> tuple[int, ...] | None:
    try:
        found = os.lstat(path)
    except OSError:
        return None
    kind = stat.S_IFMT(found.st_mode)
    # A file's link count says whether a link to it was made; a folder's changes with every
    # folder made in it, which says nothing of where the report goes.
    return (found.st_dev, found.st_ino, kind, found.st_nlink if file else 0)


def output_identity(output: str | None) -> Identity | None:
    """What ``output`` is now, as :func:`refuse_changed_output` compares it: the file and every
    folder above it (see :data:`Identity`; links not followed), or None for stdout."""
    if output in (None, _STDIN):
        return None
    made: list[tuple[str, tuple[int, ...] | None]] = []
    path = os.path.abspath(output)
    while True:
        made.append((path, _what(path, not made)))
        above = os.path.dirname(path)
        if above == path:
            return tuple(made)
        path = above


def refuse_changed_output(output: str | None, before: Identity | None) -> None:
    """Refuse to write ``output`` when it, or a folder above it, is not what it was
    (:func:`output_identity`) before code that ppaux does not trust ran (``check-observer``'s
    target): made a link to another file or folder, replaced, moved, or created meanwhile. The
    report would go where the user did not say."""
    now = output_identity(output)
    if now == before or now is None or before is None:
        return
    changed = [path for (path, was), (_, is_now) in zip(before, now, strict=False) if was != is_now]
    which = changed[-1] if changed else output  # the folder highest up that changed
    folder = path_shown(str(which))
    what = "" if which == os.path.abspath(str(output)) else f" (its folder {folder})"
    fail(
        f"--output {path_shown(str(output))}: changed while the target ran{what} (replaced, "
        "moved, linked or "
        "created by another process); the report was not written"
    )


def write_fresh(output: str, text: str) -> None:
    """Write ``text`` to ``output`` as a file made now: a new file in its folder, its mode from
    the umask, renamed over ``output``, so that nothing of what was at ``output`` (a mode
    another process set, its owner) stays; the null device, another file that is not a regular
    file, and a link the user named are written through as they are. Raises OSError."""
    import secrets
    import stat

    try:
        found = os.lstat(output)
    except FileNotFoundError:
        found = None
    if found is not None and not stat.S_ISREG(found.st_mode):
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(text)
        return
    folder = os.path.dirname(os.path.abspath(output))
    temporary = os.path.join(folder, f".{os.path.basename(output)}.{secrets.token_hex(6)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    descriptor = os.open(temporary, flags, 0o666)  # the umask gives the mode
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, output)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
