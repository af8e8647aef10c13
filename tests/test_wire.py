"""The in-process wire does to a dict what sglang's send/recv_tensor_dict do (0.5.19 - 0.5.23)."""

from __future__ import annotations

import warnings

import pytest
import torch

from ppaux.replay.roundtrip import compare
from ppaux.replay.wire import TensorMetadata, WireError, split_tensor_dict, transfer

pytestmark = pytest.mark.torch

P = "__sampling_observer_output__."


def test_non_tensors_travel_pickled_and_tensors_are_rebuilt():
    scores = [0.25, {"k": (1, None)}]
    sent = {
        "next_token_ids": torch.tensor([3, 4]),
        f"{P}scores": scores,
        "none": None,
        f"{P}empty": torch.empty(0, 2),
        "__msg_type__": "output",
    }
    received, stats = transfer(sent)
    assert list(received) == list(sent)
    assert received[f"{P}scores"] == scores and received[f"{P}scores"] is not scores
    assert received["none"] is None and received["__msg_type__"] == "output"
    assert torch.equal(received["next_token_ids"], sent["next_token_ids"])
    assert received["next_token_ids"] is not sent["next_token_ids"]
    assert received[f"{P}empty"].shape == (0, 2)
    assert (stats.tensors, stats.empty, stats.tensor_bytes) == (1, 1, 16)
    assert stats.metadata_bytes > 0


def test_split_matches_sglangs_metadata():
    metadata, tensors = split_tensor_dict({"a": torch.ones(2, 3, dtype=torch.bfloat16), "b": [1]})
    assert metadata == [
        ("a", TensorMetadata("cpu", torch.bfloat16, torch.Size([2, 3]))),
        ("b", [1]),
    ]
    assert len(tensors) == 1


def test_subclass_strides_and_grad_are_not_kept():
    parameter = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    received, _ = transfer({f"{P}p": parameter})
    came = received[f"{P}p"]
    assert type(came) is torch.Tensor and not came.requires_grad
    mismatches, changes = compare({f"{P}p": parameter}, received)
    assert mismatches == []
    assert [c["what"] for c in changes] == ["type", "requires_grad"]


@pytest.mark.parametrize(
    "make, all_gather_size",
    [
        # No group (0.5.19 with DSA prefill context parallel): nothing copies the view.
        (lambda: torch.arange(6.0).reshape(2, 3).t(), 0),
        (lambda: torch.arange(6.0)[::2], 0),
        # The scheduler's one-rank group: reshape(1, -1)[0] keeps a strided 1-D view a view.
        (lambda: torch.arange(6.0)[::2], 1),
    ],
)
def test_what_gloo_refuses(make, all_gather_size):
    side, error_type, message = "sender", "RuntimeError", "input tensor has to be contiguous"
    with pytest.raises(WireError) as caught:
        transfer(
            {"next_token_ids": torch.ones(2), f"{P}x": make()}, all_gather_size=all_gather_size
        )
    assert (caught.value.side, caught.value.error_type, caught.value.message, caught.value.key) == (
        side,
        error_type,
        message,
        f"{P}x",
    )
    assert caught.value.metadata_sent


@pytest.mark.parametrize(
    "make, backend",
    [
        (lambda: torch.eye(2).to_sparse(), "SparseCPU"),
        (lambda: torch.quantize_per_tensor(torch.ones(4), 0.5, 0, torch.quint8), "QuantizedCPU"),
    ],
)
def test_what_torchs_dispatcher_refuses(make, backend):
    # sglang's real send_tensor_dict without a group fails this way on the sender (0.5.19,
    # 0.5.23, torch 2.13): c10d's send has no kernel for sparse or quantized tensors.
    with pytest.raises(WireError) as caught:
        transfer({"next_token_ids": torch.ones(2), f"{P}x": make()}, all_gather_size=0)
    error = caught.value
    assert (error.side, error.error_type, error.key) == ("sender", "NotImplementedError", f"{P}x")
    assert error.message.startswith(
        f"Could not run 'c10d::send' with arguments from the '{backend}' backend. This could be "
        "because the operator doesn't exist for this backend"
    )
    assert error.metadata_sent


def test_a_sparse_tensor_stops_at_the_groups_reshape():
    # With the scheduler's one-rank group, sglang reshapes before it sends; torch refuses that
    # for a sparse tensor, on the sender, after the metadata went out.
    with pytest.raises(WireError) as caught:
        transfer({"next_token_ids": torch.ones(2), f"{P}x": torch.eye(2).to_sparse()})
    error = caught.value
    assert (error.side, error.error_type, error.message, error.key, error.metadata_sent) == (
        "sender",
        "RuntimeError",
        "reshape is not implemented for sparse tensors",
        f"{P}x",
        True,
    )


def test_a_meta_tensor_arrives_as_a_meta_tensor():
    # Nothing is sent for it: the receiver allocates a meta tensor of the same size and dtype.
    received, stats = transfer({f"{P}m": torch.empty(2, 3, dtype=torch.float16, device="meta")})
    came = received[f"{P}m"]
    assert (came.device.type, came.dtype, tuple(came.shape)) == ("meta", torch.float16, (2, 3))
    assert (stats.tensors, stats.tensor_bytes) == (0, 0)


def test_nested_tensor_fails_before_anything_is_sent():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # nested tensors are a prototype API
        nested = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])
    with pytest.raises(WireError) as caught:
        transfer({f"{P}n": nested})
    assert caught.value.side == "sender" and not caught.value.metadata_sent
    assert (
        caught.value.message == "Internal error: NestedTensorImpl doesn't support sizes. "
        "Please file an issue."
    )


@pytest.mark.parametrize(
    "make, values",
    [
        (lambda: torch.arange(6.0).reshape(2, 3).t(), [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]),
        (lambda: torch.arange(12.0).reshape(3, 4)[:, :2], [[0.0, 1.0], [4.0, 5.0], [8.0, 9.0]]),
        (lambda: torch.arange(3.0).expand(2, 3), [[0.0, 1.0, 2.0], [0.0, 1.0, 2.0]]),
    ],
)
def test_a_one_rank_group_copies_a_view_it_cannot_keep(make, values):
    # The default wire sends as sglang's scheduler does, with its one-rank attention-TP group.
    received, _ = transfer({f"{P}x": make()})
    assert received[f"{P}x"].tolist() == values and received[f"{P}x"].is_contiguous()


def test_all_gather_slices_and_gathers_back():
    values = torch.arange(12.0).reshape(3, 4).t()  # not contiguous, 12 elements
    received, stats = transfer({f"{P}v": values}, all_gather_size=3)
    assert torch.equal(received[f"{P}v"], values) and received[f"{P}v"].is_contiguous()
    assert stats.tensor_bytes == 48
    # An element count the group size does not divide falls back to a plain send.
    with pytest.raises(WireError):
        transfer({f"{P}v": values}, all_gather_size=5)


def test_compare_is_bit_for_bit():
    sent = {f"{P}x": torch.tensor([0.0, float("nan"), 1.0])}
    # -0.0 == 0.0 and NaN payloads: equal to torch.equal's eyes or not, the bits differ.
    other_nan = torch.tensor([0.0, 0.0, 1.0]).view(torch.int32)
    other_nan[1] = 0x7FC00001
    cases = {
        "zero": torch.tensor([-0.0, float("nan"), 1.0]),
        "nan": other_nan.view(torch.float32),
    }
    for name, came in cases.items():
        (mismatch,) = compare(sent, {f"{P}x": came})[0]
        assert mismatch["what"] == "bits", name
        assert mismatch["detail"] == (
            f"1 of 3 elements differ bit for bit (first at flat index {0 if name == 'zero' else 1})"
        )
    assert compare(sent, {f"{P}x": sent[f"{P}x"].clone()}) == ([], [])
    missing, _ = compare(sent, {})
    assert missing == [
        {
            "key": f"{P}x",
            "what": "missing",
            "detail": "not given back by pop and add",
            "sent": None,
            "received": None,
        }
    ]


class _Named(str):
    """A str subclass: what a command-line library may hand over in place of an enum member."""


def test_every_in_process_wire_follows_the_protocol():
    from ppaux.replay import EmulatedWire, NoWire, Wire, open_wire

    scores = [0.25, 0.5]
    sent = {"next_token_ids": torch.tensor([1, 2]), f"{P}scores": scores, f"{P}x": torch.ones(3)}
    with open_wire("none") as none, open_wire(_Named("wire")) as wire:
        assert isinstance(none, NoWire) and isinstance(wire, EmulatedWire)
        assert isinstance(none, Wire) and isinstance(wire, Wire)
        as_sent = none.deliver(sent)
        # No wire: rank 0 holds the very dict the last stage sent.
        assert as_sent.received is sent and as_sent.stats is None and as_sent.failure is None
        emulated = wire.deliver(sent)
        assert emulated.transport == "wire" and emulated.failure is None
        assert emulated.received[f"{P}scores"] == scores
        assert emulated.received[f"{P}scores"] is not scores
        assert emulated.received[f"{P}x"].tolist() == [1.0, 1.0, 1.0]
        assert (emulated.stats.tensors, emulated.stats.tensor_bytes) == (2, 2 * 8 + 3 * 4)

        # Rank 0's pop meets the list on both: reference pop raises sglang's message.
        for each in (none, wire):
            exchange = each.exchange(sent, "reference")
            assert exchange.reception.outcome == "error"
            assert exchange.reception.stage == "pop"
            assert exchange.reception.error == "received a non-tensor auxiliary PP output"
            assert exchange.readded is None


def test_a_wire_failure_is_data_not_an_exception():
    from ppaux.replay import WireFailure, open_wire

    with open_wire("wire") as wire:
        delivery = wire.deliver({f"{P}t": torch.arange(6.0)[::2]})
        exchange = wire.exchange({f"{P}t": torch.arange(6.0)[::2]}, "reference")
    expected = WireFailure(
        "sender", "RuntimeError", "input tensor has to be contiguous", f"{P}t", True
    )
    assert delivery.received is None and delivery.failure == expected
    assert exchange.reception is None and exchange.failure == expected
    assert expected.to_json() == {
        "side": "sender",
        "error_type": "RuntimeError",
        "message": "input tensor has to be contiguous",
        "key": f"{P}t",
        "metadata_sent": True,
    }


def test_open_wire_refuses_an_unknown_transport():
    from ppaux.replay import open_wire

    with pytest.raises(ValueError, match=r"^carrier-pigeon: not a transport"):
        open_wire("carrier-pigeon")


#: Run in a process of a prepared runtime: sglang's own GroupCoordinator carries the dict.
_SGLANG_DELIVERY = """
import json, sys, torch
from ppaux.replay import open_wire
P = "__sampling_observer_output__."
sent = {
    "next_token_ids": torch.tensor([3, 4]),
    P + "scores": [0.25, 0.5],
    P + "x": torch.arange(6.0).reshape(2, 3),
    P + "empty": torch.empty(0, 2),
}
with open_wire("sglang", sglang_path=sys.argv[1], timeout_s=120) as wire:
    d = wire.deliver(sent)
    view = wire.deliver({P + "t": torch.arange(6.0).reshape(2, 3).t()})
    bad = wire.deliver({P + "t": torch.arange(6.0)[::2]})
with open_wire("sglang", sglang_path=sys.argv[1], timeout_s=120, all_gather=0) as wire:
    none = wire.deliver({P + "t": torch.arange(6.0).reshape(2, 3).t()})
print(json.dumps({
    "failure": d.failure,
    "received": {
        k: [str(v.dtype), list(v.shape), v.tolist()] if torch.is_tensor(v) else v
        for k, v in d.received.items()
    },
    "bad": [bad.received, bad.failure.side, bad.failure.error_type, bad.failure.message],
    "view": [view.failure, view.received[P + "t"].tolist(), view.received[P + "t"].is_contiguous()],
    "none": [none.received, none.failure.side, none.failure.message],
}))
"""


@pytest.mark.sglang_runtime
@pytest.mark.parametrize("version", ["0.5.19", "0.5.23"])
def test_sglangs_own_wire_delivers_through_the_protocol(version):
    import json

    import runtime_zygote
    import sglang_runtime
    from helpers import clean_environ

    # Forked from the release's zygote, ppaux's receivers too (tests/runtime_zygote.py): what is
    # checked is the wire, not an interpreter's start; the tree comes from sglang_path alone.
    runtime = sglang_runtime.sglang_runtime(version)
    done = runtime_zygote.run(
        version,
        ["-c", _SGLANG_DELIVERY, str(runtime.sglang_dir)],
        runtime.packages_env(clean_environ()),
        timeout=600,
        zygote_env=runtime.env(clean_environ()),
        helpers_forked=True,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["failure"] is None
    assert report["received"] == {
        "next_token_ids": ["torch.int64", [2], [3, 4]],
        f"{P}scores": [0.25, 0.5],
        f"{P}x": ["torch.float32", [2, 3], [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]],
        f"{P}empty": ["torch.float32", [0, 2], []],
    }
    # With the one-rank group sglang's reshape(1, -1)[0] copies a transposed view: it arrives.
    assert report["view"] == [None, [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]], True]
    # gloo refuses, inside sglang's own send, on the sender: a strided view the reshape keeps,
    # and, with no group, the transposed one.
    assert report["bad"] == [None, "sender", "RuntimeError", "input tensor has to be contiguous"]
    assert report["none"] == [None, "sender", "input tensor has to be contiguous"]


def test_a_negative_view_arrives_as_the_values_it_reads():
    # gloo delivers torch._neg_view(x) as -x (checked with torch 2.13's send and recv): the
    # values the view reads travel, no bit with them
    stored = torch.tensor([1.0, -2.0, 3.0])
    sent = {f"{P}n": torch._neg_view(stored)}
    received, stats = transfer(sent)
    assert received[f"{P}n"].tolist() == [-1.0, 2.0, -3.0]
    assert not received[f"{P}n"].is_neg()
    assert stats.tensors == 1
    assert compare(sent, received) == ([], [])


#: What torch.distributed.send raises for a lazy conjugate (torch 2.13, gloo; see
#: tests/test_replay_distributed.py), first line.
CONJ_REFUSED = (
    "view_as_real doesn't work on unresolved conjugated tensors.  To resolve the conjugate "
    "tensor so you can view it as real, use self.resolve_conj(); however, be warned that the "
    "resulting tensor will NOT alias the original."
)


def test_a_lazy_conjugate_is_refused_on_the_sender_as_torch_distributed_send_refuses_it():
    sent = {f"{P}c": torch.tensor([1 + 2j, 3 - 1j]).conj()}
    with pytest.raises(WireError) as caught:
        transfer(sent)
    error = caught.value
    assert (error.side, error.error_type, error.message) == ("sender", "RuntimeError", CONJ_REFUSED)
    assert error.key == f"{P}c"
    # Resolved, it travels with the values it reads.
    received, _ = transfer({f"{P}c": sent[f"{P}c"].resolve_conj()})
    assert received[f"{P}c"].tolist() == [1 - 2j, 3 + 1j]


def test_compare_reads_a_view_by_the_values_it_reads():
    # A negative view equals the tensor holding the negated values, bit for bit.
    view = torch._neg_view(torch.tensor([1.0, 0.0]))
    assert compare({f"{P}x": view}, {f"{P}x": torch.tensor([-1.0, -0.0])}) == ([], [])
    conj = torch.tensor([1 + 2j]).conj()
    assert compare({f"{P}x": conj}, {f"{P}x": torch.tensor([1 - 2j])}) == ([], [])
