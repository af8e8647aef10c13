"""A one-line failure record that begins with the application's own time (Python logging's,
a launcher's) is read the same inside a collector's envelope (CRI, Docker's json-file, Cloud
Logging's ``textPayload``, a Loki export's ``line``) as in a plain paste: the collector's time
is kept, the application's taken off, and the rank prefix and exception behind it read.
A serving framework's logger that names its file by a path in its package (vLLM's
``ERROR 11-04 18:02:56 [v1/executor/multiproc_executor.py:597] ``) is peeled like one that
names the file alone.

Expected values are written here by hand, never computed with triage's code.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths

OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 132.00 MiB. GPU 3 has a "
    "total capacity of 79.10 GiB of which 98.00 MiB is free."
)
ENVELOPES: dict[str, Callable[[str], str]] = {
    "plain": lambda line: line,
    "cri": lambda line: f"2024-11-20T14:37:16.000000000Z stderr F {line}",
    "docker": lambda line: json.dumps(
        {"log": line + "\n", "stream": "stderr", "time": "2024-11-20T14:37:16Z"}
    ),
    "cloud-logging": lambda line: json.dumps(
        {"textPayload": line, "severity": "ERROR", "timestamp": "2024-11-20T14:37:16Z"}
    ),
    "loki": lambda line: json.dumps({"line": line, "timestamp": "2024-11-20T14:37:16.000Z"}),
}
APP_TIMES = ["2024-11-20 14:37:16", "2024-11-20 14:37:16,123", "2024-11-20T14:37:16"]


def _roots(text: str) -> list[tuple[str, str | None, str | None, str | None]]:
    report = triage_paths(["run.log"], {"run.log": io.BytesIO(text.encode())})
    return [
        (f.code, f.key, f.extra.get("exception"), f.extra.get("kind"))
        for f in report.findings
        if f.code in ("PP801", "PP802", "PP809")
    ]


@pytest.mark.parametrize("envelope", sorted(ENVELOPES))
@pytest.mark.parametrize("app_time", APP_TIMES)
def test_an_application_time_inside_an_envelope_hides_no_rank_s_failure(envelope, app_time):
    line = ENVELOPES[envelope](f"{app_time} [rank3]: {OOM}")
    assert _roots(line + "\n") == [("PP802", "rank 3", "torch.OutOfMemoryError", "memory")]


def test_an_application_time_before_an_exception_without_a_rank_is_read():
    line = ENVELOPES["cri"](f"2024-11-20 14:37:16 {OOM}")
    assert _roots(line + "\n") == [("PP802", None, "torch.OutOfMemoryError", "memory")]


def test_the_collector_s_time_is_the_one_shown():
    line = ENVELOPES["cri"](f"2024-11-20 09:00:01 [rank3]: {OOM}")
    report = triage_paths(["run.log"], {"run.log": io.BytesIO((line + "\n").encode())})
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert "2024-11-20T14:37:16.000000000Z" in root.message
    assert "09:00:01" not in root.message


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    envelope=st.sampled_from(sorted(ENVELOPES)),
    rank=st.integers(0, 63),
    seconds=st.integers(0, 59),
)
def test_the_rank_behind_an_application_time_is_kept_in_every_envelope(envelope, rank, seconds):
    line = ENVELOPES[envelope](f"2024-11-20 14:37:{seconds:02d} [rank{rank}]: {OOM}")
    assert _roots(line + "\n") == [("PP802", f"rank {rank}", "torch.OutOfMemoryError", "memory")]


VLLM_PATH = "ERROR 11-04 18:02:56 [v1/executor/multiproc_executor.py:597] "
VLLM_FILE = "ERROR 11-04 18:02:56 [multiproc_executor.py:597] "
KEY_ERROR_TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3.12/site-packages/vllm/model_executor/models/llama.py", line 40, '
    "in load_weights",
    "    param = params_dict[name]",
    "KeyError: 'model.layers.0.mlp.gate_proj.weight'",
]


@pytest.mark.parametrize("prefix", [VLLM_PATH, VLLM_FILE])
def test_vllm_s_logger_with_a_path_is_peeled_like_one_with_a_file(prefix):
    text = "".join(prefix + line + "\n" for line in KEY_ERROR_TRACEBACK)
    assert _roots(text) == [("PP802", None, "KeyError", "other")]


NCCL_CHECK_TRACEBACK = [
    '  File "/opt/venv/lib/python3.12/site-packages/vllm/distributed/device_communicators/'
    'pynccl.py", line 162, in all_reduce',
    "    self.nccl.ncclAllReduce(buffer_type(in_tensor.data_ptr()),",
    '  File "/opt/venv/lib/python3.12/site-packages/vllm/distributed/device_communicators/'
    'pynccl_wrapper.py", line 291, in NCCL_CHECK',
    '    raise RuntimeError(f"NCCL error: {error_str}")',
    "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
]


def test_vllm_s_records_flattened_onto_one_line_are_read_as_their_lines():
    text = " ".join(VLLM_PATH + line.strip() for line in NCCL_CHECK_TRACEBACK) + "\n"
    assert _roots(text) == [("PP802", None, "RuntimeError", "shape-kernel")]


def test_vllm_s_records_flattened_onto_two_lines_cut_anywhere_are_read():
    flat = " ".join(VLLM_PATH + line.strip() for line in NCCL_CHECK_TRACEBACK)
    cut = flat.index(VLLM_PATH + "raise") - 1
    text = flat[7:cut] + "\n" + flat[cut:] + "\n"
    assert _roots(text) == [("PP802", None, "RuntimeError", "shape-kernel")]


def test_a_line_that_names_the_prefix_once_at_its_start_is_one_record():
    text = VLLM_PATH + "RuntimeError: NCCL error: unhandled cuda error\n"
    assert _roots(text) == [("PP802", None, "RuntimeError", "shape-kernel")]
