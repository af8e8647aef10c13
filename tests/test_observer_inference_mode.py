"""Under ``SGLANG_ENABLE_TORCH_INFERENCE_MODE=1`` sglang 0.5.19 - 0.5.23 run ``event_loop_pp``
in ``torch.inference_mode()`` (``DynamicGradMode``, ``utils/common.py``; default "false"): the
logits its forward makes and the tensors rank 0 receives (``recv_tensor_dict``'s
``torch.empty``, inside the loop) are inference tensors. The check makes its synthetic logits
and rank 0's received tensors the same way, so code that reads what an inference tensor lacks
fails as in sglang, and code that asks whether a tensor is one gets sglang's answer."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from ppaux.observer import ObserverOptions, check_observer

pytestmark = pytest.mark.torch

ONE = ObserverOptions(batch_sizes=(2,), steps=1)

OUTPUT = """\
import torch


class Host:
    def __init__(self, flags):
        self.flags = flags

    def consume(self, batch, commits):
        for req, c in zip(batch.reqs, commits):
            if c is not None:
                req.customized_info = {"flags": self.flags}


class Out:
    def __init__(self, e):
        self.e = e

    def copy_to_host(self, copy_tensor):
        return Host([self.e.is_inference()])

    def to_pp_tensors(self):
        return {"e": self.e}
"""

OBSERVER = """

class Observer:
    def is_active(self, sampling_info):
        return True

    def before_grammar(self, logits, sampling_info):
        {before}
        return logits.float().amax(-1)

    def after_sample(self, state, token_ids):
        return Out(state.clone())

    def from_pp_tensors(self, tensors):
        {rank0}
        return Out(tensors["e"])
"""

VERSION = "(x.data_ptr(), x._version)"


def _target(tmp_path: Path, before: str = "pass", rank0: str = "pass") -> str:
    path = tmp_path / "obs.py"
    path.write_text(OUTPUT + OBSERVER.format(before=before, rank0=rank0), encoding="utf-8")
    return f"{path}:Observer"


def _version_error() -> str:
    """What torch says of an inference tensor's version counter (sglang's rank 0 and
    before_grammar meet it under the variable)."""
    with torch.inference_mode():
        made = torch.empty(2)
    with pytest.raises(RuntimeError) as raised:
        _ = made._version
    return str(raised.value)


@pytest.mark.parametrize("flag", ["1", "true"])
def test_rank0s_received_tensors_are_inference_tensors(tmp_path, monkeypatch, flag):
    monkeypatch.setenv("SGLANG_ENABLE_TORCH_INFERENCE_MODE", flag)
    # Both sides record that what they hold is an inference tensor: no difference.
    assert check_observer(_target(tmp_path), ONE).findings == ()
    rank0 = "x = tensors['e']; " + VERSION
    [found] = check_observer(_target(tmp_path, rank0=rank0), ONE).findings
    assert found.code == "PP710"
    assert found.message.startswith("from_pp_tensors raised RuntimeError: " + _version_error())
    assert "on rank 0" in found.message


def test_the_logits_are_inference_tensors(tmp_path, monkeypatch):
    monkeypatch.setenv("SGLANG_ENABLE_TORCH_INFERENCE_MODE", "1")
    [found] = check_observer(_target(tmp_path, before="x = logits; " + VERSION), ONE).findings
    assert found.code == "PP710"
    assert found.message.startswith("before_grammar raised RuntimeError: " + _version_error())


def test_without_the_variable_nothing_is_an_inference_tensor(tmp_path, monkeypatch):
    monkeypatch.delenv("SGLANG_ENABLE_TORCH_INFERENCE_MODE", raising=False)
    target = _target(tmp_path, "x = logits; " + VERSION, "x = tensors['e']; " + VERSION)
    assert check_observer(target, ONE).findings == ()
