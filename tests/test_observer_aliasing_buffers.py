"""PP713 for an output's numpy array or bytearray that a later step writes over.

The aliasing check describes each output when it is produced and again at the end of its batch
size; a numpy array or a bytearray the observer keeps and overwrites in place is memory a later
step changes, as a reused tensor is.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch  # noqa: F401  (the check's child imports it)
from hypothesis import assume, given
from hypothesis import strategies as st

from ppaux.observer import ObserverOptions, check_observer
from ppaux.observer.compare import records
from ppaux.observer.watched import Watched

pytestmark = pytest.mark.torch

OBSERVER = """
import numpy as np
import torch

class Host:
    def __init__(self, t):
        self.t = t
    def consume(self, batch, commits):
        pass

class Out:
    def __init__(self, t, kept):
        self.t = t
        self.kept = kept
    def copy_to_host(self, copy_tensor):
        return Host(copy_tensor(self.t))
    def to_pp_tensors(self):
        return {"t": self.t, "kept": torch.tensor(list(self.kept), dtype=torch.float64)}

class Reused:
    make = staticmethod(lambda: np.zeros(2))
    def __init__(self):
        self.buffer = self.make()
        self.count = 0
    def is_active(self, sampling_info):
        return True
    def before_grammar(self, logits, sampling_info):
        return logits
    def after_sample(self, logits, token_ids):
        self.count += 1
        self.buffer[0] = self.count  # the same buffer, written over by every step
        return Out(token_ids.float(), self.buffer)
    def from_pp_tensors(self, tensors):
        return Out(tensors["t"], self.rebuild(tensors["kept"]))
    def rebuild(self, kept):
        return kept.numpy()

class ReusedBytes(Reused):
    make = staticmethod(lambda: bytearray(2))
    def rebuild(self, kept):
        return bytearray(int(x) for x in kept.tolist())

class Fresh(Reused):
    def after_sample(self, logits, token_ids):
        self.count += 1
        self.buffer = self.make()
        self.buffer[0] = self.count
        return Out(token_ids.float(), self.buffer)
"""


@pytest.mark.parametrize(
    ("name", "expected"), [("Reused", ["PP713"]), ("ReusedBytes", ["PP713"]), ("Fresh", [])]
)
def test_a_buffer_a_later_step_writes_over_is_pp713(tmp_path, name, expected):
    file = tmp_path / "buffers.py"
    file.write_text(OBSERVER, encoding="utf-8")
    report = check_observer(f"{file}:{name}", ObserverOptions(batch_sizes=(1,), steps=2))
    assert [f.code for f in report.findings] == expected, [f.message for f in report.findings]
    for finding in report.findings:
        assert finding.key == ".kept"


CONTAINERS = (
    OBSERVER
    + """

class ReusedList(Reused):
    make = staticmethod(lambda: [0, 0.0])
    def rebuild(self, kept):
        return [int(kept[0].item()), float(kept[1].item())]

class FreshList(Fresh):
    make = staticmethod(lambda: [0, 0.0])
    rebuild = ReusedList.rebuild

class ReusedDict(Reused):
    make = staticmethod(lambda: {"count": 0.0, "other": 0.0})
    def after_sample(self, logits, token_ids):
        self.count += 1
        self.buffer["count"] = float(self.count)  # the same dict, changed by every step
        return Out(token_ids.float(), self.buffer)
    def to_pp(self, kept):
        return list(kept.values())
    def rebuild(self, kept):
        return dict(zip(("count", "other"), kept.tolist()))

class ReusedDictOut(Out):
    def to_pp_tensors(self):
        values = list(self.kept.values())
        return {"t": self.t, "kept": torch.tensor(values, dtype=torch.float64)}

class ReusedDictObserver(ReusedDict):
    def after_sample(self, logits, token_ids):
        out = super().after_sample(logits, token_ids)
        return ReusedDictOut(out.t, out.kept)
    def from_pp_tensors(self, tensors):
        return ReusedDictOut(tensors["t"], self.rebuild(tensors["kept"]))
"""
)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("ReusedList", [("PP713", ".kept[0]")]),
        ("ReusedDictObserver", [("PP713", ".kept['count']")]),
        ("FreshList", []),
    ],
)
def test_a_list_or_dict_a_later_step_changes_in_place_is_pp713(tmp_path, name, expected):
    file = tmp_path / "containers.py"
    file.write_text(CONTAINERS, encoding="utf-8")
    report = check_observer(f"{file}:{name}", ObserverOptions(batch_sizes=(1,), steps=2))
    found = [(f.code, f.key) for f in report.findings]
    assert found == expected, [f.message for f in report.findings]


class _Holding:
    def __init__(self, value: object) -> None:
        self.value = value


def _first_holder(value: object) -> list[Any] | dict[Any, Any] | None:
    """The first non-empty list or dict in ``value`` (itself included), depth first."""
    if isinstance(value, (list, dict)) and value:
        return value
    children = value.values() if isinstance(value, dict) else value
    if isinstance(children, (list, type({}.values()))):
        for child in children:
            found = _first_holder(child)
            if found is not None:
                return found
    return None


PLAIN = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=20,
)


@given(PLAIN)
def test_a_plain_holder_is_as_produced_until_changed_in_place(value):
    output = _Holding(value)
    produced = records(output)
    watched = Watched(output, produced)
    assert watched.now() == produced
    holder = _first_holder(value)
    assume(holder is not None)
    assert holder is not None
    first = next(iter(holder)) if isinstance(holder, dict) else 0
    holder[first] = "written over by a later step"  # longer than any text drawn
    assert watched.now() != produced
