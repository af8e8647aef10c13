"""What torch.load would do with an archive, where its reading and ppaux's part: the file
torch's default loader (``weights_only=True``) refuses, the metadata records its reader refuses
before unpickling, the device locations it can restore, a tensor view it cannot set on its
storage, and a deflated storage record it would read as whatever memory it allocated."""

from __future__ import annotations

import re
import zipfile
from typing import Any

from ppaux.dump import weights_only
from ppaux.dump.model import DTYPE_ITEMSIZE, StorageRef, TensorRef
from ppaux.dump.records import RecordReader, torch_byteorder, torch_version
from ppaux.errors import DumpError, ReadMismatch
from ppaux.limits import Limits
from ppaux.suggestions import RaiseLimit, limit_note
from ppaux.text import cut

__all__ = [
    "check_deflated_storages",
    "dropped_bad_view",
    "restorable",
    "torch_refusal",
    "view_reach",
    "weights_only_refusal",
]


def weights_only_refusal(data: bytes) -> str | None:
    found = weights_only.refusal(data)
    if found is None:
        return None
    offset, reason = found
    return f"data.pkl byte {offset}: {reason}"


def view_reach(tensor: TensorRef) -> str | None:
    """Why torch cannot set ``tensor``'s view on its storage (past its end), or None."""
    storage, shape, stride = tensor.storage, tensor.shape, tensor.stride
    if storage is None or stride is None or len(stride) != len(shape) or 0 in shape:
        return None
    end = tensor.offset + 1 + sum((n - 1) * step for n, step in zip(shape, stride, strict=True))
    if tensor.dtype != storage.dtype:  # a typed view over an untyped storage: count bytes
        reach = end * DTYPE_ITEMSIZE.get(tensor.dtype, 1)
        if reach > storage.nbytes:
            return (
                f"has shape {tuple(shape)} at offset {tensor.offset}, reaching byte {reach} of "
                f"a storage of {storage.nbytes}"
            )
        return None
    if end > storage.numel:
        return (
            f"has shape {tuple(shape)} at offset {tensor.offset}, reaching element {end} of a "
            f"storage of {storage.numel}"
        )
    return None


def dropped_bad_view(root: object, built: list[Any], limits: Limits) -> str | None:
    """The problem of a tensor that torch fails to build but that the loaded value no longer
    holds (a reachable one is reported as PP116 with its key)."""
    bad = {id(t): why for t in built if (why := view_reach(t)) is not None}
    if not bad:
        return None
    seen: set[int] = set()
    stack = [root]
    budget = limits.max_items
    while stack and budget > 0:
        value = stack.pop()
        budget -= 1
        if id(value) in seen:
            continue
        seen.add(id(value))
        if id(value) in bad:
            del bad[id(value)]
        elif isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, (list, tuple, set, frozenset)):
            stack.extend(value)
    if stack:  # too large to walk: whatever is left is not known to be dropped
        return None
    return next(iter(bad.values()), None)


_DEVICE_LOCATION = re.compile(r"(cuda|hpu|xpu|mtia|privateuseone)(:[0-9]+)?")


def restorable(location: str) -> bool:
    """Whether torch 2.13's default_restore_location has a deserializer for ``location`` that
    accepts it (cpu and meta exactly, mps as a prefix, the other backends as NAME or NAME:N;
    whether this machine has the device is another matter, not the file's)."""
    return (
        location in ("cpu", "meta")
        or location.startswith("mps")
        or _DEVICE_LOCATION.fullmatch(location) is not None
    )


#: The records torch.load reads besides data.pkl and the storages.
_METADATA_RECORDS = (
    ".data/version",
    "version",
    "byteorder",
    ".format_version",
    ".storage_alignment",
    ".data/serialization_id",
)


def torch_refusal(reader: RecordReader) -> str | None:
    """Why torch 2.13 refuses the archive before unpickling it, or None: its reader wants a
    version record (``.data/version``, else ``version``) that ``stoull`` parses to 1-10;
    torch.load wants a byteorder record, if any, of exactly ``little`` or ``big``, and a
    ``.storage_alignment`` record, if any, that ``int()`` reads."""

    for name in _METADATA_RECORDS:  # torch's reader extracts each whole, to its exact size
        record = reader.find(name)
        if record is None:
            continue
        try:
            reader.check_exact(record)
        except ReadMismatch:
            # torch reads .format_version only to learn whether it may work out storage
            # offsets; the values it loads are the same whatever the record holds (the zip's
            # grammar names the record).
            if name != ".format_version":
                raise

    def head(name: str, cap: int) -> bytes | None:
        record = reader.find(name)
        if record is None:
            return None
        return b"".join(reader.blocks(record, 0, min(record.file_size, cap)))

    version = head(".data/version", 4096)
    if version is None:
        version = head("version", 4096)
    if version is None:
        return "it has no version record"
    _, why = torch_version(version)
    if why is not None:
        return why
    _, why = torch_byteorder(head("byteorder", 64))
    if why is not None:
        return why
    alignment = head(".storage_alignment", 64)
    if alignment is not None:
        try:
            int(alignment)
        except ValueError:
            return (
                f"its storage alignment record {cut(alignment.decode('latin-1'))} is not a number"
            )
    return None


def check_deflated_storages(
    reader: RecordReader, storages: list[StorageRef], limits: Limits
) -> None:
    """Inflate every deflated storage record once, discarding the bytes: torch.load does not
    report a record that fails to inflate (it hands back whatever memory it allocated), so a
    record ppaux cannot inflate to its declared size is one torch reads otherwise. Records
    declaring more than ``limits.max_deflated_bytes`` in all are not checked: the file is
    refused as one torch may read otherwise, naming the limit."""
    budget = limits.max_deflated_bytes
    for storage in storages:
        record = reader.find_full(storage.record) if storage.record else None
        if record is None or record.compress_type != zipfile.ZIP_DEFLATED:
            continue
        name = cut(record.filename)
        if record.file_size > budget:
            limit = limits.max_deflated_bytes
            raise ReadMismatch(
                reader.path,
                f"deflated storage records inflate past {limit} bytes ({name} declares "
                f"{record.file_size}): not checked, and torch.load does not check them either "
                f"{limit_note('max_deflated_bytes', limit)}",
            ).suggest(RaiseLimit("max_deflated_bytes", limit))
        budget -= record.file_size
        try:
            for _ in reader.blocks(record, 0, record.file_size):
                pass
        except DumpError as exc:
            raise ReadMismatch(
                reader.path,
                f"storage record {name} does not inflate to its declared "
                f"{record.file_size} bytes ({exc.reason}): torch.load reads whatever memory it "
                "allocated for it",
            ) from None
