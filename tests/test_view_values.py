"""The values a conjugate or negative view reads, worked out from its bytes without torch."""

from __future__ import annotations

import struct

from hypothesis import given
from hypothesis import strategies as st

from ppaux.dump.view_values import resolver


def test_hand_worked_elements():
    unit, neg = resolver("float32", ("neg",))
    assert unit == 4
    assert neg(bytes.fromhex("0000803f00000000")) == bytes.fromhex("000080bf00000080")
    _, neg16 = resolver("int16", ("neg",))
    assert neg16(bytes.fromhex("010000800000")) == bytes.fromhex("ffff00800000")
    _, negu8 = resolver("uint8", ("neg",))
    assert negu8(b"\x01\xff\x00") == b"\xff\x01\x00"
    unit, conj = resolver("complex64", ("conj",))
    assert unit == 8
    assert conj(struct.pack("<2f", 1.0, 2.0)) == struct.pack("<2f", 1.0, -2.0)
    _, both = resolver("complex128", ("conj", "neg"))
    assert both(struct.pack("<2d", 1.0, 2.0)) == struct.pack("<2d", -1.0, 2.0)
    _, bf16 = resolver("bfloat16", ("neg",))
    assert bf16(bytes.fromhex("803f")) == bytes.fromhex("80bf")  # 1.0 -> -1.0


def test_what_is_not_modelled_is_none():
    assert resolver("bool", ("neg",)) is None
    assert resolver("float8_e4m3fnuz", ("neg",)) is None  # no negative zero: not a sign flip
    assert resolver("float32", ("conj",)) is None


finite = st.floats(allow_nan=False, width=32)


@given(st.lists(finite, max_size=20))
def test_a_negative_float32_view_reads_each_value_negated(values):
    _, neg = resolver("float32", ("neg",))
    packed = struct.pack(f"<{len(values)}f", *values)
    assert neg(packed) == struct.pack(f"<{len(values)}f", *(-v for v in values))


@given(st.lists(st.tuples(finite, finite), max_size=20))
def test_a_conjugate_complex64_view_reads_each_imaginary_part_negated(pairs):
    _, conj = resolver("complex64", ("conj",))
    flat = [x for pair in pairs for x in pair]
    expected = [x for re, im in pairs for x in (re, -im)]
    assert conj(struct.pack(f"<{len(flat)}f", *flat)) == struct.pack(f"<{len(flat)}f", *expected)


@given(st.lists(st.integers(-(2**31), 2**31 - 1), max_size=20))
def test_a_negative_int32_view_reads_each_value_negated_with_wraparound(values):
    _, neg = resolver("int32", ("neg",))
    wrapped = [(-v + 2**31) % 2**32 - 2**31 for v in values]
    assert neg(struct.pack(f"<{len(values)}i", *values)) == struct.pack(
        f"<{len(values)}i", *wrapped
    )
