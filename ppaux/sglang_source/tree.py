"""Read the files of an sglang package, installed, unpacked or in a wheel, without importing it.

``import sglang`` runs ``sglang/__init__.py``, which pulls in about eighteen heavy packages, so
ppaux never imports it. It finds the installed package with ``importlib.util.find_spec``, which
for a top-level name only searches ``sys.path``, and reads files as bytes: from a directory, or
straight from a ``.whl`` (a zip) without unpacking it. Nothing read here is ever executed.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ppaux.errors import PathError
from ppaux.files import read_at_most
from ppaux.limits import Limits
from ppaux.suggestions import RaiseLimit, limit_note

__all__ = [
    "SglangPathError",
    "SglangTree",
    "UnreadableFile",
    "locate",
    "read_member_capped",
]

# ``__version__ = version = '0.5.23'`` in ``_version.py`` (0.5.15+), read as text.
_VERSION_RE = re.compile(
    r"""^__version__\s*(?::\s*str\s*)?=\s*(?:version\s*=\s*)?(['"])(?P<v>[^'"\s]+)\1""",
    re.MULTILINE,
)
_METADATA_VERSION_RE = re.compile(r"^Version:\s*(?P<v>\S+)\s*$", re.MULTILINE)


#: A wheel member's LZMA dictionary past this is refused: the decompressor allocates it whole.
_MAX_LZMA_DICTIONARY = 64 << 20


def read_member_capped(wheel: zipfile.ZipFile, info: zipfile.ZipInfo, cap: int) -> bytes:
    """The content of one member, reading at most ``cap + 1`` bytes of output whatever the
    member's compression method and whatever its header declares; more than ``cap`` bytes
    means the member is too large. zipfile inflates a bzip2 or LZMA member one whole input
    chunk at a time (a few KiB can become gigabytes), so those are decompressed here with an
    output bound. Raises :class:`ValueError` (with the reason) on a member that cannot be read.
    """
    import bz2
    import lzma
    import struct
    import zlib

    if info.compress_type in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        try:
            with wheel.open(info) as member:
                return member.read(cap + 1)
        except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, zlib.error) as exc:
            raise ValueError(str(exc)) from None
    if info.compress_type not in (zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA):
        raise ValueError(f"compression method {info.compress_type} is not read")
    if info.flag_bits & 0x1:
        raise ValueError("the member is encrypted")
    if wheel.fp is None:
        raise ValueError("the wheel is closed")
    handle = wheel.fp
    try:
        handle.seek(info.header_offset)
        header = handle.read(30)
        if len(header) != 30 or header[:4] != b"PK\x03\x04":
            raise ValueError("bad local header")
        name_length, extra_length = struct.unpack("<2H", header[26:30])
        handle.seek(info.header_offset + 30 + name_length + extra_length)
        left = info.compress_size
        decompressor: Any
        if info.compress_type == zipfile.ZIP_BZIP2:
            decompressor = bz2.BZ2Decompressor()
        else:
            head = handle.read(4)
            left -= 4
            if len(head) != 4:
                raise ValueError("truncated LZMA header")
            props = handle.read(struct.unpack("<H", head[2:4])[0])
            left -= len(props)
            if len(props) != 5 or struct.unpack("<I", props[1:5])[0] > _MAX_LZMA_DICTIONARY:
                raise ValueError("an LZMA dictionary past 64 MiB")
            decompressor = lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=[_lzma1(props)])
        out: list[bytes] = []
        produced = 0
        pending = b""
        while produced <= cap and not decompressor.eof:
            if not pending and decompressor.needs_input:
                if left <= 0:
                    break
                pending = handle.read(min(1 << 16, left))
                left -= len(pending)
                if not pending:
                    break
            chunk = decompressor.decompress(pending, cap + 1 - produced)
            pending = b""
            out.append(chunk)
            produced += len(chunk)
    except (OSError, EOFError, lzma.LZMAError, struct.error) as exc:
        raise ValueError(str(exc)) from None
    return b"".join(out)


def _lzma1(props: bytes) -> dict[str, int]:
    """The LZMA1 filter that a zip member's 5 property bytes describe (APPNOTE 5.8.8): one byte
    ``(pb * 5 + lp) * 9 + lc``, then the dictionary size, little-endian."""
    import lzma
    import struct

    if props[0] >= 9 * 5 * 5:
        raise ValueError("bad LZMA properties")
    rest, lc = divmod(props[0], 9)
    pb, lp = divmod(rest, 5)
    (dict_size,) = struct.unpack("<I", props[1:5])
    return {"id": lzma.FILTER_LZMA1, "dict_size": dict_size, "lc": lc, "lp": lp, "pb": pb}


class SglangPathError(PathError, ValueError):
    """A path given as an sglang tree that is not one: ``str()`` is '<path>: <reason>'."""


class UnreadableFile(PathError, OSError):
    """A file of the tree that exists but cannot be read: ``str()`` is '<path>: <reason>'."""


@dataclass(frozen=True)
class SglangTree:
    """One sglang package: where it is and how to read its files.

    ``origin`` is ``installed`` (found on ``sys.path``), ``directory`` or ``wheel``; ``location``
    is the ``sglang`` package directory, or the wheel file.
    """

    origin: str
    location: str
    #: The largest file read (``Limits.max_source_bytes``).
    max_source_bytes: int = Limits().max_source_bytes
    # The wheel kept open inside :meth:`reading`; a wheel's index is slow to read again.
    _open_zip: list[zipfile.ZipFile] = field(default_factory=list, compare=False, repr=False)

    @contextmanager
    def reading(self) -> Iterator[SglangTree]:
        """Keep a wheel open while several files are read from it (a no-op for directories)."""
        if self.origin != "wheel" or self._open_zip:
            yield self
            return
        try:
            wheel = self._open()
        except UnreadableFile:
            # Each read then reports the problem for its own file.
            yield self
            return
        self._open_zip.append(wheel)
        try:
            yield self
        finally:
            self._open_zip.clear()
            wheel.close()

    def describe(self, relative: str) -> str:
        """The path of ``relative`` (``srt/...``) as messages show it."""
        if self.origin == "wheel":
            return f"{self.location}!sglang/{relative}"
        return os.path.join(self.location, *relative.split("/"))

    def read(self, relative: str) -> bytes | None:
        """Bytes of ``relative`` (``srt/...``), None when absent; :class:`UnreadableFile` if not."""
        if self.origin == "wheel":
            return self._read_member(f"sglang/{relative}")
        path = Path(self.describe(relative))
        try:
            if not path.is_file():
                return None
            with path.open("rb") as handle:
                data = read_at_most(handle, self.max_source_bytes)
        except OSError as exc:
            raise UnreadableFile(str(path), exc.strerror or str(exc)) from None
        if len(data) > self.max_source_bytes:
            raise self._too_large(str(path))
        return data

    def has(self, relative: str) -> bool:
        """Whether a file ``relative`` (``srt/...``) is in the tree; nothing is read."""
        if self.origin == "wheel":
            try:
                with self._wheel() as wheel:
                    wheel.getinfo(f"sglang/{relative}")
            except (KeyError, UnreadableFile):
                return False
            return True
        try:
            return Path(self.describe(relative)).is_file()
        except OSError:
            return False

    def _too_large(self, where: str) -> UnreadableFile:
        """The error for a file at ``where`` past ``max_source_bytes``, naming the limit."""
        limit = self.max_source_bytes
        reason = f"larger than {limit} bytes {limit_note('max_source_bytes', limit)}"
        return UnreadableFile(where, reason).suggest(RaiseLimit("max_source_bytes", limit))

    def version(self) -> str | None:
        """The release, from ``_version.py`` read as text, else the dist-info beside the package."""
        try:
            data = self.read("_version.py")
        except UnreadableFile:
            data = None
        if data is not None:
            match = _VERSION_RE.search(data.decode("utf-8", "replace"))
            if match:
                return match.group("v")
        if self.origin == "wheel":
            return self._wheel_metadata_version()
        if self.origin == "installed":
            try:
                return importlib.metadata.version("sglang")
            except importlib.metadata.PackageNotFoundError:
                return None
        for metadata in sorted(Path(self.location).parent.glob("sglang-*.dist-info/METADATA")):
            try:
                match = _METADATA_VERSION_RE.search(metadata.read_text("utf-8", "replace"))
            except OSError:
                continue
            if match:
                return match.group("v")
        return None

    def _open(self) -> zipfile.ZipFile:
        try:
            return zipfile.ZipFile(self.location)
        except (zipfile.BadZipFile, OSError) as exc:
            raise UnreadableFile(self.location, f"cannot open the wheel: {exc}") from None

    @contextmanager
    def _wheel(self) -> Iterator[zipfile.ZipFile]:
        if self._open_zip:
            yield self._open_zip[0]
            return
        with self._open() as wheel:
            yield wheel

    def _read_member(self, name: str) -> bytes | None:
        with self._wheel() as wheel:
            try:
                info = wheel.getinfo(name)
            except KeyError:
                return None
            if info.file_size > self.max_source_bytes:
                raise self._too_large(f"{self.location}!{name}")
            try:
                # The header's size may lie, whatever the method: never read past the cap.
                data = read_member_capped(wheel, info, self.max_source_bytes)
            except ValueError as exc:
                raise UnreadableFile(f"{self.location}!{name}", str(exc)) from None
        if len(data) > self.max_source_bytes:
            raise self._too_large(f"{self.location}!{name}")
        return data

    def _wheel_metadata_version(self) -> str | None:
        try:
            with self._wheel() as wheel:
                names = [
                    n
                    for n in wheel.namelist()
                    if re.fullmatch(r"sglang-[^/]*\.dist-info/METADATA", n)
                ]
        except UnreadableFile:
            return None
        for name in sorted(names):
            try:
                data = self._read_member(name) or b""
            except UnreadableFile:
                continue
            match = _METADATA_VERSION_RE.search(data.decode("utf-8", "replace"))
            if match:
                return match.group("v")
        return None


def _package_dir(path: Path) -> Path | None:
    """The ``sglang`` package directory that ``path`` is or holds (site-packages, a checkout)."""
    if path.name == "sglang" and (path / "srt").is_dir():
        return path
    for candidate in (path / "sglang", path / "python" / "sglang"):
        if candidate.is_dir():
            return candidate
    return None


def locate(path: str | None = None, limits: Limits = Limits()) -> SglangTree | None:
    """The sglang package at ``path`` (a directory or a ``.whl``), or the installed one, whose
    files are read up to ``limits.max_source_bytes`` each.

    With no ``path``, returns None when sglang is not installed. With a ``path`` that is not an
    sglang tree, raises :class:`SglangPathError` naming what is wrong.
    """
    if path is None:
        try:
            spec = importlib.util.find_spec("sglang")
        except (ImportError, ValueError):
            # ValueError: something put a 'sglang' without __spec__ in sys.modules.
            return None
        if spec is None or not spec.submodule_search_locations:
            return None
        location = str(next(iter(spec.submodule_search_locations)))
        return SglangTree("installed", location, limits.max_source_bytes)
    given = Path(path)
    if given.is_dir():
        package = _package_dir(given)
        if package is None:
            raise SglangPathError(path, "no sglang package here (expected sglang/srt/ inside)")
        return SglangTree("directory", str(package), limits.max_source_bytes)
    if given.is_file():
        try:
            with zipfile.ZipFile(given) as wheel:
                names = wheel.namelist()
        except (zipfile.BadZipFile, OSError) as exc:
            raise SglangPathError(path, f"not a directory or a wheel (zip) file: {exc}") from None
        if not any(name.startswith("sglang/") for name in names):
            raise SglangPathError(path, "the wheel holds no sglang/ package")
        return SglangTree("wheel", str(given), limits.max_source_bytes)
    if given.exists():
        raise SglangPathError(path, "not a directory or a wheel file")
    raise SglangPathError(path, "no such file or directory")
