"""The bytes Python's :mod:`zipfile` is shown of a zip, so that it lists the records torch's
reader lists.

The zip64 locator's field "disk holding the zip64 end record" is never read by miniz 3.0.2
(torch's zip reader), while zipfile refuses an archive where it is not 0 ("zipfiles that span
multiple disks are not supported"). torch.load reads such a file; ppaux shows zipfile the field
as 0, and the writer's model reports the edited field (PP118).
"""

from __future__ import annotations

import struct
from typing import BinaryIO, cast

__all__ = ["zipfile_view"]

_END_SIZE = 22
_LOCATOR_SIZE = 20


class _ZeroedField:
    """``handle``, read-only, with its four bytes at ``at`` read as 0."""

    def __init__(self, handle: BinaryIO, at: int) -> None:
        self._handle = handle
        self._at = at

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
        low, high = max(start, self._at), min(start + len(data), self._at + 4)
        if low >= high:
            return data
        return data[: low - start] + bytes(high - low) + data[high - start :]


def zipfile_view(handle: BinaryIO, size: int) -> BinaryIO:
    """``handle`` as zipfile should read it: itself, or with a zip64 locator's disk field read
    as 0 (the locator right before the last end record, as miniz finds it)."""
    start = max(0, size - (_END_SIZE + (1 << 16)))
    handle.seek(start)
    tail = handle.read(size - start)
    at = tail.rfind(b"PK\x05\x06", 0, max(0, len(tail) - _END_SIZE + 4))
    locator = at - _LOCATOR_SIZE
    if locator < 0 or tail[locator : locator + 4] != b"PK\x06\x07":
        return handle
    (disk,) = struct.unpack_from("<L", tail, locator + 4)
    if disk == 0:
        return handle
    # zipfile uses seek, tell, read and seekable only.
    return cast(BinaryIO, _ZeroedField(handle, start + locator + 4))
