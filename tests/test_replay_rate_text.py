"""The wire column of replay's table shows a throughput in the unit that suits it."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ppaux.replay.tables import _rate_text


@pytest.mark.parametrize(
    ("mib_s", "shown"),
    [
        (0.0149, "15.3 KiB/s"),  # three floats over gloo
        (5.0, "5 MiB/s"),
        (2048.0, "2 GiB/s"),
        (0.5 / 1024 / 1024, "0.5 B/s"),
    ],
)
def test_known_rates(mib_s: float, shown: str):
    assert _rate_text(mib_s) == shown


@given(st.floats(min_value=1 / 1024 / 1024, max_value=1024 * 1024, allow_nan=False))
def test_the_number_shown_is_between_one_and_a_thousand_and_twenty_four(mib_s: float):
    number, unit = _rate_text(mib_s).split()
    assert unit in ("B/s", "KiB/s", "MiB/s", "GiB/s")
    value = float(number)
    assert 1 <= value <= 1024 or (unit == "GiB/s" and value >= 1024)
    scale = {"B/s": 1 / 1024 / 1024, "KiB/s": 1 / 1024, "MiB/s": 1.0, "GiB/s": 1024.0}[unit]
    assert abs(value * scale - mib_s) <= 0.01 * mib_s
    assert re.fullmatch(r"[0-9]+(\.[0-9]+)?", number)
