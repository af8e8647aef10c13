"""NCCL's own CUDA failures are that process's failure on its own GPU, never the network's:
``NCCL WARN Cuda failure 'out of memory'`` (with its ``Failed to CUDA calloc N bytes``: one
failure, not two) is memory; ``Cuda failure 1 'invalid argument'``, an illegal memory access
NCCL's enqueue met, torch's ``unhandled cuda error`` outside a set-up are a CUDA fault
(shape-kernel); the same at a communicator's set-up stays communication-init; NCCL's socket
warnings alone still say the cause is elsewhere.

Expected values are written here by hand, never computed with triage's code.
"""

from __future__ import annotations

import io

import pytest

from ppaux.triage import triage_paths

NCCL = "host-a:193:3196 [1]"
OOM = f"{NCCL} include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'"
CALLOC = f"{NCCL} include/alloc.h:185 NCCL WARN Failed to CUDA calloc 6291456 bytes"
SOCKET = (
    "host-a:190:3101 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by "
    "remote peer host-b<51159>"
)


def _findings(lines: list[str]) -> list[tuple[str, str | None, str | None, str | None]]:
    text = "".join(line + "\n" for line in lines)
    report = triage_paths(["run.log"], {"run.log": io.BytesIO(text.encode())})
    return [
        (f.code, f.key, f.extra.get("exception"), f.extra.get("kind") or f.extra.get("no_root"))
        for f in report.findings
        if f.code in ("PP801", "PP802", "PP803", "PP809")
    ]


def test_nccl_s_cuda_out_of_memory_and_its_calloc_are_one_memory_failure():
    assert _findings([OOM, CALLOC]) == [("PP802", None, "ncclUnhandledCudaError", "memory")]


def test_a_calloc_alone_is_memory():
    assert _findings([CALLOC]) == [("PP802", None, "ncclUnhandledCudaError", "memory")]


@pytest.mark.parametrize(
    "line",
    [
        f"{NCCL} include/alloc.h:102 NCCL WARN Cuda failure 1 'invalid argument'",
        f"{NCCL} enqueue.cc:1085 NCCL WARN Cuda failure 'an illegal memory access was encountered'",
    ],
)
def test_another_cuda_failure_of_nccl_is_a_cuda_fault_of_that_process(line):
    assert _findings([line]) == [("PP802", None, "ncclUnhandledCudaError", "shape-kernel")]


def test_at_nccl_s_set_up_it_stays_a_set_up_failure():
    line = (
        f"{NCCL} init.cc:1582 NCCL WARN Cuda failure 'CUDA driver version is insufficient for "
        "CUDA runtime version'"
    )
    assert _findings([line]) == [("PP802", None, "ncclUnhandledCudaError", "communication-init")]


def test_the_socket_closed_before_the_oom_is_no_root():
    assert _findings([SOCKET, OOM, CALLOC]) == [("PP802", None, "ncclUnhandledCudaError", "memory")]


def test_socket_warnings_alone_still_say_the_cause_is_elsewhere():
    (found,) = _findings([SOCKET])
    assert found[0] == "PP809"


def test_torch_s_unhandled_cuda_error_and_nccl_s_name_of_it_are_one_failure():
    lines = [
        "[rank7]: torch.distributed.DistBackendError: NCCL error in: "
        "../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled cuda error (run with "
        "NCCL_DEBUG=INFO for details), NCCL version 2.20.5",
        "[rank7]: ncclUnhandledCudaError: Call to CUDA function failed.",
        "[rank7]: Last error:",
        "[rank7]: Cuda failure 1 'invalid argument'",
    ]
    assert _findings(lines) == [
        ("PP802", "rank 7", "torch.distributed.DistBackendError", "shape-kernel")
    ]


def test_two_ranks_naming_nccl_errors_stay_two_failures():
    lines = [
        "[rank7]: torch.distributed.DistBackendError: NCCL error in: NCCLUtils.hpp:275, "
        "unhandled cuda error, NCCL version 2.20.5",
        "[rank6]: ncclUnhandledCudaError: Call to CUDA function failed.",
    ]
    ranks = {key for _, key, _, _ in _findings(lines)}
    assert ranks == {"rank 7", "rank 6"}


def test_pynccl_s_unhandled_cuda_error_alone_is_a_root_not_the_network():
    line = (
        "ERROR 11-04 18:02:56 [v1/executor/multiproc_executor.py:597] RuntimeError: NCCL "
        "error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)"
    )
    assert _findings([line]) == [("PP802", None, "RuntimeError", "shape-kernel")]
