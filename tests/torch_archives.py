"""Files torch's own zip writer lays out, in torch.save's record order, around a data.pkl made
by hand: what the writer-grammar tests edit, so that only the pickle differs from torch.save's."""

from __future__ import annotations

import pickle
from pathlib import Path


def torch_archive(path: Path, data_pkl: bytes, storages: dict[str, bytes]) -> Path:
    """``path`` written by torch's zip writer: data.pkl, the version, alignment and byte-order
    records, then each storage as ``data/<key>``."""
    import torch

    with torch.serialization._open_zipfile_writer(str(path)) as archive:
        archive.write_record("data.pkl", data_pkl, len(data_pkl))
        archive.write_record(".format_version", "1", 1)
        archive.write_record(".storage_alignment", "64", 2)
        archive.write_record("byteorder", "little", 6)
        for key, data in storages.items():
            archive.write_record(f"data/{key}", data, len(data))
    return path


class StoragePickler(pickle.Pickler):
    """Pickles a test's stand-in storage (an object with a ``pid``, the persistent id torch
    writes for a storage) as that persistent id."""

    def persistent_id(self, obj: object) -> object:
        return getattr(obj, "pid", None) if not isinstance(obj, type) else None
