"""Replay on CUDA: rebuilding on the GPU, the emulated wire's NCCL behaviour, two-GPU NCCL.

Skipped where CUDA is absent; the torch.distributed test also needs two CUDA devices, because
NCCL refuses two ranks on one GPU.
"""

from __future__ import annotations

import pytest
import torch

from ppaux.replay import ReplayConfigError, ReplayOptions, Sender, Transport, replay_paths
from ppaux.replay.wire import transfer

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
    pytest.mark.usefixtures("in_repo"),
    pytest.mark.torch,
]

P = "__sampling_observer_output__."


def run_of(report, index: int = 0) -> dict:
    return report.data["results"][index]["payloads"][0]["runs"]["reference"]


def test_saved_cuda1_lands_on_the_chosen_device():
    report = replay_paths(["fixtures/dumps/cuda1_output.pt"], ReplayOptions(device="cuda:0"))
    assert report.data["results"][0]["outcome"] == "ok"
    assert {entry["device"] for entry in run_of(report)["sent"]} == {"cuda:0"}
    assert {entry["device"] for entry in run_of(report)["output"]} == {"cuda:0"}


def test_every_fixture_replays_on_cuda_as_on_cpu():
    for sender in (Sender.VALIDATING, Sender.LEGACY):
        cpu = replay_paths(["fixtures/dumps"], ReplayOptions(sender=sender))
        gpu = replay_paths(["fixtures/dumps"], ReplayOptions(sender=sender, device="cuda"))
        assert [p.path for p in gpu.problems] == [p.path for p in cpu.problems]
        assert [(r["path"], r["outcome"], r["error"]) for r in gpu.data["results"]] == [
            (r["path"], r["outcome"], r["error"]) for r in cpu.data["results"]
        ]


def test_wire_on_cuda_drops_the_index_and_sends_memory_as_it_lies():
    received, _ = transfer({f"{P}x": torch.arange(6.0, device="cuda").reshape(2, 3)})
    assert received[f"{P}x"].device == torch.device("cuda", torch.cuda.current_device())
    # NCCL only warns for a non-contiguous point-to-point send and ships the storage order.
    report = replay_paths(
        ["fixtures/dumps/aux_non_contiguous.pt"],
        ReplayOptions(device="cuda", sender=Sender.LEGACY, transport=Transport.WIRE),
    )
    result = report.data["results"][0]
    assert result["outcome"] == "diverged"
    (mismatch,) = run_of(report)["mismatches"]
    assert mismatch["what"] == "bits"
    assert [f.code for f in report.findings] == ["PP405"]


def test_sparse_is_refused_by_nccl():
    report = replay_paths(
        ["fixtures/dumps/aux_sparse.pt"],
        ReplayOptions(device="cuda", sender=Sender.LEGACY, transport=Transport.WIRE),
    )
    result = report.data["results"][0]
    assert (result["stage"], result["error_type"], result["error"]) == (
        "wire",
        "ValueError",
        "Tensors must be CUDA and dense",
    )


@pytest.mark.distributed
def test_torch_distributed_over_nccl():
    options = ReplayOptions(
        device="cuda:0", sender=Sender.LEGACY, transport=Transport.TORCH_DISTRIBUTED, timeout_s=60
    )
    if torch.cuda.device_count() < 2:
        with pytest.raises(ReplayConfigError) as caught:
            replay_paths(["fixtures/dumps/clean_output.pt"], options)
        assert caught.value.reason.startswith(
            "the torch-distributed transport on CUDA needs two CUDA devices"
        )
        return
    report = replay_paths(["fixtures/dumps/clean_output.pt", "fixtures/dumps/aux_list.pt"], options)
    clean, listed = report.data["results"]
    assert clean["outcome"] == "ok"
    # The receiver is rank 0's GPU, the next one: the index is dropped, values are intact.
    assert {e["device"] for e in run_of(report)["received"]} == {"cuda:1"}
    assert (listed["stage"], listed["error"]) == (
        "pop",
        "received a non-tensor auxiliary PP output",
    )
