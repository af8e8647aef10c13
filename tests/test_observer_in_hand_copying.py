"""An instance given in hand is deep-copied for rank 0 and pickled for a fresh rank 0 by its own
methods, which sglang never calls (:mod:`ppaux.observer.handcopy`): one that never returns is
bounded by the check's timeout and named, and one that changes the instance does not change
what the last stage runs."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import threading
import time
from typing import Any

import pytest
import torch
from observer_targets import KeptOutput

from ppaux.observer import ObserverOptions, observer_report
from ppaux.observer.fresh import FORK_HOOK
from ppaux.testing import assert_pp_safe, pp_safety_report

pytestmark = pytest.mark.torch

QUICK = ObserverOptions(batch_sizes=(2,), steps=1, timeout_s=1.0)
NEVER = threading.Event()  # a flush nothing starts here


class _Observer:
    def is_active(self, info: Any) -> bool:
        return True

    def before_grammar(self, logits: Any, info: Any) -> Any:
        return logits.float()

    def after_sample(self, logits: Any, token_ids: Any) -> KeptOutput:
        return KeptOutput(logits[:, 0].clone())

    def from_pp_tensors(self, tensors: Any) -> KeptOutput:
        return KeptOutput(tensors["values"])


class WaitsToCopy(_Observer):
    """``__getstate__`` waits for a flush to finish (deep copy and pickling both call it)."""

    def __getstate__(self) -> dict[str, Any]:
        NEVER.wait()
        return {}


class WaitsToPickle(_Observer):
    """Copies itself, but its pickling waits for a flush."""

    def __deepcopy__(self, memo: Any) -> WaitsToPickle:
        return WaitsToPickle()

    def __reduce__(self) -> Any:
        NEVER.wait()
        return (WaitsToPickle, ())


class WaitsToCopyElsewhere(_Observer):
    """Deep-copies itself at once in the process that made it; in another (rank 0's fresh
    process, which copies the instance it unpickled) its copy waits for a flush."""

    def __init__(self) -> None:
        self.home = os.getpid()

    def __deepcopy__(self, memo: Any) -> WaitsToCopyElsewhere:
        if os.getpid() != self.home:
            NEVER.wait()
        return WaitsToCopyElsewhere()


class DropsItsLock(_Observer):
    """A common ``__getstate__``: pops the unpicklable lock from the live ``__dict__``."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.scale = torch.ones(2)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__
        state.pop("lock", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.lock = threading.Lock()

    def after_sample(self, logits: Any, token_ids: Any) -> KeptOutput:
        with self.lock:
            return KeptOutput(logits[:, 0] * self.scale[0])


class LosesItsLock(DropsItsLock):
    """Its own ``after_sample`` drops the lock: the observer's run, not ppaux's copying."""

    def after_sample(self, logits: Any, token_ids: Any) -> KeptOutput:
        out = super().after_sample(logits, token_ids)
        del self.lock
        return out


def _timeout_finding(report: Any) -> Any:
    (item,) = [f for f in report.findings if f.code == "PP715"]
    assert item.extra["end"] == "timeout"
    return item


def test_a_deep_copy_that_never_returns_is_a_finding_within_the_timeout():
    began = time.monotonic()
    report = observer_report(WaitsToCopy(), QUICK, None)
    assert time.monotonic() - began < 20
    item = _timeout_finding(report)
    assert "deep-copying the instance" in item.message
    assert "within the check's timeout (1 s)" in item.message
    assert "give the class or a factory" in item.message
    with pytest.raises(AssertionError, match=r"PP715.*deep-copying the instance"):
        assert_pp_safe(WaitsToCopy(), batch_sizes=(2,), steps=1, timeout_s=1.0)


def test_pickling_that_never_returns_is_a_finding_within_the_timeout(monkeypatch):
    monkeypatch.delenv(FORK_HOOK, raising=False)  # pickling is for the fresh rank 0
    began = time.monotonic()
    report = observer_report(WaitsToPickle(), QUICK, None)
    assert time.monotonic() - began < 20
    item = _timeout_finding(report)
    assert "pickling the instance" in item.message


def test_a_deep_copy_in_rank_0s_fresh_process_is_bounded_by_the_timeout_too(monkeypatch):
    monkeypatch.delenv(FORK_HOOK, raising=False)  # the copy that waits is the fresh rank 0's
    options = ObserverOptions(batch_sizes=(2,), steps=1, timeout_s=2.0)
    report = observer_report(WaitsToCopyElsewhere(), options, None)
    item = _timeout_finding(report)
    assert "deep-copying the instance in rank 0's fresh process" in item.message
    assert "within the check's timeout (2 s)" in item.message


def test_the_copy_that_copies_in_time_is_no_finding():
    assert not observer_report(WaitsToPickle(), QUICK, None).findings  # the suite's fork
    assert copy.deepcopy(WaitsToPickle()) is not None


WAITS = """
import threading, time
from ppaux.observer import ObserverOptions, observer_report

class Waits:
    def __getstate__(self):
        threading.Event().wait()
    def is_active(self, info): return True
    def before_grammar(self, logits, info): return logits
    def after_sample(self, logits, token_ids): return None
    def from_pp_tensors(self, tensors): return None

began = time.monotonic()
r = observer_report(Waits(), ObserverOptions(batch_sizes=(2,), steps=1, timeout_s=1.0), None)
print(sorted(f.code for f in r.findings), time.monotonic() - began < 30)
"""


def test_the_thread_left_waiting_does_not_keep_the_process_from_exiting():
    done = subprocess.run(
        [sys.executable, "-c", WAITS], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "['PP715'] True"


@pytest.mark.parametrize("fork", [True, False], ids=["forked", "fresh"])
def test_a_getstate_that_changes_the_instance_is_put_back_and_noted(monkeypatch, fork):
    if not fork:
        monkeypatch.delenv(FORK_HOOK, raising=False)
    given = DropsItsLock()
    lock = given.lock
    report = observer_report(given, QUICK, None)
    assert not report.findings, [f.message for f in report.findings]
    assert given.lock is lock  # what the caller gave is as it gave it
    notes = [n for n in report.notes if "changed its own attributes (lock" in n]
    assert notes and "put them back" in notes[0]
    assert_pp_safe(DropsItsLock(), batch_sizes=(2,), steps=1)  # no warning: the suite errs


def test_an_attribute_the_observers_own_run_drops_is_still_its_failure():
    report = observer_report(LosesItsLock(), ObserverOptions(batch_sizes=(2,), steps=2), None)
    assert "PP710" in {f.code for f in report.findings}


def test_a_target_by_name_with_outputs_bounds_its_instances_deep_copy(tmp_path):
    # Given by name with outputs, the target is loaded in the checking process: the deep copy
    # of the instance it names has the check's timeout there too.
    (tmp_path / "waits_by_name.py").write_text(
        "import threading\n"
        "class Waits:\n"
        "    def from_pp_tensors(self, tensors):\n"
        "        return None\n"
        "    def __deepcopy__(self, memo):\n"
        "        threading.Event().wait()\n"
        "OBSERVER = Waits()\n",
        encoding="utf-8",
    )
    began = time.monotonic()
    report = pp_safety_report(
        f"{tmp_path / 'waits_by_name.py'}:OBSERVER",
        outputs=[KeptOutput(torch.ones(2))],
        batch_sizes=(2,),
        steps=1,
        timeout_s=1.0,
    )
    assert time.monotonic() - began < 20
    assert "deep-copying the instance" in _timeout_finding(report).message
