"""What the in-hand check's forked copy of rank 0 (:mod:`ppaux.observer.handapart`) cannot be
as sglang's fresh rank 0 is: a lock another thread held at the fork stays held there (the copy
is killed after ``timeout_s``: :mod:`ppaux.observer.handhang`), and it shares the caller's
string hash seed (every in-hand report says so)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from observer_targets import KeptOutput

from ppaux.observer import ObserverOptions, observer_report

pytestmark = pytest.mark.torch

LOCK = threading.Lock()
ONE = ObserverOptions(batch_sizes=(2,), steps=1)


class _TakesTheLockOnRank0:
    """Rank 0's ``from_pp_tensors`` takes a module lock, as a stats counter's would."""

    def is_active(self, info: Any) -> bool:
        return True

    def before_grammar(self, logits: Any, info: Any) -> Any:
        return logits.float().amax(-1)

    def after_sample(self, state: Any, token_ids: Any) -> KeptOutput:
        return KeptOutput(state.clone())

    def from_pp_tensors(self, tensors: Any) -> KeptOutput:
        with LOCK:
            return KeptOutput(tensors["values"])


def test_a_lock_held_by_another_thread_at_the_fork_is_a_finding_not_a_hang():
    held, done = threading.Event(), threading.Event()

    def holder() -> None:  # a thread of the process's that holds the lock while it works
        with LOCK:
            held.set()
            done.wait(60)

    thread = threading.Thread(target=holder, name="stats-flusher", daemon=True)
    thread.start()
    held.wait(10)
    began = time.monotonic()
    try:
        options = ObserverOptions(batch_sizes=(2,), steps=1, timeout_s=2.0)
        report = observer_report(_TakesTheLockOnRank0(), options, None)
    finally:
        done.set()
        thread.join(10)
    assert time.monotonic() - began < 30
    (item,) = [f for f in report.findings if f.code == "PP708"]
    assert "did not answer within 2 s" in item.message
    assert "stats-flusher" in item.message
    assert "fresh process" in item.message


def test_without_a_held_lock_the_same_observer_passes():
    report = observer_report(_TakesTheLockOnRank0(), ONE, None)
    assert report.findings == ()


def test_every_forked_in_hand_report_says_the_copy_shares_the_hash_seed(monkeypatch):
    monkeypatch.delenv("PYTHONHASHSEED", raising=False)
    report = observer_report(_TakesTheLockOnRank0(), ONE, None)
    (note,) = [n for n in report.notes if "hash seed" in n]
    assert "ppaux check-observer module:attr" in note
    # With a seed exported, sglang's processes would share it too: nothing to say.
    monkeypatch.setenv("PYTHONHASHSEED", " +7")
    report = observer_report(_TakesTheLockOnRank0(), ONE, None)
    assert not [n for n in report.notes if "hash seed" in n]
