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

    def counted(value, *rest):
        count[0] += 1
        return plain(value, *rest)

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


REBUILD = """
import torch


class Host:
    def __init__(self, value):
        self.value = value

    def consume(self, batch, commits):
        for req, value in zip(batch.reqs, self.value.tolist(), strict=False):
            if req.customized_info is None:
                req.customized_info = {"v": []}
            # A new list each step: the old one's items, then one more.
            req.customized_info = {"v": req.customized_info["v"] + [value]}


class Out:
    def __init__(self, value):
        self.value = value

    def copy_to_host(self, copy_tensor):
        return Host(copy_tensor(self.value))

    def to_pp_tensors(self):
        return {"value": self.value}


class Obs:
    def is_active(self, sampling_info):
        return True

    def before_grammar(self, logits, sampling_info):
        return logits

    def after_sample(self, state, token_ids):
        return Out(state[:, 0].float().clone())

    def from_pp_tensors(self, tensors):
        return Out(tensors["value"])
"""


def test_a_list_rebuilt_each_step_is_described_from_where_it_was(tmp_path, monkeypatch):
    # consume replaces each request's list by a new one holding the old one's items and one
    # more: each step still describes as much as the one before, not the whole list again.
    # Counted: the leaves described, and the values asked about (whether each is the one
    # seen at the last step: a step that asked about every item would cost as much).
    import ppaux.observer.growth as growth

    asked = [0]
    plain = growth._Same.__call__

    def counted(self, path, value):
        asked[0] += 1
        return plain(self, path, value)

    monkeypatch.setattr(growth._Same, "__call__", counted)
    (tmp_path / "rebuild.py").write_text(REBUILD, encoding="utf-8")
    counts = {}
    for steps in (10, 20, 30):
        asked[0] = 0
        leaves, codes = described(monkeypatch, f"{tmp_path / 'rebuild.py'}:Obs", steps)
        counts[steps] = (leaves, asked[0])
        assert codes == []
    for kind in (0, 1):
        assert counts[30][kind] - counts[20][kind] == counts[20][kind] - counts[10][kind], counts


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


def _fresh(number: int) -> int:
    # An int equal to ``number`` but a new object (past CPython's small-int cache): a value
    # recomputed at each step, equal to the last one and not the same object.
    return int(str(number + 10**12)) - 10**12 if number > 256 else number


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), max_size=4),
            st.sampled_from(
                ["keep", "copy single", "copy pp", "copy both", "rebuild single", "rebuild pp"]
            ),
            st.sampled_from(["keep", "set single", "set pp", "set both"]),
            st.sampled_from([0, 1, 300, 301]),
        ),
        max_size=12,
    )
)
def test_step_records_find_every_difference_the_whole_records_do(history):
    # Two requests whose list grows by appends (and is now and then replaced by a copy of
    # itself, on one side or both, or by a new list whose first item differs) and whose plain
    # field is set now and then (on one side or both, to an equal value that is another
    # object or to another value): at every step, each difference the step's records show is
    # one of the requests described whole then, and each difference of the whole requests
    # was shown at that step or before.
    single = types.SimpleNamespace(values=[], mark=_fresh(300))
    pp = types.SimpleNamespace(values=[], mark=_fresh(300))
    walk = RequestWalk(lambda view, skip, same: compare.records(view, skip, same))
    seen: set[str] = set()
    for appended, replace, setting, value in history:
        for left, right in appended:
            single.values.append(left)
            pp.values.append(right)
        if replace in ("copy single", "copy both"):
            single.values = list(single.values)
        if replace in ("copy pp", "copy both"):
            pp.values = list(pp.values)
        # A new list whose first item is another value (the rest the very same objects).
        if replace == "rebuild single" and single.values:
            single.values = [_fresh(value + 1), *single.values[1:]]
        if replace == "rebuild pp" and pp.values:
            pp.values = [_fresh(value + 1), *pp.values[1:]]
        if setting in ("set single", "set both"):
            single.mark = _fresh(value)
        if setting in ("set pp", "set both"):
            pp.mark = _fresh(value)
        [a], [b] = walk.step([single], [pp])
        shown = {item.path for item in compare.differences(a, b)}
        whole = {
            item.path for item in compare.differences(compare.records(single), compare.records(pp))
        }
        assert shown <= whole
        seen |= shown
        assert whole <= seen


def test_a_field_left_as_it_was_is_not_described_again():
    # Counted work: a request's plain fields that no step changes are described at the first
    # step only; a list's new items and a changed field at every step.
    single = types.SimpleNamespace(values=[], mark="x", fixed=tuple(range(3)), n=7)
    pp = types.SimpleNamespace(values=[], mark="x", fixed=tuple(range(3)), n=7)
    walk = RequestWalk(lambda view, skip, same: compare.records(view, skip, same))
    sizes = []
    for step in range(5):
        single.values.append(step)
        pp.values.append(step)
        single.mark = pp.mark = f"step {step}"
        [a], [b] = walk.step([single], [pp])
        assert a == b
        sizes.append(sorted(a))
    assert sizes[0] == [".fixed[0]", ".fixed[1]", ".fixed[2]", ".mark", ".n", ".values[0]"]
    assert sizes[1:] == [[".mark", f".values[{step}]"] for step in range(1, 5)]


def test_an_object_left_as_it_was_is_asked_about_once_not_value_by_value(monkeypatch):
    # A request's 40 plain fields that no step changes: after the first step the walk asks
    # about each value only where its holder changed (steps 1 and 2: only the list's new
    # item, on each path), and a field set, added or removed on one path later is still a
    # difference at that step.
    import ppaux.observer.growth as growth

    asked: list[str] = []
    plain = growth._Same.__call__

    def counted(self, path, value):
        asked.append(path)
        return plain(self, path, value)

    monkeypatch.setattr(growth._Same, "__call__", counted)
    fields = {f"f{i}": i for i in range(40)}
    single = types.SimpleNamespace(values=[], **fields)
    pp = types.SimpleNamespace(values=[], **fields)
    walk = RequestWalk(lambda view, skip, same: compare.records(view, skip, same))
    per_step, found = [], []
    for step in range(6):
        single.values.append(step)
        pp.values.append(step)
        if step == 3:
            pp.f7 = 1007
        if step == 4:
            pp.added = 1
        if step == 5:
            del pp.added
        asked.clear()
        [a], [b] = walk.step([single], [pp])
        per_step.append(len(asked))
        found.append(sorted((d.path, d.what) for d in compare.differences(a, b)))
    assert per_step[0] == 2 * 41 and per_step[1:3] == [2, 2], per_step
    assert found[:3] == [[], [], []]
    assert found[3] == [(".f7", "value")]
    assert found[4] == [(".added", "extra")]
    # Removed again: the step's records no longer hold it on either side.
    assert found[5] == []
