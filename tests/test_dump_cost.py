"""Bounded cost on inputs made to be expensive: a shared value is described once, cut.

Each file is built by ``benchmarks/bench_shared_values.py``; ``ppaux inspect`` runs in a child
process that reports its own CPU time and peak memory (the promise: under 2 s and 250 MB for
any input under 1 MB, in every format).
"""

from __future__ import annotations

import sys

import pytest
from helpers import REPO

sys.path.insert(0, str(REPO / "benchmarks"))

from bench_shared_values import _cost, repeated_storage_key, shared_dtype_spec


@pytest.mark.parametrize("make", [shared_dtype_spec, repeated_storage_key])
@pytest.mark.parametrize("format", ["text", "json"])
def test_inspect_describes_a_shared_value_once_and_cut(tmp_path, make, format):
    path = tmp_path / f"{make.__name__}.pt"
    make(path)
    assert path.stat().st_size < 1 << 20
    seconds, mib = _cost("inspect", str(path), "--format", format, "-o", str(tmp_path / "out"))
    assert seconds < 2.0 and mib < 250, (seconds, mib)
    report = (tmp_path / "out").read_text(encoding="utf-8")
    assert len(report) < 1 << 20  # each mention cut, not the 1 MiB or 8 MiB value again
    assert "PP118" in report  # a deflated data.pkl is not as torch.save writes it
