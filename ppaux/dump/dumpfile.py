"""Open a dump (a ``torch.save`` zip, a plain pickle, or a ppaux capture) without torch: the
file, bytes or stream is told apart by its first bytes; a zip is read by
:mod:`ppaux.dump.zipdump`, a plain pickle here.

:func:`read_dump` reads only the pickled structure: the zip's central directory and its
``data.pkl`` record, never a tensor's bytes. The pickle runs on :mod:`ppaux.dump.pickle_vm` with the
allowlist of :mod:`ppaux.dump.allowlist`, so nothing in the file is imported or called. Files are
opened read-only and never changed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import BinaryIO

from ppaux.dump import allowlist
from ppaux.dump.grammar import pickle_deviation
from ppaux.dump.legacy import LEGACY_MAGIC
from ppaux.dump.legacy_file import read_legacy
from ppaux.dump.pickle_vm import Machine
from ppaux.dump.structure import Dump, failed_after_calls, machine_deviation
from ppaux.dump.zipdump import read_zip
from ppaux.errors import DumpError, LimitExceeded, ReadMismatch, command_on
from ppaux.files import InputFileError, collect_files, open_regular, read_at_most
from ppaux.limits import Limits
from ppaux.report import InputProblem

__all__ = [
    "DUMP_SUFFIXES",
    "collect_dumps",
    "collect_inputs",
    "read_dump",
    "read_dump_bytes",
    "read_dump_stream",
    "readable_dumps",
]

#: File name endings that a directory walk treats as dumps.
DUMP_SUFFIXES = (".pt", ".pth", ".pkl", ".pickle", ".bin", ".ppaux")


def collect_dumps(
    paths: Iterable[str], limits: Limits = Limits()
) -> tuple[list[str], list[InputProblem]]:
    """Expand directories (recursively, links not followed) into dump files, in sorted order;
    an empty directory, or more than ``limits.max_files`` dumps, is an input problem."""
    files, problems = collect_files(paths, DUMP_SUFFIXES, limits.max_files, "dumps")
    return files, [InputProblem.of(problem) for problem in problems]


def readable_dumps(
    paths: Iterable[str], limits: Limits = Limits()
) -> tuple[list[str], list[InputProblem]]:
    """:func:`collect_dumps`, each file also read by :func:`read_dump`: the files it reads, and
    the problems of collecting them and of each file it refuses. Found without torch, for a
    command that needs torch where it is missing: a truncated file is said before torch."""
    found, problems = collect_dumps(paths, limits)
    files = []
    for path in found:
        try:
            read_dump(path, limits)
        except DumpError as exc:
            problems.append(InputProblem.of(exc))
        else:
            files.append(path)
    return files, problems


def collect_inputs(
    paths: Iterable[str], limits: Limits, streams: Mapping[str, BinaryIO]
) -> tuple[list[str], list[InputProblem]]:
    """:func:`collect_dumps`, except that a name in ``streams`` (such as ``'<stdin>'``) stays
    where it stands, to be read from its stream."""
    if not streams:
        return collect_dumps(paths, limits)
    files: list[str] = []
    problems: list[InputProblem] = []
    for path in paths:
        found, missed = ([path], []) if path in streams else collect_dumps([path], limits)
        files += found
        problems += missed
    return files, problems


_ZIP_MAGIC = b"PK\x03\x04"
_EMPTY_ZIP_MAGIC = b"PK\x05\x06"


def read_dump(path: str | os.PathLike[str], limits: Limits = Limits()) -> Dump:
    """Read the structure of the dump at ``path``; raise :class:`DumpError` if it is unusable."""
    path = os.fspath(path)
    if path.endswith(".safetensors"):
        # torch.load reads a path with this ending with safetensors, whatever its bytes hold.
        raise ReadMismatch(
            path,
            "torch.load reads a file named *.safetensors with safetensors, not as the "
            "torch.save zip or pickle ppaux reads",
        )
    try:
        handle, info = open_regular(path, "dump")
    except InputFileError as exc:
        raise DumpError(path, exc.reason) from None
    with handle:
        try:
            head = handle.read(4)
            if not head:
                raise DumpError(path, "empty file")
            if head in (_ZIP_MAGIC, _EMPTY_ZIP_MAGIC):
                handle.seek(0)
                return read_zip(path, handle, info.st_size, limits)
            head += handle.read(28)
            limit, bound = _bound(head, limits)
            if info.st_size > bound:
                raise LimitExceeded(path, limit, bound, f"the pickle is {info.st_size} bytes")
            handle.seek(0)
            data = read_at_most(handle, bound)
        except OSError as exc:  # EIO from a failing disk, /proc/self/mem, ...
            raise DumpError(path, f"cannot read: {exc.strerror or exc}") from None
        if len(data) > bound:  # a file that grew, or lies about its size
            raise LimitExceeded(path, limit, bound, f"the pickle is more than {bound} bytes")
    return _read_pickle(path, data, info.st_size, limits)


def read_dump_bytes(path: str, data: bytes, limits: Limits = Limits()) -> Dump:
    """Read a dump held in memory (``path`` is used in messages only)."""
    if not data:
        raise DumpError(path, "empty file")
    if data[:4] in (_ZIP_MAGIC, _EMPTY_ZIP_MAGIC):
        import io

        return read_zip(path, io.BytesIO(data), len(data), limits)
    limit, bound = _bound(data[:32], limits)
    if len(data) > bound:
        raise LimitExceeded(path, limit, bound, f"the pickle is {len(data)} bytes")
    return _read_pickle(path, data, len(data), limits)


def _bound(head: bytes, limits: Limits) -> tuple[str, int]:
    """The limit on a file that is not a zip, by its first 32 bytes: a legacy torch.save file
    (its magic number among them) holds its storages' bytes after the pickles and is read
    whole up to ``max_stream_bytes``; any other pickle up to ``max_pickle_bytes``."""
    magic = LEGACY_MAGIC.to_bytes(10, "little")
    if magic in head or str(LEGACY_MAGIC).encode() in head:
        return "max_stream_bytes", limits.max_stream_bytes
    return "max_pickle_bytes", limits.max_pickle_bytes


def _check_not_tar(path: str, data: bytes) -> None:
    """Refuse a file that torch.load would read as its old tar format.

    For a file that is not a zip, torch.load first tries ``tarfile.open(mode='r:')`` and, when
    that works, unpickles the archive's 'storages', 'tensors' and 'pickle' members; only a
    ``tarfile.TarError`` sends it on to read the file as a pickle. A file can be both a tar and
    a pickle (the first header's name field can hold a short pickle), so ppaux does not read a
    file that opens as a tar.
    """
    import io
    import tarfile

    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:", format=tarfile.PAX_FORMAT):
            pass
    except tarfile.TarError:
        return
    except Exception:
        return
    raise ReadMismatch(
        path,
        "the file opens as a tar archive: torch.load reads it in its old "
        "tar format and unpickles its members, not the pickle ppaux would read",
    )


def read_dump_stream(name: str, stream: BinaryIO, limits: Limits = Limits()) -> Dump:
    """Read a dump from ``stream`` (stdin), which is held in memory whole; ``name`` ('<stdin>')
    is used in messages. A plain pickle may have ``max_pickle_bytes``, a zip
    ``max_stream_bytes``; past that it is refused without reading the rest."""
    try:
        head = stream.read(32)
        limit, bound = (
            ("max_stream_bytes", limits.max_stream_bytes)
            if head[:4] in (_ZIP_MAGIC, _EMPTY_ZIP_MAGIC)
            else _bound(head, limits)
        )
        data = head + stream.read(max(bound + 1 - len(head), 0))
    except OSError as exc:
        raise DumpError(name, f"cannot read: {exc.strerror or exc}") from None
    if len(data) > bound:
        raise LimitExceeded(name, limit, bound, f"the stream holds more than {bound} bytes")
    return read_dump_bytes(name, data, limits)


def _read_pickle(path: str, data: bytes, size: int, limits: Limits) -> Dump:
    _check_not_tar(path, data)
    machine = Machine(data, path=path, limits=limits, resolve=allowlist.resolve)
    try:
        root = machine.load()
    except DumpError as exc:
        if not isinstance(exc, ReadMismatch) and (machine.items == 0 or machine.op_pos == 0):
            raise DumpError(
                path,
                f"not a torch.save zip or a pickle file ({exc.reason}){_text_hint(path, data)}",
            ) from None
        raise failed_after_calls(machine, exc) from None
    if type(root) is int and root == LEGACY_MAGIC:
        # torch.save(..., _use_new_zipfile_serialization=False): five pickles, then storages.
        return read_legacy(path, data, size, limits)
    return Dump(
        path=path,
        container="pickle",
        root=root,
        size=size,
        globals_seen=machine.globals_seen,
        pickle_bytes=len(data),
        protocol=machine.protocol,
        deviation=machine_deviation(
            machine, "the pickle", pickle_deviation(data, (2, 3, 4, 5), "the pickle")
        ),
    )


def _text_hint(path: str, data: bytes) -> str:
    """'; it is text: ... triage reads it (ppaux triage PATH)' when ``data`` begins as lines
    of text (UTF-8, printable): the usual mistake is a server log given to the dump reader."""
    head = data[:4096]
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:  # a multi-byte character cut at the end is still text
        if exc.start < len(head) - 4:
            return ""
        text = head[: exc.start].decode("utf-8")
    if not text.strip() or not all(c.isprintable() or c in "\t\r\n" for c in text):
        return ""
    return f"; it is text: if it is a server log, triage reads it ({command_on('triage', path)})"
