"""A target whose code signals its parent on a failure (``os.kill(os.getppid(), SIGQUIT)``, as
sglang's ``run_scheduler_process`` tells the launcher) signals ppaux's process from the
check's child, and the child itself from rank 0's process, whose parent the child is: both
are findings (PP715), and the child's end says what happened, never a finaliser's doing."""

from __future__ import annotations

import pytest
from observer_targets import linux_only

from ppaux.observer import ObserverOptions, check_observer

pytestmark = [pytest.mark.torch, linux_only("signals are Linux's")]

SIGNALS_PARENT = """
import os, signal
class Out:
    def __init__(self, t): self.t = t
    def copy_to_host(self, ct):
        os.kill(os.getppid(), signal.SIGQUIT)
        raise RuntimeError("self-check failed")
    def to_pp_tensors(self): return {"t": self.t}
class Obs:
    def is_active(self, si): return True
    def before_grammar(self, logits, si): return logits[:, 0].clone()
    def after_sample(self, st, tok): return Out(st)
    def from_pp_tensors(self, t): return Out(t["t"])
O = Obs()
"""


def test_rank_0_signalling_its_parent_is_named_as_such(tmp_path):
    path = tmp_path / "quits.py"
    path.write_text(SIGNALS_PARENT)
    report = check_observer(f"{path}:O", ObserverOptions(batch_sizes=(1,), steps=1))
    ends = {f.extra["end"]: f.message for f in report.findings if f.code == "PP715"}
    assert set(ends) == {"signal", "signalled"}
    message = ends["signal"]
    assert message.startswith("the target's process was killed by signal SIGQUIT")
    assert "rank 0's process" in message and "launcher" in message
    assert "finaliser" not in message
