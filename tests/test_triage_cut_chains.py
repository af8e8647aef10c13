"""A chained traceback cut before its own exception names the exception it was raised from:
vLLM's worker logs ``RuntimeError: NCCL error: unhandled cuda error``, then "The above
exception was the direct cause of the following exception:" and a traceback the paste cuts.
The failure is that RuntimeError's (its kind, its words), never "an exception the log does not
show".

Expected values are written here by hand, never computed with triage's code.
"""

from __future__ import annotations

import io

import pytest

from ppaux.triage import triage_paths

PREFIX = "(VllmWorkerProcess pid=350) ERROR 01-29 20:00:47 multiproc_worker_utils.py:240] "
BODY = [
    "Traceback (most recent call last):",
    '  File "/venv/vllm/distributed/device_communicators/pynccl_wrapper.py", line 254, in '
    "NCCL_CHECK",
    '    raise RuntimeError(f"NCCL error: {error_str}")',
    "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
    "",
    "The above exception was the direct cause of the following exception:",
    "",
    "Traceback (most recent call last):",
    '  File "/venv/vllm/executor/multiproc_worker_utils.py", line 234, in _run_worker_process',
]


def _root(text: str):
    report = triage_paths(["run.log"], {"run.log": io.BytesIO(text.encode())})
    (found,) = [f for f in report.findings if f.code == "PP802"]
    return found


@pytest.mark.parametrize("prefix", ["", PREFIX])
def test_a_cut_chain_names_the_exception_it_was_raised_from(prefix):
    found = _root("".join(f"{prefix}{line}\n" for line in BODY))
    flat = " ".join(found.message.split())
    assert "RuntimeError: NCCL error: unhandled cuda error" in flat
    assert "an exception the log does not show" not in flat
    assert found.extra["kind"] == "shape-kernel"


def test_a_cut_traceback_without_a_chain_still_says_it_is_not_shown():
    found = _root("".join(f"{PREFIX}{line}\n" for line in BODY[-2:]))
    assert "an exception the log does not show" in " ".join(found.message.split())
    assert found.extra["kind"] == "unknown"
