"""A ``torch.save`` zip nested in a pickle where the pickler nests a legacy stream.

``pickle.dumps(tensor)`` stores each storage as ``torch.storage._load_from_bytes(b'...')``,
whose bytes torch.save writes in its legacy format (:mod:`ppaux.dump.legacy`). The call hands
the bytes to ``torch.load(weights_only=False)``, which reads a zip archive as well: such bytes
are not as the writer writes them, but torch reads them, so ppaux reads them as the zip reader
of :mod:`ppaux.dump.zipdump` does, on the outer pickle's budgets, and keeps each storage's
bytes for replay.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ppaux.dump.pickle_vm import Machine
from ppaux.dump.records import RecordReader, torch_byteorder
from ppaux.dump.zipfile_view import zipfile_view
from ppaux.errors import DumpError, LimitExceeded, ReadMismatch, TorchRefuses
from ppaux.text import cut

if TYPE_CHECKING:
    from ppaux.dump.model import StorageRef
    from ppaux.dump.structure import Dump

__all__ = ["ZIP_LOCAL_MAGIC", "nested_too_deep", "read_inner_zip", "use_zip_reader"]

#: What torch.load looks for at the start of a file to read it as a zip (nothing else).
ZIP_LOCAL_MAGIC = b"PK\x03\x04"
_REFUSES = "torch.load refuses the file: a torch.save zip nested in the pickle"


#: The zip reader (:func:`ppaux.dump.zipdump.read_zip`, which hands itself over when it is
#: imported: it imports the allowlist that leads here, so this module cannot import it).
_ZIP_READER: list[Callable[..., Dump]] = []


def use_zip_reader(read_zip: Callable[..., Dump]) -> None:
    """Read nested zips with ``read_zip``."""
    _ZIP_READER[:] = [read_zip]


def nested_too_deep(outer: Machine, max_nesting: int) -> ReadMismatch:
    """A stream nested past ``max_nesting`` levels: CPython's unpickler, and so
    torch.load(weights_only=False), reads on (each level is one more torch.load), but
    ``pickle.dumps`` of a tensor nests one level and ppaux reads no deeper than
    ``max_nesting``: not a file ppaux can vouch for (PP202), never a refusal of the input."""
    return ReadMismatch(
        outer.path,
        f"a torch.save stream nested {outer.nesting + 1} levels deep "
        "(torch.storage._load_from_bytes within such a stream), where the pickler nests one "
        f"and ppaux reads {max_nesting}: torch.load(weights_only=False) reads every "
        "level, and what the deeper ones hold is not checked",
    )


def read_inner_zip(outer: Machine, payload: bytes) -> Any:
    """The value torch.load reads from the zip archive ``payload``, which ``outer``'s pickle
    hands to ``torch.storage._load_from_bytes``; its globals are merged into ``outer``."""
    if not _ZIP_READER:  # only a caller that bypasses ppaux.dump.dumpfile meets this
        raise outer.error("a torch.save zip nested in the pickle, and no zip reader loaded")
    read_zip = _ZIP_READER[0]  # the caller bounds the depth (legacy.read_inner_storage)
    at = outer.op_pos
    outer.deviate(
        "torch.storage._load_from_bytes holds a torch.save zip archive, where the pickler "
        "writes a legacy torch.save stream (torch.load reads either)",
        severe=False,
    )
    try:
        dump = read_zip(outer.path, io.BytesIO(payload), len(payload), outer.limits, outer=outer)
    except (ReadMismatch, LimitExceeded):
        raise  # torch's own refusal or reading, or a bound, said as such
    except DumpError as exc:
        raise DumpError(
            outer.path, f"malformed pickle at byte {at}: nested torch.save zip: {exc.reason}"
        ) from None
    outer.charge_bytes(dump.pickle_bytes)  # data.pkl may inflate from a few bytes
    if not all(dump.globals_seen.values()):
        return dump.root  # a call the reader does not run: reported, no bytes to keep
    try:
        _keep_storage_bytes(outer, payload, dump.record_prefix or "archive", dump.storages)
    except (ReadMismatch, LimitExceeded):
        raise
    except DumpError as exc:
        raise DumpError(
            outer.path, f"malformed pickle at byte {at}: nested torch.save zip: {exc.reason}"
        ) from None
    return dump.root


def _keep_storage_bytes(
    outer: Machine, payload: bytes, prefix: str, storages: list[StorageRef]
) -> None:
    """Copy each storage's record into the storage (replay reads nested bytes from there),
    charged to ``outer``; a record torch cannot read the storage from is its refusal."""
    handle = io.BytesIO(payload)
    # read_zip opened these same bytes already
    with zipfile.ZipFile(zipfile_view(handle, len(payload))) as archive:
        records = archive.infolist()
    reader = RecordReader(outer.path, handle, records, prefix, len(payload))
    record = reader.find("byteorder")
    text = None
    if record is not None:
        text = b"".join(reader.blocks(record, 0, min(record.file_size, 16)))
    order, refused = torch_byteorder(text)
    if refused is not None:
        raise TorchRefuses(outer.path, f"{_REFUSES}: {refused}")
    if order != "little" and storages:
        raise ReadMismatch(
            outer.path,
            "a torch.save zip nested in the pickle keeps its storages big-endian, which "
            "torch.load swaps and ppaux does not read",
        )
    for storage in storages:
        name = storage.record or ""
        record = reader.find_full(name)
        if record is None:
            raise TorchRefuses(outer.path, f"{_REFUSES} has no record {cut(name)}")
        why = reader.allocation_ok(record, storage.nbytes)
        if why is not None:
            raise TorchRefuses(outer.path, f"{_REFUSES}: {why}")
        outer.charge_bytes(storage.nbytes)
        buffer = bytearray(storage.nbytes)
        reader.read_into(record, buffer)
        storage.data = bytes(buffer)
