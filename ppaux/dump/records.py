"""The records of a ``torch.save`` zip, found and read as torch's reader finds and reads them.

One place for what every reader of a dump's bytes needs (``inspect`` reading ``data.pkl``,
``diff`` digesting storages, ``replay`` and ``tensorize`` rebuilding tensors):

- :data:`ZIP_READ_ERRORS`, everything Python's :mod:`zipfile` and :mod:`zlib` raise on a hostile
  or corrupt archive; every reader catches exactly these and turns them into one
  :class:`~ppaux.errors.DumpError` line, never an internal error;
- :func:`torch_listed_names`, the record names as ``PyTorchStreamReader::getAllRecords`` (torch
  2.13, ``caffe2/serialize/inline_container.cc``) hands them to ``torch.load``: each name copied
  into miniz's 512-byte name buffer (``MZ_ZIP_MAX_ARCHIVE_FILENAME_SIZE``), so it ends at its
  first NUL byte or after 511 bytes, then stripped of the archive's folder;
- :class:`RecordReader`, which finds a record as torch's reader does (under the first record's
  folder, ASCII letters compared without case, as miniz's ``mz_zip_reader_locate_file``) and
  streams its bytes a block at a time: stored records are read in place, deflated ones are
  inflated as they are read, and the inflated size is checked against the compressed bytes
  really consumed (deflate never expands more than 1032 to 1), so a header cannot buy a
  larger allowance by declaring a larger size;
- :func:`torch_version` and :func:`torch_byteorder`, the ``version`` and ``byteorder`` records
  read as torch 2.13 reads them (``caffe2::stoull`` on the version, exactly ``little`` or
  ``big`` for the byte order), with torch's reason when torch would refuse the file.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from collections.abc import Iterator
from typing import BinaryIO

from ppaux.dump.zipfile_view import zipfile_view
from ppaux.errors import DumpError, ReadMismatch
from ppaux.text import cut

__all__ = [
    "DEFLATE_EXPANSION",
    "NAME_BUFFER",
    "TORCH_NEWEST_FORMAT",
    "TORCH_OLDEST_FORMAT",
    "ZIP_READ_ERRORS",
    "RecordReader",
    "raw_name",
    "torch_byteorder",
    "torch_listed_names",
    "torch_version",
]

#: What reading a zip can raise on a hostile or corrupt archive, besides ppaux's own errors:
#: zipfile's BadZipFile, I/O errors, bad UTF-8 names (ValueError), "zip file version"
#: (NotImplementedError), offsets past 2**63 (OverflowError), short headers (struct.error,
#: EOFError), bad deflate data (zlib.error), encrypted records (RuntimeError).
ZIP_READ_ERRORS: tuple[type[BaseException], ...] = (
    zipfile.BadZipFile,
    OSError,
    ValueError,
    EOFError,
    NotImplementedError,
    OverflowError,
    struct.error,
    zlib.error,
    RuntimeError,
)

#: miniz's MZ_ZIP_MAX_ARCHIVE_FILENAME_SIZE: the buffer torch's reader copies a name into,
#: its terminating NUL included.
NAME_BUFFER = 512

#: Deflate never expands data more than about 1032 to 1 (258 bytes from each 2-bit code).
DEFLATE_EXPANSION = 1032

#: The archive versions torch 2.13's reader accepts (kMinSupportedFileFormatVersion,
#: kMaxSupportedFileFormatVersion in caffe2/serialize/versions.h).
TORCH_OLDEST_FORMAT, TORCH_NEWEST_FORMAT = 1, 10

_LOCAL = struct.Struct("<4s5H3L2H")
_BLOCK = 1 << 20
_READ = 1 << 16


def raw_name(record: zipfile.ZipInfo) -> bytes:
    """The record's name as the bytes the directory holds (zipfile decodes them as UTF-8 when
    the record's flag says so, else as cp437; both encode back to the same bytes)."""
    encoding = "utf-8" if record.flag_bits & 0x800 else "cp437"
    try:
        return record.orig_filename.encode(encoding, "surrogateescape")
    except UnicodeEncodeError:  # not from zipfile's own decoding
        return record.orig_filename.encode("utf-8", "surrogatepass")


def torch_listed_names(records: list[zipfile.ZipInfo], prefix: bytes) -> list[bytes] | None:
    """The names ``torch.load`` sees from ``get_all_records()``: each record's name cut at its
    first NUL byte and after ``NAME_BUFFER - 1`` bytes, then stripped of ``prefix`` (the first
    record's folder and its slash). None where torch's reader refuses the archive there (a
    name, as cut, outside that folder)."""
    listed = []
    for record in records:
        name = raw_name(record).split(b"\x00", 1)[0][: NAME_BUFFER - 1]
        if not name.startswith(prefix):
            return None
        listed.append(name[len(prefix) :])
    return listed


def _lower(name: bytes) -> bytes:
    # miniz's MZ_TOLOWER: ASCII letters only.
    return name.translate(_ASCII_LOWER)


_ASCII_LOWER = bytes(c + 32 if 65 <= c <= 90 else c for c in range(256))


def _stoull(text: bytes) -> int | None:
    """``caffe2::stoull`` (``std::stoull``, base 10): leading white space, an optional sign,
    then the longest run of digits; None where there is no digit. A minus sign wraps, as
    strtoull does."""
    view = text.lstrip(b" \t\n\v\f\r")
    negative = view[:1] == b"-"
    if view[:1] in (b"+", b"-"):
        view = view[1:]
    digits = len(view) - len(view.lstrip(b"0123456789"))
    if not digits:
        return None
    value = int(view[:digits])
    return (-value) % (1 << 64) if negative else value


def torch_version(text: bytes) -> tuple[int | None, str | None]:
    """The archive version torch reads from a version record holding ``text``, and torch's
    reason for refusing it (None when torch accepts it)."""
    value = _stoull(text)
    if value is None:
        return None, f"torch cannot parse its version record {cut(text.decode('latin-1'))}"
    if value >= 1 << 64:
        return None, "its version record is out of range (torch's stoull fails)"
    signed = value - (1 << 64) if value >= 1 << 63 else value
    if signed < TORCH_OLDEST_FORMAT:
        return signed, (
            f"its version is {signed}, below the oldest torch reads ({TORCH_OLDEST_FORMAT})"
        )
    if value > TORCH_NEWEST_FORMAT:
        return value, (
            f"its version is {value}, past the newest torch 2.13 reads ({TORCH_NEWEST_FORMAT})"
        )
    return value, None


def torch_byteorder(text: bytes | None) -> tuple[str, str | None]:
    """The byte order torch reads storages in, given the byteorder record's bytes (None when
    the archive has none), and torch's reason for refusing it (None when torch accepts it)."""
    if text is None:
        return "little", None  # torch's default for an archive without the record
    if text in (b"little", b"big"):
        return text.decode(), None
    return "little", f"unknown byte order {cut(text.decode('latin-1'))} in its byteorder record"


class RecordReader:
    """The records of one ``torch.save`` zip, found and streamed as torch's reader does.

    ``records`` is the zip's directory (zipfile's reading, which the dump reader has already
    checked agrees with torch's); ``prefix`` the folder torch reads them from. Use as a context
    manager, or call :meth:`close`.
    """

    def __init__(
        self,
        path: str,
        handle: BinaryIO,
        records: list[zipfile.ZipInfo],
        prefix: str,
        size: int,
        *,
        owner: zipfile.ZipFile | None = None,
    ) -> None:
        self.path = path
        self.prefix = prefix
        self._handle = handle
        self._size = size
        self._owner = owner
        self._by_name: dict[bytes, zipfile.ZipInfo] = {}
        for record in records:
            self._by_name.setdefault(_lower(raw_name(record)), record)

    @classmethod
    def open(cls, path: str, prefix: str | None) -> RecordReader:
        """Open the zip at ``path`` read-only; :class:`DumpError` when it cannot be read."""
        from ppaux.files import InputFileError, open_regular

        try:
            handle, info = open_regular(path, "dump")
        except InputFileError as exc:
            raise DumpError(path, exc.reason) from None
        try:
            archive = zipfile.ZipFile(zipfile_view(handle, info.st_size))
            records = archive.infolist()
        except ZIP_READ_ERRORS as exc:
            handle.close()
            raise DumpError(path, f"truncated or corrupt zip file ({cut(str(exc))})") from None
        return cls(path, handle, records, prefix or "archive", info.st_size, owner=archive)

    def __enter__(self) -> RecordReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the file."""
        if self._owner is not None:
            self._owner.close()
        self._handle.close()

    def find(self, name: str) -> zipfile.ZipInfo | None:
        """The record torch reads as ``name`` (relative to the folder), or None."""
        wanted = f"{self.prefix}/{name}".encode("utf-8", "surrogatepass")
        return self._by_name.get(_lower(wanted))

    def find_full(self, full_name: str) -> zipfile.ZipInfo | None:
        """The record torch reads as ``full_name`` (folder included), or None."""
        return self._by_name.get(_lower(full_name.encode("utf-8", "surrogatepass")))

    def _data_start(self, record: zipfile.ZipInfo) -> int:
        name = cut(record.filename)
        try:
            self._handle.seek(record.header_offset)
            header = self._handle.read(_LOCAL.size)
        except ZIP_READ_ERRORS as exc:
            raise DumpError(self.path, f"cannot read {name} ({cut(str(exc))})") from None
        if len(header) != _LOCAL.size or header[:4] != b"PK\x03\x04":
            raise DumpError(self.path, f"cannot read {name} (bad local header)")
        fields: tuple[int, ...] = _LOCAL.unpack(header)
        start: int = record.header_offset + _LOCAL.size + fields[9] + fields[10]
        if start + record.compress_size > self._size:
            raise DumpError(
                self.path,
                f"record {name} declares {record.compress_size} stored bytes, past the end of "
                "the file",
            )
        return start

    def blocks(
        self, record: zipfile.ZipInfo, start: int, end: int, block: int = _BLOCK
    ) -> Iterator[bytes]:
        """Bytes ``start:end`` of ``record``'s content, a block at a time (at most ``block``
        bytes each); only what is needed is read or inflated. :class:`DumpError` (one line
        naming the record) when it is shorter, compressed in another way than torch reads, or
        does not inflate."""
        name = cut(record.filename)
        if end > record.file_size:
            raise DumpError(self.path, f"record {name} is {record.file_size} bytes, {end} needed")
        if end <= start:
            return
        if record.flag_bits & 0x1:
            raise DumpError(self.path, f"cannot read {name} (it is encrypted)")
        if record.compress_type == zipfile.ZIP_STORED:
            yield from self._stored(record, start, end, block)
        elif record.compress_type == zipfile.ZIP_DEFLATED:
            yield from self._inflated(record, start, end, block)
        else:
            raise DumpError(
                self.path,
                f"record {name} is compressed with method {record.compress_type}, which "
                "torch.load cannot read (only stored or deflate)",
            )

    def _stored(self, record: zipfile.ZipInfo, start: int, end: int, block: int) -> Iterator[bytes]:
        name = cut(record.filename)
        if end > record.compress_size:
            raise DumpError(
                self.path, f"record {name} holds {record.compress_size} bytes, {end} needed"
            )
        position = self._data_start(record) + start
        left = end - start
        while left:
            try:
                self._handle.seek(position)
                chunk = self._handle.read(min(block, left))
            except ZIP_READ_ERRORS as exc:
                raise DumpError(self.path, f"cannot read {name} ({cut(str(exc))})") from None
            if not chunk:
                raise DumpError(self.path, f"record {name} ends early")
            position += len(chunk)
            left -= len(chunk)
            yield chunk

    def _inflated(
        self, record: zipfile.ZipInfo, start: int, end: int, block: int
    ) -> Iterator[bytes]:
        name = cut(record.filename)
        position = self._data_start(record)
        left_in = record.compress_size
        inflater = zlib.decompressobj(-15)
        pending = b""
        produced = consumed = 0
        while produced < end:
            if not pending:
                if not left_in or inflater.eof:
                    raise DumpError(
                        self.path, f"record {name} inflates to {produced} bytes, {end} needed"
                    )
                try:
                    self._handle.seek(position)
                    pending = self._handle.read(min(_READ, left_in))
                except ZIP_READ_ERRORS as exc:
                    raise DumpError(self.path, f"cannot read {name} ({cut(str(exc))})") from None
                if not pending:
                    raise DumpError(self.path, f"record {name} ends early")
                position += len(pending)
                left_in -= len(pending)
            given = len(pending)
            try:
                out = inflater.decompress(pending, min(block, end - produced))
            except zlib.error as exc:
                raise DumpError(self.path, f"cannot read {name} ({cut(str(exc))})") from None
            tail = inflater.unconsumed_tail
            consumed += given - len(tail)
            if not out and len(tail) == given and not inflater.eof:
                raise DumpError(self.path, f"cannot read {name} (the deflate stream stalls)")
            pending = b"" if inflater.eof else tail
            low, high = produced, produced + len(out)
            produced = high
            if produced > DEFLATE_EXPANSION * consumed + _BLOCK:
                raise DumpError(
                    self.path,
                    f"record {name} inflates to more than deflate can make of "
                    f"{consumed} bytes: corrupt",
                )
            if high > start:
                yield out[max(start - low, 0) :]

    def check_exact(self, record: zipfile.ZipInfo) -> None:
        """Refuse a deflated record whose stream does not end exactly at its declared size:
        torch's reader inflates into a buffer of that size and fails on a stream that ends
        short of it ("unexpected decompressed size"), where zipfile reads up to the declared
        size and stops; a stream that is corrupt or runs past the buffer it reads on with what
        the buffer holds (a read mismatch). The caller bounds the declared size."""
        if record.compress_type != zipfile.ZIP_DEFLATED:
            return
        name = cut(record.filename)
        start = self._data_start(record)
        inflater = zlib.decompressobj(-15)
        produced, left, position = 0, record.compress_size, start
        try:
            while left and not inflater.eof and produced <= record.file_size:
                self._handle.seek(position)
                chunk = self._handle.read(min(_READ, left))
                if not chunk:
                    break
                position += len(chunk)
                left -= len(chunk)
                while chunk and not inflater.eof and produced <= record.file_size:
                    produced += len(inflater.decompress(chunk, _BLOCK))
                    chunk = inflater.unconsumed_tail
        except zlib.error:
            produced = -1  # a corrupt stream: torch's inflater fails without a word, as below
        except ZIP_READ_ERRORS as exc:
            raise DumpError(self.path, f"cannot read {name} ({cut(str(exc))})") from None
        if inflater.eof and 0 <= produced < record.file_size:
            raise DumpError(
                self.path,
                f"record {name} does not inflate to exactly its declared {record.file_size} "
                "bytes (torch's reader fails on it: unexpected decompressed size)",
            )
        if not inflater.eof or produced != record.file_size:
            # miniz 3.0.2 (mz_zip_reader_extract_to_mem_no_alloc1) sets an error only for a
            # stream that ends; one that fails or runs past the buffer sets none, and torch's
            # reader goes on with what the buffer holds.
            raise ReadMismatch(
                self.path,
                f"record {name} does not inflate to its declared {record.file_size} bytes: "
                "torch's reader sets no error and reads whatever its buffer holds",
            )

    def read_into(self, record: zipfile.ZipInfo, buffer: bytearray | memoryview) -> None:
        """Fill ``buffer`` with the first ``len(buffer)`` bytes of ``record``'s content."""
        view = memoryview(buffer)
        at = 0
        for chunk in self.blocks(record, 0, len(view)):
            view[at : at + len(chunk)] = chunk
            at += len(chunk)

    def allocation_ok(self, record: zipfile.ZipInfo, nbytes: int) -> str | None:
        """Why ``nbytes`` of ``record`` cannot be there (before allocating them), or None:
        its declared size is smaller, or its compressed bytes, which must lie in the file,
        could not inflate to that much."""
        name = cut(record.filename)
        if nbytes > record.file_size:
            return f"record {name} is {record.file_size} bytes, {nbytes} needed"
        available = self._size - record.header_offset
        if record.compress_size > available:
            return f"record {name} declares {record.compress_size} stored bytes, past the file"
        if record.compress_type == zipfile.ZIP_STORED and nbytes > record.compress_size:
            return f"record {name} holds {record.compress_size} bytes, {nbytes} needed"
        if nbytes > DEFLATE_EXPANSION * record.compress_size + _BLOCK:
            return (
                f"record {name} claims {nbytes} bytes from {record.compress_size} compressed, "
                "more than deflate can make"
            )
        return None
