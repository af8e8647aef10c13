"""The attention-TP group sglang's last stage passes to ``send_tensor_dict``, even of one rank.

sglang tests ``all_gather_group`` for ``None``, not its size: with a group every tensor whose
element count the group's size divides is sent as ``reshape(size, -1)[rank]``, and with one rank
``reshape(1, -1)[0]`` copies a view it cannot keep. Every release's scheduler passes its
attention-TP group by default (the table's ``output_all_gather_group``, checked against the
wheels in ``tests/test_skew_wheels.py``). The expectations below are sglang's own outcomes, run
with its real ``GroupCoordinator`` (``tests/sglang_runtime_driver.py``) and written out by hand;
ppaux's emulated wire must give the same.
"""

from __future__ import annotations

import json

import pytest
import torch
from test_sglang_runtime import RELEASES, run_driver, tensor

from ppaux.replay import ReplayOptions
from ppaux.replay.wire import WireError, transfer
from ppaux.sglang import releases

pytestmark = pytest.mark.torch

P = "__sampling_observer_output__."
GLOO = "input tensor has to be contiguous"
TRANSPOSED = {"dtype": "float32", "values": [1, 2, 3, 4, 5, 6], "shape": [2, 3], "transpose": True}
STRIDED = {"dtype": "float32", "values": [1, 2, 3, 4, 5, 6], "every": 2}
SPARSE = {"dtype": "float32", "values": [1, 0, 0, 1], "shape": [2, 2], "sparse": True}


def _sglang(version, spec, *flags):
    """The report of one message ``{"mat": spec}`` sent by sglang's own wire."""
    message = [["mat", {"tensor": spec}]]
    expect = 0 if spec is TRANSPOSED and flags else 1
    return run_driver(
        version, "transport", "-", *flags, stdin=json.dumps(message), expect_rc=expect
    )


def _sender_error(report):
    (entry,) = report["ranks"]["1"]["messages"]
    return entry.get("error")


@pytest.mark.sglang_runtime
@pytest.mark.parametrize("version", RELEASES)
def test_sglangs_one_rank_group_delivers_a_transposed_view(version):
    report = _sglang(version, TRANSPOSED, "--one-rank-group")
    assert report["ranks"]["0"]["attn_tp_world_size"] == 1
    ((received,),) = [m["received"] for m in report["ranks"]["0"]["messages"]]
    assert received == ["mat", tensor("float32", [3, 2], [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]])]
    # ppaux's wire, as the scheduler sends (its default), and as the driver's no-group send.
    mat = torch.arange(1.0, 7.0).reshape(2, 3).t()
    came, _ = transfer({f"{P}m": mat})
    assert came[f"{P}m"].tolist() == received[1]["values"] and came[f"{P}m"].is_contiguous()
    assert _sender_error(_sglang(version, TRANSPOSED)) == {"type": "RuntimeError", "message": GLOO}
    with pytest.raises(WireError, match=GLOO):
        transfer({f"{P}m": mat}, all_gather_size=0)


@pytest.mark.sglang_runtime
@pytest.mark.parametrize("version", RELEASES)
def test_sglangs_one_rank_group_refuses_what_reshape_keeps_a_view(version):
    report = _sglang(version, STRIDED, "--one-rank-group")
    assert _sender_error(report) == {"type": "RuntimeError", "message": GLOO}
    with pytest.raises(WireError, match=GLOO):
        transfer({f"{P}m": torch.arange(1.0, 7.0)[::2]})


@pytest.mark.sglang_runtime
@pytest.mark.parametrize("version", RELEASES)
def test_sglangs_one_rank_group_reshapes_a_sparse_tensor_first(version):
    error = _sender_error(_sglang(version, SPARSE, "--one-rank-group"))
    assert error["type"] == "RuntimeError"
    assert error["message"].startswith("reshape is not implemented for sparse tensors")
    with pytest.raises(WireError) as caught:
        transfer({f"{P}m": torch.eye(2).to_sparse()})
    assert (caught.value.error_type, caught.value.message) == (
        "RuntimeError",
        "reshape is not implemented for sparse tensors",
    )


def test_the_default_wire_sends_as_every_release_does():
    # Replay and check-observer send with a one-rank group (all_gather 1) by default, because
    # every release with the auxiliary transport passes one in its default setup.
    with_transport = [v for v in releases.release_versions() if releases.family_of(v).transport]
    assert with_transport == ["0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23"]
    assert all(releases.output_group(v) for v in with_transport)
    assert ReplayOptions().all_gather == 1


KEPT_LOGITS = """
import torch

class Host:
    def __init__(self, t):
        self.t = t
    def consume(self, batch, commits):
        for req, commit, row in zip(batch.reqs, commits, self.t.tolist()):
            if commit is not None:
                req.customized_info = {"kept": row}

class Out:
    def __init__(self, t):
        self.t = t
    def copy_to_host(self, copy_tensor):
        return Host(copy_tensor(self.t))
    def to_pp_tensors(self):
        return {"kept": self.t}

class Columns:
    # the first two vocabulary entries of each request: a view with strides (V, 1)
    def is_active(self, sampling_info):
        return True
    def before_grammar(self, logits, sampling_info):
        return logits
    def after_sample(self, logits, token_ids):
        return Out(logits[:, :2])
    def from_pp_tensors(self, tensors):
        return Out(tensors["kept"])

class EveryOther(Columns):
    # every other entry of each request's logits, one row per request: stride 2 in the last
    # dimension, which reshape(1, -1) keeps as a view
    def after_sample(self, logits, token_ids):
        return Out(logits.reshape(-1)[::2].reshape(-1)[: logits.shape[0]])
"""


def test_check_observer_delivers_a_view_the_group_copies(tmp_path):
    from ppaux.observer import ObserverOptions, check_observer

    file = tmp_path / "kept_logits.py"
    file.write_text(KEPT_LOGITS, encoding="utf-8")
    options = ObserverOptions(batch_sizes=(4,), steps=1)
    assert [f.code for f in check_observer(f"{file}:Columns", options).findings] == []
    refused = [f for f in check_observer(f"{file}:EveryOther", options).findings]
    assert [f.code for f in refused] == ["PP709"]
    assert GLOO in refused[0].message
