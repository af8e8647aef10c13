"""An output that ``copy_to_host`` changes in place, and an output whose tensor holds no data.

In sglang a process runs one path only: the single stage runs ``copy_to_host`` on the output
``after_sample`` returned, and on the PP path the last stage sends that same output and rank 0
runs ``copy_to_host`` on what it rebuilt. So an output whose own ``copy_to_host`` changes its
tensor in place (a scale to percent, a step count) gives the same values both ways: each path
starts from the output as it was returned. A tensor on the meta device has no values to copy:
the check says so and names the line that made it.

The checks run in this process, as ``assert_pp_safe`` runs an observer in hand; each target is
a file of the test's own."""

from __future__ import annotations

import itertools
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.observer import ObserverOptions, check_loaded, load_observer
from ppaux.observer.compare import differences, records

pytestmark = pytest.mark.torch

_BASE = """\
import torch


class Host:
    def __init__(self, v):
        self.v = v

    def consume(self, batch, commits):
        for req, c, x in zip(batch.reqs, commits, self.v.tolist()):
            if c is None:
                continue
            if req.customized_info is None:
                req.customized_info = {}
            req.customized_info.setdefault("v", []).append(x)


class Out:
    def __init__(self, v):
        self.v = v

    def to_pp_tensors(self):
        return {"v": self.v}

    def copy_to_host(self, copy_tensor):
        return Host(copy_tensor(self.v))


class Obs:
    def is_active(self, s):
        return True

    def before_grammar(self, logits, s):
        return torch.softmax(logits.float(), -1).max(-1).values

    def after_sample(self, state, tok):
        return Out(state)

    def from_pp_tensors(self, t):
        return Out(t["v"])
"""

_PERCENT = """
class Percent(Out):
    def copy_to_host(self, copy_tensor):
        self.v.mul_(100)
        return Host(copy_tensor(self.v))


class PercentObs(Obs):
    def after_sample(self, state, tok):
        return Percent(state)

    def from_pp_tensors(self, t):
        return Percent(t["v"])


class Count(Out):
    def copy_to_host(self, copy_tensor):
        self.v.add_(1)
        return Host(copy_tensor(self.v))


class CountObs(Obs):
    def after_sample(self, state, tok):
        return Count(state)

    def from_pp_tensors(self, t):
        return Count(t["v"])


class KeptObs(Obs):
    # One buffer for every step: step 1 writes over what step 0 returned.
    def __init__(self):
        self.buffer = None

    def before_grammar(self, logits, s):
        values = logits.float().max(-1).values
        if self.buffer is None or self.buffer.shape != values.shape:
            self.buffer = values.clone()
        self.buffer.copy_(values)
        return self.buffer


class PercentKeptObs(KeptObs):
    def after_sample(self, state, tok):
        return Percent(state)

    def from_pp_tensors(self, t):
        return Percent(t["v"])


class MetaObs(Obs):
    def before_grammar(self, logits, s):
        return torch.empty(logits.shape[0], device="meta")
"""


@pytest.fixture(scope="module")
def own(tmp_path_factory):
    folder = tmp_path_factory.mktemp("own_changes")
    path = folder / "changes.py"
    path.write_text(_BASE + textwrap.dedent(_PERCENT))

    def check(name: str, options: ObserverOptions = ObserverOptions()):
        return check_loaded(load_observer(f"{path}:{name}"), options)

    return check, path


@pytest.mark.parametrize("transport", ["wire", "none"])
@pytest.mark.parametrize("name", ["PercentObs", "CountObs"])
def test_an_output_its_own_copy_to_host_changes_in_place_is_pp_safe(own, name, transport):
    check, _ = own
    report = check(name, ObserverOptions(transport=transport))
    assert [(f.code, f.message) for f in report.findings] == []
    assert len(report.data["steps"]) == 6


_NAMES = itertools.count()


@settings(max_examples=8, deadline=None)
@given(
    change=st.sampled_from(["mul_", "add_", "sub_", "div_", "fill_"]),
    by=st.integers(1, 1000),
    transport=st.sampled_from(["wire", "none"]),
)
def test_any_change_copy_to_host_makes_in_place_is_made_once_on_each_path(
    tmp_path_factory, change, by, transport
):
    # The property: whatever copy_to_host writes into its own output's tensor before copying
    # it, each path gives the same values, so the check finds nothing.
    path = tmp_path_factory.mktemp("any_change") / f"change_{next(_NAMES)}.py"
    path.write_text(
        _BASE
        + textwrap.dedent(f"""
        class Changed(Out):
            def copy_to_host(self, copy_tensor):
                self.v.{change}({by})
                return Host(copy_tensor(self.v))


        class ChangedObs(Obs):
            def after_sample(self, state, tok):
                return Changed(state)

            def from_pp_tensors(self, t):
                return Changed(t["v"])
        """)
    )
    options = ObserverOptions(transport=transport, batch_sizes=(2,), steps=2)
    report = check_loaded(load_observer(f"{path}:ChangedObs"), options)
    assert [(f.code, f.message) for f in report.findings] == []


@pytest.mark.parametrize("name", ["KeptObs", "PercentKeptObs"])
def test_a_buffer_kept_across_steps_is_still_found(own, name):
    check, _ = own
    report = check(name)
    assert [f.code for f in report.findings] == ["PP713"]
    assert "the output of step 0 (batch size 1) changed by step 2" in report.findings[0].message


def test_a_tensor_on_meta_fails_where_sglang_reads_its_values(own):
    # Its shape and dtype describe it; copy_to_host, which copies its values to the host,
    # meets torch's refusal on both paths (the wire sends a meta tensor as nothing).
    check, path = own
    report = check("MetaObs", ObserverOptions(steps=1, batch_sizes=(1,)))
    assert [f.code for f in report.findings] == ["PP710", "PP710"]
    copies = path.read_text().splitlines().index("        return Host(copy_tensor(self.v))")
    for item in report.findings:
        assert item.message.startswith(
            "copy_to_host raised NotImplementedError: Cannot copy out of meta tensor"
        )
        assert item.location is not None
        assert item.location.line == copies + 1
    assert ["on single stage" in f.message for f in report.findings] == [True, False]
    assert ["on rank 0" in f.message for f in report.findings] == [False, True]


def test_a_tensor_on_meta_is_described_without_values():
    import torch

    from ppaux.observer.compare import differences, record

    described = record(torch.empty(3, device="meta"))
    assert described["device"] == "meta"
    assert described["shape"] == [3]
    assert described["values"] == "[no data: on the meta device]"
    # Two such tensors of one shape and dtype hold the same (nothing); another shape differs.
    assert differences({".v": described}, {".v": record(torch.empty(3, device="meta"))}) == []
    assert differences({".v": described}, {".v": record(torch.empty(4, device="meta"))}) != []


_STUBBORN = """
class Stubborn(torch.Tensor):
    # A subclass whose clone raises: rank 0 still gets a tensor of its own.
    def clone(self, *args, **kwargs):
        raise RAISED("no clone for a Stubborn")


class StubbornObs(PercentObs):
    def after_sample(self, state, tok):
        return Percent(state.as_subclass(Stubborn))
"""


@pytest.mark.parametrize("raised", ["RuntimeError", "SystemExit"])
@pytest.mark.parametrize("transport", ["none", "wire"])
def test_a_tensor_whose_clone_raises_is_not_shared_between_the_paths(tmp_path, transport, raised):
    # Rank 0's copy_to_host scales its output's tensor in place; the single stage's must not
    # see it, with no transport (where rank 0 gets the very tensors sent) as with a wire.
    # A clone that raises SystemExit is the target's too: it ends nothing.
    path = tmp_path / "stubborn.py"
    stubborn = textwrap.dedent(_STUBBORN).replace("RAISED", raised)
    path.write_text(_BASE + textwrap.dedent(_PERCENT) + stubborn)
    options = ObserverOptions(transport=transport, batch_sizes=(2,), steps=2)
    report = check_loaded(load_observer(f"{path}:StubbornObs"), options)
    assert [(f.code, f.message) for f in report.findings] == []


_LOGS = """\
import torch


class Host:
    def __init__(self, e, log):
        self.e, self.log = e, log

    def consume(self, batch, commits):
        for i, (req, c) in enumerate(zip(batch.reqs, commits)):
            if c is None:
                continue
            self.log.append(i)
            req.customized_info = {"e": float(self.e[i])}


class Out:
    def __init__(self, e, log):
        self.e, self.log = e, log

    def copy_to_host(self, copy_tensor):
        return Host(copy_tensor(self.e), self.log)

    def to_pp_tensors(self):
        return {"e": self.e}


class OwnLog:
    # Each output has a list of its own; its host copy shares it and its consume fills it.
    def is_active(self, s):
        return True

    def before_grammar(self, logits, s):
        return logits.float().amax(-1)

    def log(self):
        return []

    def after_sample(self, state, tok):
        return Out(state.clone(), self.log())

    def from_pp_tensors(self, t):
        return Out(t["e"], self.log())


class SharedLog(OwnLog):
    # One list for every output: a later step's consume appends to an earlier output's.
    def __init__(self):
        self.kept = []

    def log(self):
        return self.kept
"""


@pytest.mark.parametrize("transport", ["wire", "none"])
def test_a_list_the_outputs_own_consume_fills_is_as_produced(tmp_path, transport):
    path = tmp_path / "logs.py"
    path.write_text(_LOGS)
    options = ObserverOptions(batch_sizes=(2,), steps=3, transport=transport)
    report = check_loaded(load_observer(f"{path}:OwnLog"), options)
    assert [(f.code, f.message) for f in report.findings] == []


def test_a_list_a_later_steps_consume_fills_is_still_found(tmp_path):
    path = tmp_path / "logs.py"
    path.write_text(_LOGS)
    options = ObserverOptions(batch_sizes=(2,), steps=3)
    report = check_loaded(load_observer(f"{path}:SharedLog"), options)
    found = [f for f in report.findings if f.code == "PP713"]
    assert found, [(f.code, f.message) for f in report.findings]
    assert ".log" in found[0].message
    assert "absent" not in found[0].message


@settings(max_examples=50, deadline=None)
@given(
    key=st.text(max_size=8),
    items=st.lists(st.integers(), min_size=1, max_size=6),
    other=st.lists(st.integers(), min_size=1, max_size=3),
)
def test_a_value_filled_since_is_never_called_absent(key, items, other):
    # The property: where the first walk saw an empty list and the second sees values inside
    # it, the difference at the list names them and never says it is absent; a neighbour
    # whose name merely starts with the same text is not inside it.
    [missing, *rest] = differences(
        records({key: [], key + "x": other}), records({key: items, key + "y": other})
    )
    assert missing.what == "missing" and missing.right.startswith("holding ")
    added = [d for d in rest if d.what == "extra"]
    assert f"{added[0].path} int {items[0]}" in missing.right
    gone = [d for d in rest if d.what == "missing"]
    assert [d.right for d in gone] == ["absent"] * len(other)
