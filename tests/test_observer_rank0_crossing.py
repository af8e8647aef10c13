"""What rank 0 received crosses to rank 0's own process as it was (:mod:`ppaux.observer.apart`):
every tensor with its dtype, shape, strides and bits (a NaN, a -0.0, a view of a larger buffer,
a permuted or non-dense layout, a subclass), every other value as itself."""

from __future__ import annotations

import socket
import threading

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.observer.apart import _rebuilt, send
from ppaux.observer.crossing import crossing as _crossing

pytestmark = pytest.mark.torch

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int8, torch.bool]


class Marked(torch.Tensor):
    """A tensor subclass, as a target may send one (it crosses pickled)."""


@st.composite
def _tensor(draw: st.DrawFn) -> torch.Tensor:
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(st.lists(st.integers(0, 4), min_size=0, max_size=3))
    raw = draw(st.binary(min_size=64 * 8, max_size=64 * 8))
    count = 1
    for size in shape:
        count *= size
    base = torch.frombuffer(bytearray(raw), dtype=torch.uint8)[: count * 8].clone()
    width = torch.empty((), dtype=dtype).element_size()
    tensor = (
        base[: count * width].view(dtype).reshape(shape)
        if count
        else torch.empty(shape, dtype=dtype)
    )
    kind = draw(st.sampled_from(["plain", "permuted", "sliced", "expanded", "subclass"]))
    if kind == "permuted" and tensor.dim() >= 2:
        tensor = tensor.transpose(0, 1)
    elif kind == "sliced" and tensor.dim() >= 1 and tensor.shape[0] > 1:
        tensor = tensor[1:]
    elif kind == "expanded" and tensor.dim() >= 1 and tensor.shape[0] == 1:
        tensor = tensor.expand(3, *tensor.shape[1:])
    elif kind == "subclass":
        tensor = tensor.as_subclass(Marked)
    return tensor


_VALUES = st.one_of(
    _tensor(),
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.text(max_size=20),
    st.lists(st.integers(), max_size=4),
)


def _crossed(received: dict) -> dict:
    ours, theirs = socket.socketpair()
    try:
        entries, blobs = _crossing(received)
        sender = threading.Thread(target=send, args=(ours, {"entries": entries}, blobs))
        sender.start()
        from ppaux.observer.apart import _receive

        header = _receive(theirs)
        out = _rebuilt(theirs, header["entries"])
        sender.join()
        return out
    finally:
        ours.close()
        theirs.close()


def _same(a: object, b: object) -> bool:
    if isinstance(a, torch.Tensor):
        return (
            isinstance(b, torch.Tensor)
            and type(a) is type(b)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and a.stride() == b.stride()
            and a.device == b.device
            and bytes(a.contiguous().reshape(-1).view(torch.uint8).tolist())
            == bytes(b.contiguous().reshape(-1).view(torch.uint8).tolist())
        )
    if isinstance(a, float) and a != a:
        return isinstance(b, float) and b != b
    return type(a) is type(b) and a == b and repr(a) == repr(b)


@settings(max_examples=80, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=12), _VALUES, max_size=5))
def test_what_rank_0_received_crosses_as_it_was(received):
    out = _crossed(received)
    assert list(out) == list(received)
    for key, value in received.items():
        assert _same(value, out[key]), key


@settings(max_examples=30, deadline=None)
@given(st.dictionaries(st.integers(), _tensor(), min_size=1, max_size=3))
def test_a_dict_whose_keys_are_not_strings_crosses_whole(received):
    out = _crossed(received)
    assert list(out) == list(received)
    for key, value in received.items():
        assert _same(value, out[key])


def test_a_value_that_cannot_be_pickled_is_said_before_anything_is_sent():
    with pytest.raises(Exception, match="pickle"):
        _crossing({"next_token_ids": torch.zeros(2), "f": lambda: None})
