"""A kernel's fault on the device (an illegal memory access, a device-side assert) is a shape or
kernel failure wherever it surfaced: in NCCL's watchdog thread, under ``ProcessGroupNCCL``'s
frames or a ``DistBackendError`` type. ``triage`` and ``explain`` read it alike."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import cli

from ppaux.triage import triage_paths

_IMA = "CUDA error: an illegal memory access was encountered"
#: torch's C++ note and frames after a CUDA error, as a web page flattens them onto the
#: exception's own line.
_FRAMES = (
    " CUDA kernel errors might be asynchronously reported at some other API call. "
    "Exception raised from c10_cuda_check_implementation at /pytorch/c10/cuda/"
    "CUDAException.cpp:44 (most recent call first): frame #0: c10::Error::Error() + 0x80 "
    "frame #2: c10d::ProcessGroupNCCL::WorkNCCL::finishedGPUExecutionInternal() const + 0x50 "
    "frame #4: c10d::ProcessGroupNCCL::Watchdog::runLoop() + 0x969"
)
#: Exception lines of a kernel's fault that name communication too.
LINES = {
    "frames-flattened": f"RuntimeError: {_IMA}{_FRAMES}",
    "dist-backend-type": f"torch.distributed.DistBackendError: {_IMA}",
    "device-assert-watchdog": (
        "RuntimeError: CUDA error: device-side assert triggered (ProcessGroupNCCL watchdog)"
    ),
}


def _log(tmp_path: Path, line: str) -> Path:
    path = tmp_path / "server.log"
    path.write_text(
        "[2026-12-01 10:00:01 TP0] Scheduler hit an exception: Traceback (most recent call "
        "last):\n"
        '  File "/opt/sglang/srt/managers/scheduler.py", line 2412, in run_scheduler_process\n'
        "    scheduler.event_loop_normal()\n"
        f"{line}\n",
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize("name", sorted(LINES))
def test_a_kernel_fault_is_a_kernel_failure_wherever_it_surfaced(tmp_path, name):
    report = triage_paths([str(_log(tmp_path, LINES[name]))])
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert root.extra["kind"] == "shape-kernel"
    assert root.key == "TP0"


@pytest.mark.parametrize("name", sorted(LINES))
def test_explain_reads_the_same_line_as_a_kernel_failure(name):
    result = cli("explain", "--", LINES[name])
    assert result.exit_code == 2
    assert "it is a shape or kernel failure" in result.output
    assert "communication" not in result.output


def test_an_nccl_error_of_cuda_is_this_rank_s_gpu_not_the_network(tmp_path):
    # NCCL's own 'unhandled cuda error' outside a set-up: a CUDA call of NCCL's failed on this
    # rank's GPU; it is the rank's failure (a root), never a peer's or the network's
    line = "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO)"
    report = triage_paths([str(_log(tmp_path, line))])
    assert [f.extra["kind"] for f in report.findings if f.code == "PP802"] == ["shape-kernel"]
    result = cli("explain", "--", line)
    out = " ".join(result.output.split())
    assert "a CUDA failure of this rank's own GPU, not the network's" in out
    assert "it is a communication failure" not in out


#: A closed connection whose message carries a kernel fault's words it did not have: a peer's
#: last words in quotes, a path after the socket's own words.
CARRIED = {
    "peer-last-words": (
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed "
        "by peer [10.0.0.2]:23456 (peer last said: 'CUDA error: an illegal memory access was "
        "encountered')"
    ),
    "path-after-reset": (
        "RuntimeError: Connection reset by peer while reading /data/runs/illegal memory access "
        "was encountered/step.bin"
    ),
}


@pytest.mark.parametrize("name", sorted(CARRIED))
def test_a_closed_connection_carrying_a_faults_words_is_communication(tmp_path, name):
    report = triage_paths([str(_log(tmp_path, CARRIED[name]))])
    kinds = {
        f.extra.get("kind") or f.extra.get("no_root")
        for f in report.findings
        if f.code in ("PP802", "PP809")
    }
    assert "shape-kernel" not in kinds
    assert kinds <= {"communication", "network-or-other-node"}, kinds
