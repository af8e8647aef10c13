"""Replay through a real torch.distributed group: two processes, gloo on 127.0.0.1.

Each test starts one receiver process (a few seconds on a small CPU machine) with short
timeouts; the sender is the test process itself.
"""

from __future__ import annotations

import json
import threading
import time

import pytest
import test_replay_fixtures as fixtures
import torch
from helpers import cli

from ppaux.replay import (
    DistributedWire,
    ReplayConfigError,
    ReplayOptions,
    Sender,
    Transport,
    Wire,
    WireFailure,
    WireSetupError,
    open_wire,
    replay_paths,
)

pytestmark = [pytest.mark.distributed, pytest.mark.usefixtures("in_repo"), pytest.mark.torch]

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
        elif expected[0] == "judged":
            assert path not in results and path not in problems
            assert (path, expected[1]) in {(f.path, f.code) for f in report.findings}
        else:
            assert fixtures.observed(results[path]) == expected, path
    # A Parameter arrives as a plain tensor without requires_grad, values intact.
    parameter = results["fixtures/dumps/aux_parameter.pt"]["payloads"][0]
    changes = parameter["runs"]["reference"]["changes"]
    assert [c["what"] for c in changes] == ["type", "requires_grad"]


def test_sender_failure_then_recovery_and_raw_baseline():
    with DistributedWire(torch.device("cpu"), timeout_s=30) as wire:
        bad = {f"{P}t": torch.arange(6.0)[::2], "next_token_ids": torch.ones(2)}
        failed = wire.exchange(bad, "reference")
        assert failed.reception is None
        assert failed.failure == WireFailure(
            "sender", "RuntimeError", "input tensor has to be contiguous", f"{P}t", True
        )
        # The receiver takes the next dict.
        big = torch.arange(2**20, dtype=torch.float32)
        exchange = wire.exchange({f"{P}big": big, "__msg_type__": "output"}, "reference")
        assert exchange.failure is None and exchange.reception.outcome == "ok"
        assert torch.equal(exchange.readded[f"{P}big"], big)
        assert (exchange.stats.tensors, exchange.stats.tensor_bytes) == (1, 4 * 2**20)
        assert wire.raw([big]) > 0


def test_the_receivers_start_up_is_not_bounded_by_the_transfer_timeout():
    # The receiver imports torch before it joins: seconds of the wall clock, more on a loaded
    # machine. That is not a transfer: a timeout shorter than it still joins and delivers.
    timeout_s = 1.0
    began = time.monotonic()
    with DistributedWire(torch.device("cpu"), timeout_s=timeout_s) as wire:
        delivery = wire.deliver({f"{P}t": torch.arange(4.0), "__msg_type__": "output"})
        took = time.monotonic() - began
        assert delivery.failure is None
        assert torch.equal(delivery.received[f"{P}t"], torch.arange(4.0))
    # What the test is about: the start-up (from before the receiver was started) took longer
    # than the timeout.
    assert took > timeout_s, f"the receiver started and delivered within {took:.2f} s"


def test_a_receiver_that_never_joins_is_a_setting_error_of_the_run(monkeypatch, tmp_path):
    # The receiver starts on first use, inside the run: that it cannot join is said as the
    # transport's setting error (one line on the command line), not as ppaux's own failure.
    def never_joins(self):
        raise WireSetupError("the receiver process did not start and join the group within 1 s")

    monkeypatch.setattr(DistributedWire, "_start", never_joins)
    dump = tmp_path / "clean.pt"
    torch.save({"next_token_ids": torch.tensor([5, 6]), "__msg_type__": "output"}, dump)
    options = ReplayOptions(transport=Transport.TORCH_DISTRIBUTED, timeout_s=30)
    with pytest.raises(ReplayConfigError) as raised:
        replay_paths([str(dump)], options)
    assert (raised.value.option, raised.value.value) == ("transport", "torch-distributed")
    assert "did not start and join the group within 1 s" in str(raised.value)


def test_one_receiver_serves_every_message_whatever_the_sender_refuses():
    """A message the sender refuses (after a dense tensor that would have gone first) leaves
    the receiver waiting for the next message: the same process takes every one."""
    dense = torch.arange(4.0)
    refused = [
        # the one-rank group's reshape refuses a sparse tensor; the quantized one reaches c10d
        ({f"{P}a": dense, f"{P}s": torch.ones(3).to_sparse()}, "RuntimeError", f"{P}s"),
        (
            {
                f"{P}a": dense,
                f"{P}q": torch.quantize_per_tensor(torch.ones(2), 0.5, 0, torch.quint8),
            },
            "NotImplementedError",
            f"{P}q",
        ),
        ({f"{P}a": dense, f"{P}t": torch.ones(6)[::2]}, "RuntimeError", f"{P}t"),
        ({f"{P}a": dense, f"{P}f": threading.Lock()}, "TypeError", None),
    ]
    with DistributedWire(torch.device("cpu"), timeout_s=30) as wire:
        assert wire.exchange({f"{P}a": dense}, "reference").reception.outcome == "ok"
        receiver = wire._process
        for step in range(3):
            for message, error_type, key in refused:
                failure = wire.exchange(message, "reference").failure
                assert (failure.side, failure.error_type, failure.key) == (
                    "sender",
                    error_type,
                    key,
                )
                delivery = wire.deliver({f"{P}a": dense + step, "n": step})
                assert delivery.failure is None
                assert torch.equal(delivery.received[f"{P}a"], dense + step)
                assert delivery.received["n"] == step
        assert wire._process is receiver and receiver.poll() is None
        # The receiver's own failure still names its message.
        failure = wire.exchange({f"{P}x": ReceiverCannotImport()}, "reference").failure
        assert (failure.side, failure.error_type) == ("receiver", "ModuleNotFoundError")


def test_receiver_failure_is_reported_from_the_receiver():
    with DistributedWire(torch.device("cpu"), timeout_s=30) as wire:
        failure = wire.exchange(
            {f"{P}x": ReceiverCannotImport(), "t": torch.ones(1)}, "reference"
        ).failure
        assert failure.side == "receiver"
        assert failure.error_type == "ModuleNotFoundError"
        assert failure.message == "No module named 'test_replay_distributed'"


def test_rank_0_gets_back_what_the_receiving_process_holds():
    """deliver() brings the receiver's dict into this process: tensors rebuilt from their
    device, dtype, shape and bytes (a quantized one too: it has no quantizer and cannot be
    pickled), everything else as the receiver unpickled it."""
    scores = [0.25, {"k": (1, None)}]
    sent = {
        "next_token_ids": torch.tensor([3, 4]),
        f"{P}scores": scores,
        f"{P}t": torch.arange(6.0).reshape(2, 3).t().contiguous(),
        f"{P}empty": torch.empty(0, 2, dtype=torch.float16),
        f"{P}meta": torch.empty(2, 3, device="meta"),
        f"{P}q": torch.quantize_per_tensor(torch.tensor([]), 0.5, 1, torch.quint8),
        "__msg_type__": "output",
    }
    with open_wire(Transport.TORCH_DISTRIBUTED, timeout_s=30) as wire:
        assert isinstance(wire, DistributedWire) and isinstance(wire, Wire)
        delivery = wire.deliver(sent)
        assert delivery.transport == "torch-distributed" and delivery.failure is None
        received = delivery.received
        assert list(received) == list(sent)
        assert received["next_token_ids"].tolist() == [3, 4]
        assert received[f"{P}t"].tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
        assert received[f"{P}scores"] == scores
        assert received[f"{P}empty"].shape == (0, 2)
        assert received[f"{P}empty"].dtype == torch.float16
        assert received[f"{P}meta"].device.type == "meta"
        assert received[f"{P}q"].dtype == torch.quint8 and received[f"{P}q"].is_quantized
        assert received["__msg_type__"] == "output"
        assert (delivery.stats.tensors, delivery.stats.empty) == (2, 3)
        assert delivery.stats.tensor_bytes == 2 * 8 + 6 * 4

        failed = wire.deliver({"x": torch.ones(4)[::2]})
        assert failed.received is None
        assert failed.failure == WireFailure(
            "sender", "RuntimeError", "input tensor has to be contiguous", "x", True
        )
        # The receiver that was left waiting is replaced by a fresh one.
        assert wire.deliver({"x": torch.ones(2)}).received["x"].tolist() == [1.0, 1.0]


_SEND_CONJ = """
import sys, torch, torch.distributed as dist
rank, port = int(sys.argv[1]), sys.argv[2]
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
if rank == 0:
    try:
        dist.send(torch.tensor([1 + 2j, 3 - 1j]).conj(), 1)
        print("sent")
    except RuntimeError as exc:
        print("raised", str(exc).splitlines()[0])
        dist.send(torch.zeros(2, dtype=torch.complex64), 1)
else:
    received = torch.empty(2, dtype=torch.complex64)
    dist.recv(received, 0)
dist.destroy_process_group()
"""


def test_torch_distributed_send_refuses_a_lazy_conjugate_as_the_emulated_wire_does(tmp_path):
    import subprocess
    import sys

    from helpers import free_port

    from ppaux.replay.wire import WireError, transfer

    port = str(free_port())
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _SEND_CONJ, str(rank), port],
            stdout=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
        )
        for rank in (0, 1)
    ]
    outs = [process.communicate(timeout=120)[0] for process in processes]
    refused = (
        "view_as_real doesn't work on unresolved conjugated tensors.  To resolve the conjugate "
        "tensor so you can view it as real, use self.resolve_conj(); however, be warned that "
        "the resulting tensor will NOT alias the original."
    )
    assert outs[0] == f"raised {refused}\n"
    with pytest.raises(WireError) as caught:
        transfer({f"{P}c": torch.tensor([1 + 2j, 3 - 1j]).conj()})
    assert (caught.value.side, caught.value.error_type) == ("sender", "RuntimeError")
    assert caught.value.message == refused


def test_a_negative_view_arrives_as_torch_distributed_send_delivers_it():
    # torch.distributed.send (sglang's send_tensor_dict calls it) goes through c10d's
    # dispatcher, which hands gloo the values a negative view reads: the receiver of
    # torch._neg_view(x) holds -x (seen with torch 2.13's send and recv over an initialised
    # gloo group). Both of ppaux's wires must deliver the same (values written by hand).
    complex_ = torch.complex(torch.tensor([1.0, 2.0]), torch.tensor([3.0, -0.0]))
    sent = {
        f"{P}real": torch._neg_view(torch.tensor([1.0, -2.0, 0.0])),
        f"{P}complex": torch._neg_view(complex_),
        f"{P}imag": complex_.conj().imag[:1],
    }
    expected = {
        f"{P}real": torch.tensor([-1.0, 2.0, -0.0]),
        f"{P}complex": torch.complex(torch.tensor([-1.0, -2.0]), torch.tensor([-3.0, 0.0])),
        f"{P}imag": torch.tensor([-3.0]),
    }
    with open_wire("wire") as emulated, DistributedWire(torch.device("cpu"), timeout_s=30) as real:
        for wire in (emulated, real):
            delivery = wire.deliver(sent)
            assert delivery.failure is None, wire.transport
            for key, value in expected.items():
                got = delivery.received[key]
                assert not got.is_neg(), (wire.transport, key)
                assert torch.equal(_bits(got), _bits(value)), (wire.transport, key)


def _bits(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor's bytes, row-major (a complex one as its real pairs)."""
    real = torch.view_as_real(tensor) if tensor.is_complex() else tensor
    return real.contiguous().view(torch.uint8)
