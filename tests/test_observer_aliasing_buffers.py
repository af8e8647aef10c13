"""PP713 for an output's numpy array or bytearray that a later step writes over.

The aliasing check describes each output when it is produced and again at the end of its batch
size; a numpy array or a bytearray the observer keeps and overwrites in place is memory a later
step changes, as a reused tensor is.
"""

from __future__ import annotations

import pytest
import torch  # noqa: F401  (the check's child imports it)

from ppaux.observer import ObserverOptions, check_observer

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
