"""check-observer runs the target's hooks as sglang's scheduler runs them, and blames the target
only for what sglang would fail on.

- Grad mode: sglang 0.5.19 and 0.5.23 run ``event_loop_pp`` under ``DynamicGradMode()``
  (``scheduler_pp_mixin.py``), which turns grad off (``torch.set_grad_enabled(False)``) unless
  ``SGLANG_ENABLE_TORCH_INFERENCE_MODE`` is set (``utils/common.py``, default "false"), so an
  observer whose output requires grad is read as a plain tensor there, and one that calls
  ``torch.autograd.grad`` fails there.
- ``is_active`` is called in sglang as ``observer.is_active(info)`` in a truth test: a tensor of
  several values raises there, in the target's ``is_active``.
- A tensor of a dtype torch cannot read as numbers (``float4_e2m1fn_x2``, ``bits8``) crosses
  the wire as its bytes, and is described from them.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

from ppaux.observer import ObserverOptions, check_loaded, load_observer

pytestmark = pytest.mark.torch

ONE = ObserverOptions(batch_sizes=(2,), steps=1)

OUT = """
import torch

class Host:
    def __init__(self, value):
        self.value = value

    def consume(self, batch, commits):
        values = self.value.numpy().tolist() if self.value.dim() else []
        for req, commit, value in zip(batch.reqs, commits, values, strict=False):
            if commit is not None:
                req.customized_info = {"v": [repr(value)]}

class Out:
    def __init__(self, value):
        self.value = value

    def copy_to_host(self, copy_tensor):
        return Host(copy_tensor(self.value))

    def to_pp_tensors(self):
        return {"v": self.value}
"""


def _observer(tmp_path: Path, body: str) -> str:
    path = tmp_path / "observer_under_test.py"
    path.write_text(OUT + textwrap.dedent(body), encoding="utf-8")
    return f"{path}:O"


def _findings(tmp_path: Path, body: str) -> list[tuple[str, str]]:
    report = check_loaded(load_observer(_observer(tmp_path, body)), ONE)
    return [(f.code, f.message) for f in report.findings]


GRAD_ON_STATE = """
W = torch.nn.Parameter(torch.ones(1))

class O:
    def is_active(self, info):
        return True

    def before_grammar(self, logits, info):
        return logits.float().amax(-1) * W

    def after_sample(self, state, token_ids):
        return Out(state)

    def from_pp_tensors(self, tensors):
        return Out(tensors["v"])
"""


def test_a_state_made_from_a_parameter_is_plain_as_under_sglangs_no_grad(tmp_path):
    # Under torch.set_grad_enabled(False) the product does not require grad: numpy() works.
    with torch.no_grad():
        assert not (torch.ones(2) * torch.nn.Parameter(torch.ones(1))).requires_grad
    assert _findings(tmp_path, GRAD_ON_STATE) == []


AUTOGRAD = """
class O:
    def is_active(self, info):
        return True

    def before_grammar(self, logits, info):
        x = logits.float().detach().requires_grad_()
        (g,) = torch.autograd.grad(torch.logsumexp(x, -1).sum(), x)
        return g.amax(-1)

    def after_sample(self, state, token_ids):
        return Out(state)

    def from_pp_tensors(self, tensors):
        return Out(tensors["v"])
"""


def test_autograd_in_a_hook_fails_as_under_sglangs_no_grad(tmp_path):
    with torch.no_grad(), pytest.raises(RuntimeError):
        x = torch.ones(2).requires_grad_()
        torch.autograd.grad(x.sum() * 2, x)
    found = _findings(tmp_path, AUTOGRAD)
    assert [code for code, _ in found] == ["PP710"], found
    assert "before_grammar" in found[0][1]


def test_the_grad_mode_is_restored_after_the_check(tmp_path):
    assert torch.is_grad_enabled()
    _findings(tmp_path, GRAD_ON_STATE)
    assert torch.is_grad_enabled()


IS_ACTIVE_TENSOR = """
class O:
    def is_active(self, info):
        return info.top_ks > 0

    def before_grammar(self, logits, info):
        return logits.float().amax(-1)

    def after_sample(self, state, token_ids):
        return Out(state)

    def from_pp_tensors(self, tensors):
        return Out(tensors["v"])
"""


def test_is_active_giving_a_tensor_of_several_values_is_is_actives_failure(tmp_path):
    with pytest.raises(RuntimeError):
        bool(torch.ones(2) > 0)
    found = _findings(tmp_path, IS_ACTIVE_TENSOR)
    assert [code for code, _ in found] == ["PP710"], found
    assert "is_active" in found[0][1]


BYTES_ONLY = """
import torch

class O:
    def is_active(self, info):
        return True

    def before_grammar(self, logits, info):
        return logits.shape[0]

    def after_sample(self, rows, token_ids):
        return Out(torch.zeros(rows, 1, dtype=torch.{dtype}))

    def from_pp_tensors(self, tensors):
        return Out(tensors["v"])
"""

HOST_BYTES = """
class Host:
    def __init__(self, value):
        self.value = value

    def consume(self, batch, commits):
        pass
"""


@pytest.mark.parametrize("dtype", ["float4_e2m1fn_x2", "bits8"])
def test_a_tensor_torch_cannot_read_as_numbers_is_described_from_its_bytes(tmp_path, dtype):
    with pytest.raises(RuntimeError):
        torch.zeros(2, 1, dtype=getattr(torch, dtype)).tolist()
    assert _findings(tmp_path, HOST_BYTES + BYTES_ONLY.replace("{dtype}", dtype)) == []


READS_FIELDS = """
class Reads(Host):
    def consume(self, batch, commits):
        seen = (batch.return_logprob, batch.top_logprobs_nums, batch.sampling_info.vocab_size)
        for req, commit in zip(batch.reqs, commits, strict=False):
            if commit is not None:
                kept = (req.lora_id, req.grammar is None, req.multimodal_inputs is None)
                req.customized_info = {"v": [repr((seen, kept))]}

class O:
    def is_active(self, info):
        return info.rids_int is None and not any(info.return_sampling_masks)

    def before_grammar(self, logits, info):
        return logits.float().amax(-1)

    def after_sample(self, state, token_ids):
        return Out(state)

    def from_pp_tensors(self, tensors):
        return Out(tensors["v"])

Out.copy_to_host = lambda self, copy_tensor: Reads(copy_tensor(self.value))
"""


def test_the_fields_sglang_always_sets_are_there_for_consume_and_the_hooks(tmp_path):
    # sglang 0.5.19 - 0.5.23: Req(lora_id=None), grammar and multimodal_inputs None,
    # return_sampling_mask False; ScheduleBatch.return_logprob False, top_logprobs_nums None
    # without logprobs, sampling_info set; SamplingBatchInfo.rids_int None.
    report = check_loaded(load_observer(_observer(tmp_path, READS_FIELDS)), ONE)
    assert [(f.code, f.message) for f in report.findings] == []
    assert report.data["steps"], report.data


LOCKED = """
import threading

class O:
    def __init__(self):
        self.lock = threading.Lock()

    def is_active(self, info):
        return True

    def before_grammar(self, logits, info):
        return logits.float().amax(-1)

    def after_sample(self, state, token_ids):
        return Out(state)

    def from_pp_tensors(self, tensors):
        return Out(tensors["v"])
"""


def test_a_check_in_hand_that_cannot_fork_says_rank_0_was_not_apart_and_why(tmp_path, monkeypatch):
    import copy
    import importlib.util
    import os
    import threading

    with pytest.raises(TypeError):
        copy.deepcopy(threading.Lock())
    path = Path(_observer(tmp_path, LOCKED).rpartition(":")[0])
    spec = importlib.util.spec_from_file_location("locked_observer_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from ppaux.observer import observer_report

    # Where it can fork, rank 0's side runs in a forked copy: nothing to note.
    forked = observer_report(module.O(), ONE, None)
    assert not [n for n in forked.notes if "rank 0's side ran in this process" in n]
    monkeypatch.delattr(os, "fork")
    report = observer_report(module.O(), ONE, None)
    [note] = [n for n in report.notes if "rank 0's side ran in this process" in n]
    assert "cannot be deep-copied (TypeError" in note
    assert "assert_pp_safe('module:attr')" in note
    # A class in hand gives rank 0 an instance of its own, but still in this process.
    plain = observer_report(module.O.__mro__[0], ONE, None)
    [note] = [n for n in plain.notes if "rank 0's side ran in this process" in n]
    assert "very instance" not in note
