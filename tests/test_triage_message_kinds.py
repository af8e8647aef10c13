"""Messages that say their own kind of failure: lmdeploy TurboMind's one-line ``[TM][ERROR]
CUDA runtime error: out of memory <file>:<line>`` record (no Python traceback) and the same words
inside a ``RuntimeError``, DeepSpeed's pipeline engine's ``Mismatch in shape``. ``triage`` reads
each as that kind of failure, ``explain`` names the kind. Expected kinds are written by hand."""

from __future__ import annotations

import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ppaux.triage import kind_of_text, triage_paths

DECODE = (
    "[2026-12-03 14:56:00 TP0] Decode batch. #running-req: 1, #token: 100, token usage: 0.01, "
    "gen throughput (token/s): 10.0, #queue-req: 0\n"
)
TM_OOM = (
    "[TM][ERROR] CUDA runtime error: out of memory /opt/lmdeploy/src/turbomind/core/allocator.cc:42"
)
#: TurboMind's record inside a RuntimeError, and DeepSpeed's pipeline engine's shape refusal:
#: each the last line of a traceback below, and a line explain is given.
TM_INVALID = (
    "RuntimeError: [TM][ERROR] CUDA runtime error: invalid argument "
    "/lmdeploy/src/turbomind/utils/memory_utils.cu:136"
)
MISMATCH = (
    "RuntimeError: Mismatch in shape: grad_output[0] has a shape of torch.Size([8, 4096]) "
    "and output[0] has a shape of torch.Size([8, 4097])"
)


def _roots(text: str) -> list[tuple[str, object, object]]:
    report = triage_paths(["run.log"], {"run.log": io.BytesIO(text.encode())})
    assert not report.problems
    return [
        (f.code, (f.extra or {}).get("kind"), (f.extra or {}).get("exception"))
        for f in report.findings
        if f.code in ("PP802", "PP809")
    ]


@pytest.mark.parametrize(
    "log",
    [
        DECODE + TM_OOM + "\n",
        TM_OOM + "\n",
        # the paste cut inside the record's place
        "engine_cfg:\n[TM][ERROR] CUDA runtime error: out of memory "
        "/opt/lmdeploy/src/turbomind/cor",
    ],
)
def test_turbomind_s_out_of_memory_record_is_a_memory_failure(log):
    assert _roots(log) == [("PP802", "memory", "CUDA runtime error")]


def test_turbomind_s_record_inside_a_runtime_error_is_a_cuda_error():
    log = (
        "Exception in thread Thread-2 (_create_weight):\nTraceback (most recent call last):\n"
        '  File "/srv/lmdeploy/turbomind/turbomind.py", line 128, in _create_weight\n'
        "    model.create_shared_weights(device_id, rank)\n"
        f"{TM_INVALID} \n"
    )
    assert _roots(log) == [("PP802", "shape-kernel", "RuntimeError")]


def test_a_pipeline_s_mismatch_in_shape_is_a_shape_failure():
    log = (
        '  File "/srv/deepspeed/runtime/pipe/engine.py", line 722, in _exec_backward_pass\n'
        "    torch.autograd.backward(tensors=(outputs, ), grad_tensors=(grad_tensors, ))\n"
        f"{MISMATCH}.\n"
    )
    assert _roots(log) == [("PP802", "shape-kernel", "RuntimeError")]


@pytest.mark.parametrize(
    ("line", "kind"),
    [(TM_OOM, "memory"), (TM_INVALID, "shape-kernel"), (MISMATCH, "shape-kernel")],
)
def test_explain_names_the_kind_a_message_says(line, kind):
    assert kind_of_text(line) == kind


def test_words_about_a_record_are_no_record():
    # a sentence that names the record is not the engine writing it
    text = DECODE + "we saw [TM][ERROR] CUDA runtime error: out of memory on the old release\n"
    assert _roots(text) == []


@given(st.text(alphabet="abcdefghij [TM]ERO:/.0123456789\n", max_size=200))
def test_any_text_is_read_without_error(text):
    _roots(DECODE + text)
