"""A check's cost per step does not grow with the steps before it: the requests' lists that
``consume`` appends to are described from where the last step's description ended (counted
work, not time), and what that leaves out (an item changed in place) is still compared."""

from __future__ import annotations

import types

import pytest
from helpers import REPO
from hypothesis import given, settings
from hypothesis import strategies as st

import ppaux.observer.compare as compare
from ppaux.observer import ObserverOptions
from ppaux.observer.check import check_loaded
from ppaux.observer.growth import RequestWalk
from ppaux.observer.target import load_observer

pytestmark = pytest.mark.torch

GOOD = REPO / "fixtures" / "observers" / "entropy_good.py"


def described(monkeypatch, target: str, steps: int) -> tuple[int, list[str]]:
    """How many leaves a check of ``steps`` steps (batch size 2) described, and its codes."""
    count = [0]
    plain = compare.record

    def counted(value):
        count[0] += 1
        return plain(value)

    monkeypatch.setattr(compare, "record", counted)
    loaded = load_observer(target)
    report = check_loaded(loaded, ObserverOptions(batch_sizes=(2,), steps=steps))
    monkeypatch.setattr(compare, "record", plain)
    return count[0], [item.code for item in report.findings]


def test_each_step_describes_as_much_whatever_came_before(monkeypatch):
    # consume appends one value per step to each request: with every request described
    # whole at every step, the leaves described grow with the square of the steps.
    counts = {}
    for steps in (10, 20, 30):
        counts[steps], codes = described(monkeypatch, f"{GOOD}:EntropyObserver", steps)
        assert codes == []
    assert counts[30] - counts[20] == counts[20] - counts[10], counts


REWRITE = """
import torch


class Host:
    def __init__(self, value):
        self.value = value

    def consume(self, batch, commits):
        for req, value in zip(batch.reqs, self.value.tolist(), strict=False):
            if req.customized_info is None:
                req.customized_info = {"latest": [0.0]}
            req.customized_info["latest"][0] = value  # the same list, changed in place


class Out:
    def __init__(self, value):
        self.value = value

    def copy_to_host(self, copy_tensor):
        return Host(copy_tensor(self.value))

    def to_pp_tensors(self):
        return {"value": self.value}


class Obs:
    calls = 0

    def is_active(self, sampling_info):
        return True

    def before_grammar(self, logits, sampling_info):
        return logits

    def after_sample(self, state, token_ids):
        return Out(state[:, 0].float().clone())

    def from_pp_tensors(self, tensors):
        type(self).calls += 1
        value = tensors["value"]
        return Out(value + 1 if type(self).calls >= 2 else value)  # from the second step on
"""


def test_an_item_changed_in_place_is_still_compared(tmp_path, monkeypatch):
    (tmp_path / "rewrite.py").write_text(REWRITE, encoding="utf-8")
    _, codes = described(monkeypatch, f"{tmp_path / 'rewrite.py'}:Obs", 3)
    assert "PP712" in codes, codes


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), max_size=4),
            st.sampled_from(["keep", "copy single", "copy pp", "copy both"]),
        ),
        max_size=12,
    )
)
def test_step_records_find_every_difference_the_whole_records_do(history):
    # Two requests whose list grows by appends (and is now and then replaced by a copy of
    # itself, on one side or both): the differences the steps' records show are those of the
    # requests described whole at the end, neither fewer nor more.
    single, pp = types.SimpleNamespace(values=[]), types.SimpleNamespace(values=[])
    walk = RequestWalk(lambda view, skip: compare.records(view, skip))
    seen: set[str] = set()
    for appended, replace in history:
        for left, right in appended:
            single.values.append(left)
            pp.values.append(right)
        if replace in ("copy single", "copy both"):
            single.values = list(single.values)
        if replace in ("copy pp", "copy both"):
            pp.values = list(pp.values)
        [a], [b] = walk.step([single], [pp])
        seen |= {item.path for item in compare.differences(a, b)}
    whole = compare.differences(compare.records(single), compare.records(pp))
    assert seen == {item.path for item in whole}
