"""The first values a finding shows of a tensor or a numpy array: two values that differ never
print alike (six significant digits at least, as many as the dtype needs to read back as the
same value)."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from ppaux.observer.array_digests import array_values, tensor_values

pytestmark = pytest.mark.torch


def _one(text: str) -> float:
    return float(text.strip("[]"))


def test_two_float32_values_six_digits_print_alike_are_told_apart():
    a = torch.tensor([-2.556931], dtype=torch.float32)
    b = torch.nextafter(a, torch.zeros(1))
    assert f"{a.item():g}" == f"{b.item():g}"  # what six digits showed for both
    assert tensor_values(a) != tensor_values(b)
    assert tensor_values(torch.tensor([0.5, 0.25])) == "[0.5, 0.25]"  # short where exact


finite32 = st.floats(width=32, allow_nan=False, allow_infinity=False)


@given(finite32, finite32)
def test_float32_values_read_back_and_differ_in_text_where_they_differ(x, y):
    tx, ty = tensor_values(torch.tensor([x])), tensor_values(torch.tensor([y]))
    assert struct.pack("f", _one(tx)) == struct.pack("f", x)
    assert (tx == ty) == (struct.pack("f", x) == struct.pack("f", y))


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_float64_values_read_back(x):
    text = tensor_values(torch.tensor([x], dtype=torch.float64))
    assert _one(text) == x
    assert _one(array_values(np.array([x]))) == x


@given(st.floats(width=16, allow_nan=False, allow_infinity=False))
def test_float16_values_read_back_in_their_width(x):
    text = tensor_values(torch.tensor([x], dtype=torch.float16))
    assert torch.tensor([_one(text)], dtype=torch.float16).item() == x
    assert not math.isnan(_one(text))
