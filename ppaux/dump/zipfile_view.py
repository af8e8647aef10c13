"""The bytes Python's :mod:`zipfile` is shown of a zip, so that it lists the records torch's
reader lists.

The zip64 locator's field "disk holding the zip64 end record" is never read by miniz 3.0.2
(torch's zip reader), while zipfile refuses an archive where it is not 0 ("zipfiles that span
multiple disks are not supported"). torch.load reads such a file; ppaux shows zipfile the field
as 0, and the writer's model reports the edited field (PP118). A zip64 end record's directory
size larger than the directory, within the file, is read alike too (see
:func:`directory_size_read_alike`): zipfile is shown the directory's size.
"""

from __future__ import annotations

import struct
from typing import BinaryIO, cast

__all__ = ["directory_size_read_alike", "zipfile_view"]

_END_SIZE = 22
_LOCATOR_SIZE = 20
_END64_SIZE = 56
#: miniz refuses a larger directory ("unsupported central directory size").
_MAX32 = 0xFFFFFFFF


class _PatchedFields:
    """``handle``, read-only, with the bytes at some offsets read as others."""

    def __init__(self, handle: BinaryIO, patches: list[tuple[int, bytes]]) -> None:
        self._handle = handle
        self._patches = patches

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._handle.tell()

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._handle.seek(offset, whence)

    def read(self, size: int = -1) -> bytes:
        start = self._handle.tell()
        data = self._handle.read(size)
        for at, value in self._patches:
            low, high = max(start, at), min(start + len(data), at + len(value))
            if low < high:
                piece = value[low - at : high - at]
                data = data[: low - start] + piece + data[high - start :]
        return data


def directory_size_read_alike(cd_offset: int, cd_size: int, cd_end: int, size: int) -> bool:
    """Whether a zip64 end record's directory size ``cd_size``, other than the ``cd_end -
    cd_offset`` bytes between the directory's start and that record, leaves torch's reading
    as it is: miniz (torch 2.13's, ``mz_zip_reader_read_central_dir``) reads ``cd_size`` bytes
    at ``cd_offset`` if they end within the file and walks the end record's count of entries
    in them, so a larger size reads the same entries; zipfile would look for the directory
    ``cd_size`` bytes before the record, so it is shown the bytes there are."""
    return cd_offset >= 0 and cd_end - cd_offset < cd_size <= min(size - cd_offset, _MAX32)


def zipfile_view(handle: BinaryIO, size: int) -> BinaryIO:
    """``handle`` as zipfile should read it to list the records torch's reader lists: itself,
    or with a zip64 locator's disk field read as 0 and a zip64 directory size that torch reads
    alike (:func:`directory_size_read_alike`) read as the directory's bytes (the locator right
    before the last end record, as miniz finds it)."""
    start = max(0, size - (_END_SIZE + (1 << 16)))
    handle.seek(start)
    tail = handle.read(size - start)
    at = tail.rfind(b"PK\x05\x06", 0, max(0, len(tail) - _END_SIZE + 4))
    locator = at - _LOCATOR_SIZE
    if locator < 0 or tail[locator : locator + 4] != b"PK\x06\x07":
        return handle
    patches = []
    (disk,) = struct.unpack_from("<L", tail, locator + 4)
    if disk != 0:
        patches.append((start + locator + 4, bytes(4)))
    record_at = start + locator - _END64_SIZE
    if record_at >= 0:
        handle.seek(record_at)
        record = handle.read(_END64_SIZE)
        if record[:4] == b"PK\x06\x06":
            cd_size, cd_offset = struct.unpack_from("<2Q", record, 40)
            if directory_size_read_alike(cd_offset, cd_size, record_at, size):
                patches.append((record_at + 40, struct.pack("<Q", record_at - cd_offset)))
    if not patches:
        return handle
    # zipfile uses seek, tell, read and seekable only.
    return cast(BinaryIO, _PatchedFields(handle, patches))
