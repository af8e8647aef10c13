"""A compressed log cut short never passes a gate when the part read holds no failure."""

from __future__ import annotations

import bz2
import gzip
import lzma

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppaux.report.document import exit_code
from ppaux.triage import triage_paths

COMPRESS = {"gzip": gzip.compress, "bzip2": bz2.compress, "xz": lzma.compress}


def _healthy(lines: int) -> bytes:
    return b"".join(
        b"[2026-12-03 14:56:%02d PP%d] Decode batch, #running-req: %d, #token: 96\n"
        % (n % 60, n % 2, n)
        for n in range(lines)
    )


@pytest.mark.parametrize("compression", sorted(COMPRESS))
def test_a_cut_compressed_log_without_a_failure_is_an_error(compression, tmp_path):
    packed = COMPRESS[compression](_healthy(60_000))
    path = tmp_path / "server.log.1"
    path.write_bytes(packed[: len(packed) // 2])
    report = triage_paths([str(path)])
    assert not report.problems
    (cut,) = report.findings
    assert cut.code == "PP812"
    assert cut.message.startswith(f"the {compression} stream ends early (")
    assert "hold no failure: the rest could not be read" in cut.message
    assert exit_code(report) == 1
    # the whole log is healthy: nothing said, exit 0
    path.write_bytes(packed)
    whole = triage_paths([str(path)])
    assert not whole.findings and exit_code(whole) == 0


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    compression=st.sampled_from(sorted(COMPRESS)),
    lines=st.integers(1, 3000),
    kept=st.floats(0.0, 0.999),
)
def test_a_compressed_log_cut_anywhere_never_passes_a_gate(tmp_path, compression, lines, kept):
    packed = COMPRESS[compression](_healthy(lines))
    path = tmp_path / "server.log.gz"
    path.write_bytes(packed[: int(len(packed) * kept)])
    report = triage_paths([str(path)])
    assert exit_code(report) != 0


_WARNING = (
    b"/usr/lib/python3.11/site-packages/sglang/srt/layers/quantization/awq/awq.py:53: "
    b"UserWarning: Only CUDA, HIP and XPU support AWQ currently.\n"
    b'  warnings.warn(f"Only CUDA, HIP and XPU support AWQ currently.")\n'
)


@pytest.mark.parametrize(
    ("text", "end"),
    [
        (_WARNING * 400 + _healthy(100), "so they may be only the start of a log"),
        (b"x" * 20_000, "inside its first line"),
    ],
)
def test_a_gzip_log_cut_before_any_shaped_line_says_the_stream_is_cut(text, end, tmp_path):
    packed = gzip.compress(text)
    path = tmp_path / "trunc.log.gz"
    path.write_bytes(packed[: len(packed) // 2])
    report = triage_paths([str(path)])
    (problem,) = report.problems
    assert problem.message.startswith("not an sglang log: no line has the shape of sglang's")
    assert "its gzip stream ends early (Compressed file ended before the end-of-stream" in (
        problem.message
    )
    assert problem.message.endswith(end)
    assert exit_code(report) == 2
