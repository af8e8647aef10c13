"""The logs ``triage`` reads: files, directories of logs, standard input, gzip, opened as
streams and never read whole.

A directory is walked for log files (:data:`LOG_SUFFIXES`, sorted, links not followed). A
stream that begins with gzip's magic bytes is decompressed as it is read, whatever its name;
one that begins with UTF-16's byte-order mark is decoded as it is read.
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, BinaryIO, cast

from ppaux.errors import PathError, command_on
from ppaux.files import InputFileError, collect_files, open_regular
from ppaux.limits import Limits
from ppaux.patterns import lazy
from ppaux.suggestions import RaiseLimit, limit_note
from ppaux.text import byte_size
from ppaux.triage.crended import cr_ended, cr_lines
from ppaux.triage.rechunked import Rechunked
from ppaux.triage.streams import TRAILING, MultiStream

__all__ = [
    "LOG_SUFFIXES",
    "LogOpenError",
    "LogSource",
    "NoLogLines",
    "compression_cut",
    "compression_of",
    "corrupt_stream",
    "expand_paths",
    "is_log_name",
    "looks_binary",
    "open_log",
]

#: What a log file is called inside a directory given to ``triage``: plain logs (Kubernetes'
#: ``0.log``, Docker's ``<id>-json.log``, ``server.log``), captured output, rotated and gzip logs.
LOG_SUFFIXES = (".log", ".gz", ".txt", ".out", ".err", ".json", ".jsonl")

_GZIP_MAGIC = b"\x1f\x8b"
_BZIP2_MAGIC = b"BZh"
_XZ_MAGIC = b"\xfd7zXZ\x00"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
#: UTF-16's byte-order marks, little- and big-endian.
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
#: Bytes looked at to tell text from binary, and an encoding without a byte-order mark.
_SNIFF = 4096

#: How a zip archive (torch.save's format since torch 1.6) or a pickle of protocol 2 to 5 (its
#: legacy format, a ``.pkl``) begins: no log does.
_DUMP_MAGIC = (b"PK\x03\x04", b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")
#: Above this share of a head's characters that no text log holds (NUL and other control bytes
#: than tab, newline, carriage return, escape; bytes that are not UTF-8), a file is binary.
_BINARY_SHARE = 0.3
_ROTATED = lazy(r"\.log\.[0-9][0-9-]*(?:\.gz)?$")


class LogOpenError(PathError, OSError):
    """A log that cannot be opened: ``str()`` is '<path>: <reason>'."""


class NoLogLines(LogOpenError):
    """A file that opens but holds no log line (a JSON document of other data): refused alone,
    left out with a warning beside logs that can be read."""


@dataclass(frozen=True)
class LogSource:
    """One log to read: ``name`` is how reports call it (the path as given, or ``<stdin>``);
    ``limits`` bound what reading it may cost."""

    name: str
    stream: BinaryIO | None = None
    limits: Limits = field(default_factory=Limits)


def is_log_name(name: str) -> bool:
    """Whether a file found in a directory is taken as a log: one of :data:`LOG_SUFFIXES`, or a
    rotated log (``0.log.20261203-101500``, ``server.log.1``, kubelet's and logrotate's names)."""
    lowered = name.lower()
    return lowered.endswith(LOG_SUFFIXES) or _ROTATED.search(lowered) is not None


def expand_paths(
    paths: Iterable[str], max_files: int = Limits().max_log_files
) -> tuple[list[str], list[PathError]]:
    """Directories expanded into their log files (:func:`is_log_name`; sorted, recursively,
    links not followed, at most ``max_files``); other paths kept as given."""
    patterns = ", ".join("*" + suffix for suffix in LOG_SUFFIXES) + ", *.log.N"
    return collect_files(
        paths,
        LOG_SUFFIXES,
        max_files,
        "log files",
        matches=is_log_name,
        patterns=patterns,
        limit="max_log_files",
    )


class _Counted(io.RawIOBase):
    """The compressed bytes a decompressor reads, counted (to bound the ratio)."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self._raw.read(len(buffer))
        count = len(data)
        buffer[:count] = data
        self.count += count
        return count


class _Gunzip(io.RawIOBase):
    """A compressed stream (gzip, every member; bzip2; xz) read as far as it goes: a cut-off or
    corrupt tail ends the stream and is remembered (``cut``), instead of failing the whole log.
    What it inflates to is bounded: past ``limits.max_inflated_bytes``, at most
    ``limits.max_inflation_ratio`` times the compressed bytes read (:class:`LogOpenError`
    names the limit)."""

    def __init__(
        self, raw: BinaryIO, name: str = "", kind: str = "gzip", limits: Limits = Limits()
    ) -> None:
        self._counted = _Counted(raw)
        reader = cast(Any, self._counted)
        self._inner: Any
        if kind in ("bzip2", "xz"):
            self._inner = MultiStream(reader, kind)
        elif kind == "zstd":
            import zstandard  # type: ignore[import-not-found]

            self._inner = zstandard.ZstdDecompressor().stream_reader(
                reader, read_across_frames=True
            )
        else:
            self._inner = gzip.GzipFile(fileobj=reader, mode="rb")
        self._raw = raw
        self._name = name
        self.kind = kind
        self._inflated = 0
        self._free = limits.max_inflated_bytes
        self._ratio = limits.max_inflation_ratio
        self.cut: str | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        if self.cut is not None:
            return 0
        try:
            # One inflation step a call: what a step before a corrupt tail inflated has been
            # handed on already (a readinto that fills the whole buffer would lose it).
            step = getattr(self._inner, "readinto1", None) or self._inner.readinto
            count = int(step(buffer))
        except Exception as exc:  # EOFError, BadGzipFile, zlib/lzma/bz2 errors: corrupt
            self.cut = str(exc) or type(exc).__name__
            return 0
        self._inflated += count
        if self._inflated > self._free and self._inflated > self._ratio * max(
            1, self._counted.count
        ):
            raise LogOpenError(
                self._name,
                f"{self.kind} stream inflates more than {self._ratio} times its size past "
                f"{byte_size(self._free)} (a decompression bomb?); not read "
                + limit_note("max_inflation_ratio", self._ratio),
            ).suggest(RaiseLimit("max_inflation_ratio", self._ratio))
        return count

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self._raw.close()
            super().close()


class _Utf16(Rechunked):
    """A UTF-16 or UTF-32 log read as UTF-8, as it is decoded: Windows PowerShell's ``>``
    writes UTF-16 with a byte-order mark (``kubectl logs pod > sglang.log``), in which no marker
    would be found; some tools write it without one. Bytes that are not of the encoding are kept
    as ``\\xNN``."""

    def __init__(self, inner: io.BufferedReader, encoding: str = "utf-16") -> None:
        self._text = io.TextIOWrapper(
            inner, encoding=encoding, errors="backslashreplace", newline=""
        )
        super().__init__(self._text)

    def chunk(self) -> bytes | None:
        text = self._text.read(1 << 20)
        return text.encode("utf-8", "backslashreplace") if text else None


def open_log(source: LogSource) -> BinaryIO:
    """A binary stream of ``source``'s bytes, decompressed (gzip, bzip2, xz, zstd) and decoded
    (UTF-16, UTF-32) as its content says.

    Raises :class:`LogOpenError` for a path that is not a readable regular file, and for
    content that is no text log (binary data, zstd without its package).
    """
    if source.stream is not None:
        raw: BinaryIO = source.stream
    else:
        try:
            raw, _ = open_regular(source.name, "log")
        except InputFileError as exc:
            raise LogOpenError(exc.path, exc.reason) from None
    try:
        return _opened(source, raw)
    except LogOpenError:
        if source.stream is None:
            raw.close()
        raise


def _opened(source: LogSource, raw: BinaryIO) -> BinaryIO:
    buffered: Any = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(cast(Any, raw))
    try:
        kind = _compression(buffered.peek(8)[:8])
    except OSError as exc:
        raise LogOpenError(source.name, f"cannot read: {exc.strerror or exc}") from None
    stream = buffered
    if kind == "zstd" and not _has_zstd():
        raise LogOpenError(
            source.name,
            "zstd-compressed log, and the zstandard package is not installed (pip install "
            "'ppaux[zstd]'); decompress it first (zstd -d) or install it",
        )
    if kind is not None:
        stream = io.BufferedReader(
            _Gunzip(buffered, source.name, kind, source.limits), buffer_size=1 << 20
        )
    sniff = stream.peek(_SNIFF)[:_SNIFF]
    encoding = _encoding(sniff)
    if encoding is not None:
        stream = io.BufferedReader(_Utf16(stream, encoding), buffer_size=1 << 20)
        sniff = stream.peek(_SNIFF)[:_SNIFF]
    what = f"{kind}-compressed " if kind else ""
    if sniff.startswith(_DUMP_MAGIC):
        raise LogOpenError(
            source.name,
            f"{what}zip archive or pickle, not a text log: if it is a tensor dump (torch.save's "
            f"format), inspect reads it ({command_on('inspect', source.name)})",
        )
    if looks_binary(sniff):
        raise LogOpenError(source.name, f"{what}binary data, not a text log")
    if cr_ended(sniff):  # no newline in its first bytes: perhaps lines that end in '\r' alone
        return cr_lines(cast(BinaryIO, stream))
    return cast(BinaryIO, stream)


def _compression(head: bytes) -> str | None:
    """The compression a stream's first bytes name: gzip, bzip2, xz, zstd, or None."""
    if head.startswith(_GZIP_MAGIC):
        return "gzip"
    if head.startswith(_BZIP2_MAGIC) and head[3:4] in b"123456789" and len(head) >= 4:
        return "bzip2"
    if head.startswith(_XZ_MAGIC):
        return "xz"
    if head.startswith(_ZSTD_MAGIC):
        return "zstd"
    return None


def _has_zstd() -> bool:
    import importlib.util

    return importlib.util.find_spec("zstandard") is not None


def _encoding(head: bytes) -> str | None:
    """The UTF-16 or UTF-32 encoding of a stream's first bytes (by its byte-order mark, or
    without one by where its NUL bytes fall among ASCII text), or None for UTF-8 and the
    rest."""
    if head.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return "utf-32"
    if head[:2] in _UTF16_BOMS:
        return "utf-16"
    sample = head[: len(head) - len(head) % 4]
    if len(sample) < 8:
        return None
    zeros = [sample[i::4].count(0) / (len(sample) // 4) for i in range(4)]
    if zeros[0] < 0.05 and min(zeros[1:]) > 0.95:
        return "utf-32-le"
    if zeros[3] < 0.05 and min(zeros[:3]) > 0.95:
        return "utf-32-be"
    even = sample[0::2].count(0) / (len(sample) // 2)
    odd = sample[1::2].count(0) / (len(sample) // 2)
    if odd > 0.9 and even < 0.05:
        return "utf-16-le"
    if even > 0.9 and odd < 0.05:
        return "utf-16-be"
    return None


_TEXT_CONTROLS = frozenset(b"\t\n\r\x1b")


def looks_binary(head: bytes) -> bool:
    """True when ``head`` is no text: many characters that no log line holds (control bytes,
    bytes that are not UTF-8)."""
    # NUL bytes are holes, not content: what logrotate's copytruncate leaves before the lines
    # a writer appends at its old offset, or a block lost in a crash. A hole alone is no
    # verdict; the text around it decides.
    head = head.replace(b"\x00", b"")
    if not head:
        return False
    text = head.decode("utf-8", "replace")
    odd = sum(
        1
        for c in text
        if c == "\ufffd" or (ord(c) < 0x20 and ord(c) not in _TEXT_CONTROLS) or c == "\x7f"
    )
    return odd > _BINARY_SHARE * len(text)


def compression_of(stream: BinaryIO) -> str | None:
    """The compression (gzip, bzip2, xz, zstd) ``stream`` inflates, or None for plain bytes."""
    layer: Any = stream
    for _ in range(8):  # through the readers over it (a decoding, lines that end in '\r')
        if isinstance(layer, _Gunzip):
            return layer.kind
        layer = getattr(layer, "raw", None) or getattr(layer, "inner", None)
    return None


def compression_cut(stream: BinaryIO) -> tuple[str, str] | None:
    """The compression of a log that ended early (a cut-off or corrupt stream) and why, as
    ``(kind, reason)`` (kind: gzip, bzip2, xz or zstd), or None."""
    layer: Any = stream
    for _ in range(8):  # through the readers over it (a decoding, lines that end in '\r')
        if isinstance(layer, _Gunzip):
            return None if layer.cut is None else (layer.kind, layer.cut)
        layer = getattr(layer, "raw", None) or getattr(layer, "inner", None)
    return None


#: What a compression library says of a stream cut short (Python's EOFError for gzip, bzip2,
#: xz) and of bytes after a complete gzip member, bzip2 or xz stream: the text inflated before
#: is sound.
_SOUND_ENDS = ("ended before the end-of-stream marker", "Not a gzipped file", TRAILING)


def corrupt_stream(reason: str) -> bool:
    """True when a compressed log ended early because its data is corrupt (a failed CRC or
    integrity check, an invalid block), not because it was cut or had bytes after its end:
    what it inflated to may be garbled from a point that cannot be told, so none of its text
    can be trusted."""
    return not any(sound in reason for sound in _SOUND_ENDS)
