"""A one-line exception behind an application logger's own prefix is a failure: DeepSpeed's
``[<time>] [ERROR] [file.py:N:func] `` (with torch's ``[rankN]:`` after it, or its place left
out), glog's ``E1203 14:56:07.123456 123 file.py:10] ``, and a k9s or stern pod name before
Python logging's time and level, plain and inside a collector's record. A line of such a
logger that holds no exception stays no failure.

Expected values are written here by hand, never computed with triage's code.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths

IMA = "RuntimeError: CUDA error: an illegal memory access was encountered"
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
ENVELOPES: dict[str, Callable[[str], str]] = {
    "plain": lambda line: line,
    "docker": lambda line: json.dumps(
        {"log": line + "\n", "stream": "stderr", "time": "2026-12-03T14:56:07.123Z"}
    ),
    "cloud-logging": lambda line: json.dumps(
        {"textPayload": line, "severity": "ERROR", "timestamp": "2026-12-03T14:56:07.001Z"}
    ),
    "cri": lambda line: f"2026-12-03T14:56:07.001000000Z stderr F {line}",
}
#: (line, the finding's key, exception, kind), each written by hand.
CASES = [
    (
        f"[2026-12-03 14:56:07,001] [ERROR] [engine.py:2100:step] {IMA}",
        None,
        "RuntimeError",
        "shape-kernel",
    ),
    (
        f"[2026-12-03 14:56:07,001] [ERROR] [engine.py:2100:step] {OOM}",
        None,
        "torch.OutOfMemoryError",
        "memory",
    ),
    (f"[2026-12-03 14:56:07,001] [ERROR] [rank1]: {IMA}", "rank 1", "RuntimeError", "shape-kernel"),
    (
        f"[2026-12-03 14:56:07,001] ERROR [rank1]: {OOM}",
        "rank 1",
        "torch.OutOfMemoryError",
        "memory",
    ),
    (f"E1203 14:56:07.123456 123 worker.py:10] {IMA}", None, "RuntimeError", "shape-kernel"),
    (
        f"sglang-0 2026-12-03 14:56:07,001 ERROR [rank0]: {OOM}",
        "sglang-0, rank 0",
        "torch.OutOfMemoryError",
        "memory",
    ),
]


def _roots(text: str) -> list[tuple[str, str | None, str | None, str | None]]:
    report = triage_paths(["run.log"], {"run.log": io.BytesIO(text.encode())})
    return [
        (f.code, f.key, f.extra.get("exception"), f.extra.get("kind"))
        for f in report.findings
        if f.code in ("PP801", "PP802", "PP809")
    ]


@pytest.mark.parametrize("envelope", sorted(ENVELOPES))
@pytest.mark.parametrize(("line", "key", "exception", "kind"), CASES)
def test_a_logger_s_prefix_hides_no_exception(envelope, line, key, exception, kind):
    wrapped = ENVELOPES[envelope](line)
    found = _roots(wrapped + "\n")
    assert [(code, exc, k) for code, _, exc, k in found] == [("PP802", exception, kind)]
    if envelope == "plain" or key is None or key.startswith("rank"):
        assert found[0][1] == key


def test_the_logger_s_other_lines_are_no_failure():
    log = (
        "[2026-12-03 14:56:06,001] [INFO] [real_accelerator.py:203:get_accelerator] Setting "
        "ds_accelerator to cuda (auto detect)\n"
        "I1203 14:56:06.000001 123 worker.py:9] step 7 done\n"
        "sglang-0 2026-12-03 14:56:06,001 INFO [rank0]: step 7 loss 1.0\n"
    )
    assert _roots(log) == []


def test_serving_lines_before_the_record_keep_it_the_failure():
    lines = [
        f"sglang-0 2026-12-03 14:56:0{n},001 INFO [rank0]: step {n} loss 1.0" for n in range(9)
    ]
    lines.append(f"sglang-0 2026-12-03 14:56:09,001 ERROR [rank0]: {OOM}")
    assert _roots("\n".join(lines) + "\n") == [
        ("PP802", "sglang-0, rank 0", "torch.OutOfMemoryError", "memory")
    ]


@settings(max_examples=40, deadline=None)
@given(
    level=st.sampled_from(["ERROR", "[ERROR]", "[CRITICAL]"]),
    place=st.sampled_from(["", "[engine.py:2100:step] ", "[runtime/engine.py:7:<lambda>] "]),
    millis=st.integers(0, 999),
    rank=st.integers(0, 63),
)
def test_any_deepspeed_prefix_before_a_ranked_oom_is_that_rank_s_memory_failure(
    level, place, millis, rank
):
    line = f"[2026-12-03 14:56:07,{millis:03d}] {level} {place}[rank{rank}]: {OOM}\n"
    assert _roots(line) == [("PP802", f"rank {rank}", "torch.OutOfMemoryError", "memory")]
