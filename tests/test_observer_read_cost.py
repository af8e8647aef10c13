"""A frame of the check's records is refused before it is read when reading it would cost more
than the reader's budget: the cost counts the text and every object and item it would build."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ppaux.observer.framing import FrameError, FrameReader, read_cost

# {"a":[{},{},...]} with 1,000 empty objects in the list: 3,007 bytes; 1,001 '{' (232 each),
# one '[' (72), 999 ',' and one ':' (64 each): 3,007 + 232,232 + 72 + 63,936 + 64.
BODY = b'{"a":[' + b",".join([b"{}"] * 1000) + b"]}"
COST = 299_311


def frame(body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + body


def test_the_cost_counts_text_objects_and_items():
    assert len(BODY) == 3_007
    assert read_cost(BODY) == COST


def test_a_frame_within_its_budget_is_read():
    assert FrameReader(most_cost=COST).feed(frame(BODY)) == [{"a": [{}] * 1000}]


def test_a_frame_past_its_budget_is_refused_with_its_cost():
    reader = FrameReader(most_cost=COST - 1)
    with pytest.raises(FrameError, match="would cost 299,311 bytes to read"):
        reader.feed(frame(BODY))
    assert reader.too_costly == COST
    assert reader.too_large is None


@given(st.recursive(st.none() | st.integers() | st.text(), lambda inner: st.lists(inner)))
def test_the_cost_is_never_below_the_texts_length(value):
    import json

    body = json.dumps({"v": value}).encode()
    assert read_cost(body) >= len(body) + 232 + 64
