"""``-o`` as it was before code that ppaux does not trust ran (``check-observer``'s target), put
back where ppaux ends without writing its report there.

The target runs as the user does and can write any file, the report's among them: a forged
report at ``-o`` that ppaux leaves in place (it exits 2 when the path changed, or when the
target cannot be used) would be read as ppaux's. So after any run the file at ``-o`` is ppaux's
own report, or what the user had there before the target ran (a regular file's bytes and mode,
kept meanwhile in an unnamed temporary file), or absent where nothing was there.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass
from typing import BinaryIO

from ppaux_cli.output_paths import Identity, output_identity

__all__ = ["KeptOutput", "keep_output", "output_state"]

#: What :func:`output_state` says of ``-o``: its identity (:func:`output_identity`), and a
#: regular file's size, modification time and sha256.
State = tuple[Identity | None, tuple[int, int, str] | None]


def _contents(path: str) -> tuple[int, int, str] | None:
    """A regular file's size, modification time and sha256 (links not followed), else None."""
    try:
        found = os.lstat(path)
        if not stat.S_ISREG(found.st_mode):
            return None
        digest = hashlib.sha256()
        with open(path, "rb") as file:
            for chunk in iter(lambda: file.read(1 << 20), b""):
                digest.update(chunk)
    except OSError:
        return None
    return found.st_size, found.st_mtime_ns, digest.hexdigest()


def output_state(output: str | None) -> State | None:
    """What ``output`` is now (None for stdout): compared before and after ppaux's report."""
    if output in (None, "-"):
        return None
    return output_identity(output), _contents(output)


@dataclass
class KeptOutput:
    """``-o`` as it was (see the module's docstring)."""

    output: str | None
    #: The path and every folder above it, as :func:`output_identity` says.
    identity: Identity | None
    #: A regular file's bytes, and its mode; None where none was there.
    saved: BinaryIO | None
    mode: int
    #: When the target could first have run (``time.time_ns()``).
    since_ns: int
    #: A regular file that could not be read: it is left as it is.
    unreadable: bool = False

    def put_back(self, after: State | None) -> None:
        """Unless ppaux wrote its report (``-o`` is no longer ``after``, what it was just before
        the report was written; None where it never got there), make ``-o`` what it was."""
        try:
            if after is not None and output_state(self.output) != after:
                return  # the report is there
            self._put_back()
        except OSError:
            pass  # what cannot be put back is left as it is
        finally:
            if self.saved is not None:
                self.saved.close()

    def _put_back(self) -> None:
        path = self.output
        if path is None or self.identity is None or self.unreadable:
            return
        now = output_identity(path)
        if now is None:
            return
        if now[1:] != self.identity[1:]:
            # A folder above it changed: -o names another folder's file now. One the run made
            # or changed is removed; nothing is written there.
            found = os.lstat(path) if now[0][1] is not None else None
            if found is not None and not stat.S_ISDIR(found.st_mode):
                if found.st_ctime_ns >= self.since_ns:
                    os.unlink(path)
            return
        same_file = now[0] == self.identity[0] and self.identity[0][1] is not None
        if not same_file and now[0][1] is not None:
            _remove(path, self.since_ns)
        if self.saved is None:
            return
        flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        flags |= os.O_TRUNC if same_file else os.O_EXCL
        self.saved.seek(0)
        with os.fdopen(os.open(path, flags, self.mode), "wb") as file:
            shutil.copyfileobj(self.saved, file)


def _remove(path: str, since_ns: int) -> None:
    """Remove what the target put at ``path``: a file, a link (never followed), or anything
    else not a folder; a folder it made (changed since ``since_ns``) with all it holds, its
    links removed, never followed."""
    found = os.lstat(path)
    if not stat.S_ISDIR(found.st_mode):
        os.unlink(path)
    elif found.st_ctime_ns >= since_ns:
        shutil.rmtree(path)  # its links are removed, not followed (see shutil's docs)


def keep_output(output: str | None) -> KeptOutput:
    """``output`` as it is now, before the target runs (see :class:`KeptOutput`)."""
    identity = output_identity(output)
    saved, mode = None, 0o644
    if output not in (None, "-") and identity is not None and identity[0][1] is not None:
        try:
            found = os.lstat(str(output))
            if stat.S_ISREG(found.st_mode):
                mode = stat.S_IMODE(found.st_mode)
                saved = tempfile.TemporaryFile()
                with open(str(output), "rb") as file:
                    shutil.copyfileobj(file, saved)
        except OSError:  # what cannot be read cannot be put back: the file is left alone
            if saved is not None:
                saved.close()
            return KeptOutput(output, identity, None, mode, time.time_ns(), unreadable=True)
    return KeptOutput(output, identity, saved, mode, time.time_ns())
