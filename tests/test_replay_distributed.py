"""Replay through a real torch.distributed group: two processes, gloo on 127.0.0.1.

Each test starts one receiver process (a few seconds on a small CPU machine) with short
timeouts; the sender is the test process itself.
"""

from __future__ import annotations

import json

import pytest
import test_replay_fixtures as fixtures
import torch
from helpers import cli

from ppaux.replay.distributed import DistributedWire
from ppaux.replay.run import ReplayOptions, Sender, Transport, replay_paths
from ppaux.replay.wire import WireError

pytestmark = [pytest.mark.distributed, pytest.mark.usefixtures("in_repo")]

P = "__sampling_observer_output__."
TIMEOUT = "30"


class ReceiverCannotImport:
    """Pickled by reference to this test module, which the receiver process cannot import."""


def test_legacy_sender_reproduces_the_error_on_the_receiver(tmp_path):
    dump = tmp_path / "list_aux.pt"
    torch.save(
        {
            "next_token_ids": torch.tensor([5, 6]),
            f"{P}scores": [0.25, 0.75],
            "__msg_type__": "output",
        },
        dump,
    )
    common = [
        str(dump),
        "--transport",
        "torch-distributed",
        "--timeout",
        TIMEOUT,
        "--format",
        "json",
    ]
    result = cli("replay", *common, "--sender", "legacy")
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    (replayed,) = doc["results"]
    assert (replayed["outcome"], replayed["stage"], replayed["error_type"], replayed["error"]) == (
        "error",
        "pop",
        "RuntimeError",
        "received a non-tensor auxiliary PP output",
    )
    run = replayed["payloads"][0]["runs"]["reference"]
    # What the receiver process got: the list, rebuilt from the pickled metadata.
    assert run["received"] == [{"type": "list", "repr": "[0.25, 0.75]", "key": f"{P}scores"}]
    assert run["wire"]["tensors"] == 1 and run["wire"]["tensor_bytes"] == 16
    assert run["wire"]["seconds"] > 0
    assert [f["code"] for f in doc["findings"]] == ["PP401"]

    result = cli("replay", *common)
    assert result.exit_code == 1
    (replayed,) = json.loads(result.stdout)["results"]
    assert (replayed["stage"], replayed["error"]) == (
        "add",
        "auxiliary PP output 'scores' is not a tensor",
    )


def test_every_fixture_agrees_with_the_emulated_wire():
    report = replay_paths(
        ["fixtures/dumps"],
        ReplayOptions(sender=Sender.LEGACY, transport=Transport.TORCH_DISTRIBUTED, timeout_s=30),
    )
    results = {r["path"]: r for r in report.data["results"]}
    problems = {p.path: p.message for p in report.problems}
    for fixture in fixtures.present():
        if not fixture.startswith("dumps/"):
            continue
        expected = fixtures.EXPECTED[fixture][2]  # legacy sender, emulated wire
        path = f"fixtures/{fixture}"
        if expected[0] == "problem":
            assert problems[path] == expected[1]
        else:
            assert fixtures.observed(results[path]) == expected, path
    # A Parameter arrives as a plain tensor without requires_grad, values intact.
    parameter = results["fixtures/dumps/aux_parameter.pt"]["payloads"][0]
    changes = parameter["runs"]["reference"]["changes"]
    assert [c["what"] for c in changes] == ["type", "requires_grad"]


def test_sender_failure_then_recovery_and_raw_baseline():
    with DistributedWire(torch.device("cpu"), timeout_s=30) as wire:
        bad = {f"{P}t": torch.arange(6.0).reshape(2, 3).t(), "next_token_ids": torch.ones(2)}
        with pytest.raises(WireError) as caught:
            wire.exchange(bad, "reference")
        assert (caught.value.side, caught.value.message, caught.value.key) == (
            "sender",
            "input tensor has to be contiguous",
            f"{P}t",
        )
        # A fresh receiver takes over for the next dict.
        big = torch.arange(2**20, dtype=torch.float32)
        info, readded, stats = wire.exchange(
            {f"{P}big": big, "__msg_type__": "output"}, "reference"
        )
        assert info["outcome"] == "ok"
        assert torch.equal(readded[f"{P}big"], big)
        assert (stats.tensors, stats.tensor_bytes) == (1, 4 * 2**20)
        assert wire.raw([big]) > 0


def test_receiver_failure_is_reported_from_the_receiver():
    with DistributedWire(torch.device("cpu"), timeout_s=30) as wire:
        with pytest.raises(WireError) as caught:
            wire.exchange({f"{P}x": ReceiverCannotImport(), "t": torch.ones(1)}, "reference")
        assert caught.value.side == "receiver"
        assert caught.value.error_type == "ModuleNotFoundError"
        assert caught.value.message == "No module named 'test_replay_distributed'"
