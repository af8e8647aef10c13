"""What rank 0 received at a step, as it crosses to rank 0's process (:mod:`.apart`), as
sglang's wire carries it: each plain dense tensor as its dtype, shape, strides, device and
memory; a JSON scalar as itself; anything else pickled, as sglang's ``send_tensor_dict``
pickles what is not a tensor.

Imports torch when used.
"""

from __future__ import annotations

from typing import Any

__all__ = ["crossing", "plain"]


def crossing(received: dict[Any, Any]) -> tuple[list[list[Any]], list[bytes]]:
    """The entries of ``received`` as they cross (``[key, "tensor", dtype, shape, strides,
    device, size]``, ``[key, "value", value]`` or ``[key, "pickled", size]``; the whole dict
    ``[None, "pickled", size]`` where a key is not a string) and their bytes. Pickling runs
    the target's code (a ``__reduce__``): what it raises is the caller's to report."""
    import pickle

    if not all(type(key) is str for key in received):
        blob = pickle.dumps(received)
        return [[None, "pickled", len(blob)]], [blob]
    entries: list[list[Any]] = []
    blobs: list[bytes] = []
    for key, value in received.items():
        entry = plain(key, value)
        if entry is None:
            blob = pickle.dumps(value)
            entry = ([key, "pickled", len(blob)], blob)
        entries.append(entry[0])
        blobs.append(entry[1])
    return entries, blobs


def plain(key: str, value: object) -> tuple[list[Any], bytes] | None:
    """``value`` as it crosses without pickle (a plain dense tensor, a JSON scalar), or None."""
    import ctypes

    import torch

    if value is None or type(value) in (str, int, float, bool):
        return [key, "value", value], b""
    if type(value) is not torch.Tensor or value.layout != torch.strided:
        return None
    if value.is_quantized or value.is_complex() or value.requires_grad:
        return None
    if value.is_conj() or value.is_neg():
        return None
    if torch.empty_like(value).stride() != value.stride():  # not dense
        return None
    dtype = str(value.dtype).removeprefix("torch.")
    meta = value.device.type == "meta"  # a shape and no values
    host = value if meta else value.detach().cpu()
    size = 0 if meta else host.numel() * host.element_size()
    data = ctypes.string_at(host.data_ptr(), size) if size else b""
    shape, strides = list(value.shape), list(value.stride())
    return [key, "tensor", dtype, shape, strides, str(value.device), size], data
