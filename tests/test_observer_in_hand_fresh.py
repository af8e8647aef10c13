"""With the object in hand (``assert_pp_safe``, ``pp_safe``), rank 0's side runs in a fresh
interpreter where the object can be carried there (:mod:`ppaux.observer.handfresh`), as each of
sglang's schedulers is: its own string hash seed, its own locks, and a whole-run timeout. Where
it cannot be carried, rank 0's side is forked and the report says why, and that the copy shares
the hash seed (:mod:`ppaux.observer.handnotes`). The suite's own hook
(``PPAUX_TEST_RANK0_FORK``) is removed here."""

from __future__ import annotations

import functools
import importlib
import os
import subprocess
import sys
import threading
import time
from typing import Any

import pytest
from observer_targets import SET_ORDER_OUTPUT

from ppaux.observer import ObserverOptions, observer_report
from ppaux.observer.fresh import FORK_HOOK
from ppaux.testing import RankZeroNotApartWarning, assert_pp_safe

pytestmark = pytest.mark.torch

ONE = ObserverOptions(batch_sizes=(2,), steps=1)

# 40 names packed in a set's order: two independent seeds order them alike by chance almost
# never (the names spread over a table of 128 slots).
OBSERVERS = (
    """
import threading
import time

import torch

NAMES = {f"metric_{n}" for n in range(40)}
LOCK = threading.Lock()


"""
    + SET_ORDER_OUTPUT
    + '''


class SetOrder:
    """Packs in one set order (the last stage's), unpacks in another (rank 0's)."""

    def is_active(self, sampling_info):
        return True

    def before_grammar(self, logits, sampling_info):
        return logits.float()

    def after_sample(self, logits, token_ids):
        return Out({k: logits[:, 0] + n for n, k in enumerate(sorted(NAMES))})

    def from_pp_tensors(self, tensors):
        return Out({k: tensors["packed"][:, j] for j, k in enumerate(NAMES)})


class Slow(SetOrder):
    """Correct (one order on both sides), but rank 0 takes ``delay`` seconds at every step,
    under a module lock."""

    def __init__(self, delay):
        self.delay = delay

    def from_pp_tensors(self, tensors):
        with LOCK:
            time.sleep(self.delay)
        return OrderedOut({k: tensors["packed"][:, j] for j, k in enumerate(NAMES_IN_ORDER)})

    def after_sample(self, logits, token_ids):
        return OrderedOut({k: logits[:, 0] + n for n, k in enumerate(NAMES_IN_ORDER)})


NAMES_IN_ORDER = sorted(NAMES)


class InitOrder(SetOrder):
    """Takes its order from the set once, when built: the same on both sides only where one
    instance's state crosses to rank 0."""

    def __init__(self):
        self.order = list(NAMES)

    def after_sample(self, logits, token_ids):
        return Kept({k: logits[:, 0] + n for n, k in enumerate(sorted(NAMES))}, self.order)

    def from_pp_tensors(self, tensors):
        return Kept({k: tensors["packed"][:, j] for j, k in enumerate(self.order)}, self.order)


class Kept(Out):
    def __init__(self, values, order):
        self.values = values
        self.order = order

    def to_pp_tensors(self):
        return {"packed": torch.stack([self.values[k] for k in self.order], -1)}


class OrderedOut(Out):
    def to_pp_tensors(self):
        return {"packed": torch.stack([self.values[k] for k in NAMES_IN_ORDER], -1)}
'''
)


@pytest.fixture
def observers(monkeypatch, tmp_path):
    """The observers' module, importable by name (as a caller's own module is)."""
    monkeypatch.delenv(FORK_HOOK, raising=False)
    monkeypatch.delenv("PYTHONHASHSEED", raising=False)
    (tmp_path / "hand_fresh_observers.py").write_text(OBSERVERS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("hand_fresh_observers", None)
    yield importlib.import_module("hand_fresh_observers")
    sys.modules.pop("hand_fresh_observers", None)


def _codes(report: Any) -> set[str]:
    return {item.code for item in report.findings}


def test_a_set_order_is_found_in_hand_as_by_name(observers):
    report = observer_report(observers.SetOrder(), ONE, None)
    assert {"PP711", "PP712"} <= _codes(report)
    assert not [n for n in report.notes if "forked" in n]
    with pytest.raises(AssertionError, match=r"PP71[12]"):
        assert_pp_safe(observers.SetOrder, batch_sizes=(2,), steps=1)


def test_a_seed_exported_to_all_is_rank_0s_too(observers, tmp_path):
    # The caller's process started with the seed, as sglang's launcher would.
    script = (
        "from ppaux.observer import ObserverOptions, observer_report\n"
        "import hand_fresh_observers as m\n"
        "r = observer_report(m.SetOrder(), ObserverOptions(batch_sizes=(2,), steps=1), None)\n"
        "print(sorted({f.code for f in r.findings}), [n for n in r.notes if 'fork' in n])\n"
    )
    env = {k: v for k, v in os.environ.items() if k != FORK_HOOK}
    env.update(PYTHONHASHSEED="0", PYTHONPATH=str(tmp_path))
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[-2] == "[] []"


def test_a_lock_another_thread_holds_here_is_not_rank_0s(observers):
    held, done = threading.Event(), threading.Event()

    def holder() -> None:
        with observers.LOCK:
            held.set()
            done.wait(60)

    thread = threading.Thread(target=holder, name="stats-flusher", daemon=True)
    thread.start()
    held.wait(10)
    try:
        options = ObserverOptions(batch_sizes=(2,), steps=1, timeout_s=20.0)
        report = observer_report(observers.Slow(0.0), options, None)
    finally:
        done.set()
        thread.join(10)
    assert not _codes(report)


def test_the_timeout_is_for_each_steps_answers_as_the_clis(observers):
    # Each step well within the timeout, more than it together: passes, as with --timeout.
    options = ObserverOptions(batch_sizes=(2,), steps=4, timeout_s=2.0)
    assert not _codes(observer_report(observers.Slow(0.8), options, None))
    began = time.monotonic()
    report = observer_report(observers.Slow(2.5), options, None)
    assert time.monotonic() - began < 60
    (item,) = [f for f in report.findings if f.code == "PP708"]
    assert "did not answer within 2 s (a step's answers together)" in item.message


def test_an_object_that_cannot_be_carried_is_forked_and_the_report_says_why(observers):
    class Local(observers.SetOrder):  # defined in a function: pickle cannot name it
        pass

    report = observer_report(Local(), ONE, None)
    (note,) = [n for n in report.notes if "forked" in n]
    assert "not a fresh interpreter, as it cannot be pickled" in note
    assert "hash seed" in note


def test_a_class_of_main_is_forked_and_the_report_says_why(observers):
    main = type("SetOrder", (observers.SetOrder,), {"__module__": "__main__"})
    report = observer_report(main(), ONE, None)
    (note,) = [n for n in report.notes if "forked" in n]
    assert "defined in __main__, which another interpreter cannot import" in note
    assert "hash seed" in note


def test_the_suite_hook_forks_and_the_report_says_so(observers, monkeypatch):
    monkeypatch.setenv(FORK_HOOK, "1")
    report = observer_report(observers.SetOrder(), ONE, None)
    (note,) = [n for n in report.notes if "forked" in n]
    assert f"{FORK_HOOK}=1" in note


def test_a_module_the_fresh_interpreter_cannot_load_is_forked(observers, tmp_path):
    (tmp_path / "hand_fresh_observers.py").write_text("raise ImportError('gone')\n")
    report = observer_report(observers.SetOrder(), ONE, None)
    (note,) = [n for n in report.notes if "forked" in n]
    assert "rank 0's fresh interpreter could not load it (ImportError: gone)" in note


def test_an_order_an_instance_built_is_copied_to_rank_0_and_the_report_says_so(observers):
    with pytest.raises(AssertionError, match="PP71"):  # rank 0 builds its own, as in sglang
        assert_pp_safe(observers.InitOrder, batch_sizes=(2,), steps=1)
    # Rank 0 ran apart, in a fresh interpreter: a note, no warning (the suite makes them errors).
    report = assert_pp_safe(observers.InitOrder(), batch_sizes=(2,), steps=1)
    assert [n for n in report.notes if "pickled copy of the instance given" in n]
    assert [n for n in report.notes if "give the class or a factory" in n]


def test_a_correct_instance_carried_fresh_passes_where_warnings_are_errors(observers):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_pp_safe(observers.Slow(0.0), batch_sizes=(2,), steps=1)
    with pytest.warns(RankZeroNotApartWarning, match="hash seed"):  # forked: not apart
        assert_pp_safe(type("Local", (observers.Slow,), {})(0.0), batch_sizes=(2,), steps=1)


def test_a_fork_sharing_the_hash_seed_is_a_warning_in_pytest(observers):
    class Local(observers.Slow):  # defined in a function: pickle cannot name it
        pass

    with pytest.warns(RankZeroNotApartWarning, match="hash seed"):
        assert_pp_safe(Local(0.0), batch_sizes=(2,), steps=1)


def test_a_class_in_a_fresh_rank_0_or_the_suites_fork_is_no_warning(observers, monkeypatch):
    factory = functools.partial(observers.Slow, 0.0)
    assert_pp_safe(factory, batch_sizes=(2,), steps=1)  # the suite makes warnings errors
    monkeypatch.setenv(FORK_HOOK, "1")
    assert_pp_safe(observers.Slow(0.0), batch_sizes=(2,), steps=1)
