"""torch's one-line NCCL record of an ``unhandled cuda error`` names the CUDA error on the
lines below it, after ``Last error:``: that error is read as the record's, and decides its
kind (memory for ``out of memory``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ppaux.triage import triage_paths

_RECORD = (
    "[rank3]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/"
    "c10d/NCCLUtils.hpp:275, unhandled cuda error (run with NCCL_DEBUG=INFO for details), "
    "NCCL version 2.20.5"
)


def _root(tmp_path: Path, lines: list[str]) -> tuple[str, str]:
    path = tmp_path / "x.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root,) = [f for f in triage_paths([str(path)]).findings if f.code == "PP802"]
    return root.key, str(root.extra["kind"])


@pytest.mark.parametrize("code", ["", " 2"])
def test_out_of_memory_after_last_error_is_a_memory_failure(tmp_path, code):
    lines = [
        _RECORD,
        "[rank3]: ncclUnhandledCudaError: Call to CUDA function failed.",
        "[rank3]: Last error:",
        f"[rank3]: Cuda failure{code} 'out of memory'",
    ]
    assert _root(tmp_path, lines) == ("rank 3", "memory")


def test_without_the_last_error_it_stays_a_cuda_failure_of_its_own_gpu(tmp_path):
    lines = [_RECORD, "[rank3]: ncclUnhandledCudaError: Call to CUDA function failed."]
    assert _root(tmp_path, lines) == ("rank 3", "shape-kernel")


def test_another_ranks_out_of_memory_is_not_this_records(tmp_path):
    lines = [
        _RECORD,
        "[rank3]: ncclUnhandledCudaError: Call to CUDA function failed.",
        "[rank3]: Last error:",
        "[rank5]: Cuda failure 'out of memory'",
    ]
    assert _root(tmp_path, lines) == ("rank 3", "shape-kernel")
