"""The records each range of torch releases writes around its pickle, as data.

Read from ``_save`` in torch/serialization.py of the release wheels, and from the records
PyTorchStreamWriter adds when it closes the archive:

- torch 2.0: ``data.pkl``, ``data/<key>`` with the keys sorted as strings (``sorted`` of
  ``'0'``, ``'1'``, ``'10'``, ...), ``version``.
- torch 2.1 to 2.6: ``data.pkl``, ``byteorder``, ``data/<key>`` sorted as strings,
  ``version``, ``.data/serialization_id``. Under ``_disable_byteorder_record=True`` the stream
  writer adds ``byteorder`` after ``version``.
- torch 2.7 to 2.14.1: ``data.pkl``, ``.format_version``, ``.storage_alignment``,
  ``byteorder``, ``data/<key>`` in order of first use (numeric: ``.format_version`` '1' marks
  that change), ``version``, ``.data/serialization_id``; ``byteorder`` after ``version``
  under ``_disable_byteorder_record=True``.

A file is as torch.save writes it when its records are one release range's, whole: the
records of one range in the order of another are not.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LAYOUTS", "Layout", "layout_names"]


@dataclass(frozen=True)
class Layout:
    """The records one range of torch releases writes, in its order."""

    releases: str
    #: ``.format_version`` and ``.storage_alignment`` after ``data.pkl``.
    format_records: bool
    #: a ``byteorder`` record (torch.save's, or the stream writer's after ``version``).
    byteorder: bool
    #: ``.data/serialization_id`` last.
    serialization_id: bool
    #: storage records sorted by key as strings, not in order of first use.
    sorted_keys: bool


#: Newest first: where no layout matches, the first one that matches longest is named.
LAYOUTS = (
    Layout("torch 2.7 to 2.14.1", True, True, True, False),
    Layout("torch 2.1 to 2.6", False, True, True, True),
    Layout("torch 2.0", False, False, False, True),
)


def layout_names(layout: Layout, prefix: str, keys: list[str], byteorder_last: bool) -> list[str]:
    """The record names ``layout``'s releases write, in order, for storages ``keys`` (in order
    of first use); with ``byteorder_last`` as ``_disable_byteorder_record=True`` leaves them."""
    order = sorted(keys) if layout.sorted_keys else keys
    head = [f"{prefix}data.pkl"]
    if layout.format_records:
        head += [f"{prefix}.format_version", f"{prefix}.storage_alignment"]
    early = [f"{prefix}byteorder"] if layout.byteorder and not byteorder_last else []
    late = [f"{prefix}byteorder"] if layout.byteorder and byteorder_last else []
    tail = [f"{prefix}.data/serialization_id"] if layout.serialization_id else []
    return (
        head + early + [f"{prefix}data/{key}" for key in order] + [f"{prefix}version"] + late + tail
    )
