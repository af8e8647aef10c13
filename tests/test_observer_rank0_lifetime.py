"""Rank 0's observer is one instance for the whole check, as the last stage's is: in sglang
rank 0 pops with ``tp_worker.model_runner.sampling_observer`` (``scheduler_pp_mixin``, 0.5.19
and 0.5.23), the one observer its model runner holds for the server's life, which sees every
batch size the server runs. An observer whose rank 0 keeps state from one batch to the next
fails or passes as it would there, by the CLI's path and in hand alike."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch  # noqa: F401  (the check drives torch)

from ppaux.observer import ObserverOptions, check_observer
from ppaux.testing import assert_pp_safe

pytestmark = pytest.mark.torch

OUTPUT = """\
import torch


class Host:
    def __init__(self, e, seq):
        self.e, self.seq = e, seq

    def consume(self, batch, commits):
        for req, c in zip(batch.reqs, commits):
            if c is not None:
                req.customized_info = req.customized_info or {}
                req.customized_info.setdefault("seq", []).append(self.seq)


class Out:
    def __init__(self, e, seq=0):
        self.e, self.seq = e, seq

    def copy_to_host(self, copy_tensor):
        return Host(copy_tensor(self.e), self.seq)

    def to_pp_tensors(self):
        return {"e": self.e}
"""

#: Rank 0 stages what it receives in a buffer sized on the first message: a batch larger
#: than the first overflows it on the one rank-0 observer sglang keeps.
STAGING = (
    OUTPUT
    + """

class Observer:
    def __init__(self):
        self.buf = None

    def is_active(self, sampling_info):
        return True

    def before_grammar(self, logits, sampling_info):
        return logits.float().amax(-1)

    def after_sample(self, state, token_ids):
        return Out(state.clone())

    def from_pp_tensors(self, tensors):
        e = tensors["e"]
        if self.buf is None:
            self.buf = torch.empty_like(e)
        self.buf[: e.shape[0]].copy_(e)
        return Out(self.buf[: e.shape[0]].clone())
"""
)

#: Both sides number the forwards they see: the last stage and rank 0 see the same ones,
#: so the numbers agree at every step of every batch size.
COUNTING = (
    OUTPUT
    + """

class Observer:
    def __init__(self):
        self.n = 0

    def is_active(self, sampling_info):
        return True

    def before_grammar(self, logits, sampling_info):
        return logits.float().amax(-1)

    def after_sample(self, state, token_ids):
        self.n += 1
        return Out(state.clone(), self.n)

    def from_pp_tensors(self, tensors):
        self.n += 1
        return Out(tensors["e"], self.n)
"""
)

SIZES = ObserverOptions(batch_sizes=(1, 4), steps=2)
OVERFLOW = "output with shape [1] doesn't match the broadcast shape [4]"


def _file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "obs.py"
    path.write_text(text, encoding="utf-8")
    return f"{path}:Observer"


def test_rank0s_state_from_the_first_batch_size_meets_the_next(tmp_path):
    report = check_observer(_file(tmp_path, STAGING), SIZES)
    [found] = report.findings
    assert found.code == "PP710"
    assert OVERFLOW in found.message
    assert "(batch size 4, step 0)" in found.message


def test_in_hand_rank0_keeps_its_observer_too(tmp_path):
    import importlib.util

    path = tmp_path / "staging.py"
    path.write_text(STAGING, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("staging_obs", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for observer in (module.Observer, module.Observer()):
        with pytest.raises(AssertionError, match="PP710") as raised:
            assert_pp_safe(observer, batch_sizes=(1, 4), steps=2)
        assert OVERFLOW in str(raised.value)


def test_both_sides_counting_their_forwards_agree_across_batch_sizes(tmp_path):
    report = check_observer(_file(tmp_path, COUNTING), SIZES)
    assert [f.code for f in report.findings] == []


@pytest.mark.wheels
def test_sglangs_own_pop_overflows_the_same_way(tmp_path):
    wheel = pytest.importorskip("wheels").sglang_wheel("0.5.23")
    options = ObserverOptions(batch_sizes=(1, 4), steps=2, impl="sglang", sglang_path=str(wheel))
    report = check_observer(_file(tmp_path, STAGING), options)
    [found] = report.findings
    assert found.code == "PP710"
    assert OVERFLOW in found.message
