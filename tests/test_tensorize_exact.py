"""tensorize writes every value as the original holds it: Python floats are doubles, and a
float32 that would round, flush or overflow one is not written (float64 is). Read back with
torch.load, each value is the original's bit for bit (NaN by its bits too)."""

from __future__ import annotations

import struct
import tempfile
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppaux.fix import tensorize_dump

pytestmark = pytest.mark.torch

P = "__sampling_observer_output__."

_FLOATS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True),
    st.integers(0, 2**64 - 1).map(lambda bits: struct.unpack("<d", struct.pack("<Q", bits))[0]),
    st.sampled_from([0.1, 1e-310, 1e40, -0.0, 16777217.0, 3e38, 1.5]),
)


def _bits(value: float) -> bytes:
    return struct.pack("<d", value)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(_FLOATS, st.lists(_FLOATS, min_size=1, max_size=6)))
def test_every_float_tensorize_writes_reads_back_bit_for_bit(value):
    with tempfile.TemporaryDirectory() as tmp:
        source, output = Path(tmp) / "in.pt", Path(tmp) / "out.pt"
        torch.save({"next_token_ids": torch.tensor([1, 2]), P + "x": value}, source)
        result = tensorize_dump(str(source), str(output))
        assert result.written, result.refusals
        back = torch.load(output, weights_only=True)[P + "x"].tolist()
    sent = value if isinstance(value, list) else [value]
    got = back if isinstance(back, list) else [back]
    assert [_bits(v) for v in got] == [_bits(v) for v in sent], (sent, got)
    # Values float32 holds bit for bit stay float32 (torch.tensor's default).
    narrow = [_bits(float(torch.tensor(v, dtype=torch.float32))) for v in sent]
    if narrow == [_bits(v) for v in sent]:
        assert "float64" not in result.conversions[0].after, result.conversions


def test_torch_rounds_an_int_past_2_53_even_as_float64():
    # What "as torch would read it" means for an int among floats: torch makes a float of it.
    assert torch.tensor([2**53 + 1, 1.5], dtype=torch.float64).tolist()[0] == 2**53
    assert torch.tensor([2**53 + 1, 1.5]).dtype == torch.float32


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(st.integers(-(2**62), 2**62), st.sampled_from([1.5, 0.25, -2.0, 2**53 + 1])),
        min_size=1,
        max_size=6,
    ).filter(lambda items: any(type(v) is float for v in items))
)
def test_an_int_among_floats_is_written_exactly_or_refused(value):
    with tempfile.TemporaryDirectory() as tmp:
        source, output = Path(tmp) / "in.pt", Path(tmp) / "out.pt"
        torch.save({"next_token_ids": torch.tensor([1, 2]), P + "x": value}, source)
        result = tensorize_dump(str(source), str(output))
        # float() is the correctly rounded double: an int it changes no float tensor holds.
        exact = all(type(v) is not int or float(v) == v for v in value)
        assert result.written is exact, (value, result.refusals)
        if not exact:
            (refusal,) = result.refusals
            first = next(v for v in value if type(v) is int and float(v) != v)
            assert f"the int {first} at [{value.index(first)}]" in refusal.reason, refusal
            assert not output.exists()
        else:
            back = torch.load(output, weights_only=True)[P + "x"].tolist()
            assert back == value  # Python compares an int and a float exactly
