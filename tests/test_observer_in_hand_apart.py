"""With the object in hand (``assert_pp_safe``, ``pp_safe``), rank 0's side runs in a process
forked before any of the target's methods run (:mod:`ppaux.observer.handapart`), with its own
copy of the objects, as sglang's rank 0 has: state the last stage's side shares with it is a
finding, as with the target given by name."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO
from observer_targets import KeptOutput

from ppaux.observer import ObserverOptions, check_observer, observer_report
from ppaux.testing import assert_pp_safe

pytestmark = pytest.mark.torch

OBSERVERS = REPO / "fixtures" / "observers"
ONE = ObserverOptions(batch_sizes=(2,), steps=1)


def _module(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _codes(report: Any) -> set[str]:
    return {item.code for item in report.findings}


def test_state_shared_through_a_module_global_fails_in_hand_as_by_name():
    by_name = check_observer(f"{OBSERVERS / 'shared_state.py'}:SharedStateObserver", ONE)
    for n in range(2):
        # A module of its own each time: the fork copies what the module holds when it forks,
        # as a process that had run a check before would hold it.
        shared = _module(OBSERVERS / "shared_state.py", f"shared_state_in_hand_{n}")
        observer = shared.SharedStateObserver if n == 0 else shared.SharedStateObserver()
        in_hand = observer_report(observer, ONE, None)
        assert _codes(in_hand) == _codes(by_name) == {"PP711", "PP712"}
        assert not [n for n in in_hand.notes if "ran in this process" in n]
    shared = _module(OBSERVERS / "shared_state.py", "shared_state_in_hand_2")
    with pytest.raises(AssertionError, match="PP711"):
        assert_pp_safe(shared.SharedStateObserver, batch_sizes=(2,), steps=1)


class _Singleton:
    """Its copy is itself: rank 0 used to pop with the very instance, and read back the output
    the last stage's side kept on it."""

    def __init__(self) -> None:
        self.last: KeptOutput | None = None

    def __deepcopy__(self, memo: Any) -> _Singleton:
        return self

    def is_active(self, info: Any) -> bool:
        return True

    def before_grammar(self, logits: Any, info: Any) -> Any:
        return logits.float().amax(-1)

    def after_sample(self, state: Any, token_ids: Any) -> KeptOutput:
        self.last = KeptOutput(state)
        return self.last

    def from_pp_tensors(self, tensors: Any) -> KeptOutput | None:
        return self.last


def test_the_very_instance_is_rank_0s_own_copy():
    report = observer_report(_Singleton(), ONE, None)
    assert _codes(report) == {"PP707"}
    assert "did not reconstruct its PP output" in report.findings[0].message


def test_a_correct_observer_passes_in_hand_with_nothing_to_note():
    good = _module(OBSERVERS / "entropy_good.py", "entropy_good_in_hand")
    for observer in (good.EntropyObserver, good.EntropyObserver()):
        report = observer_report(observer, ONE, None)
        assert report.findings == ()
        assert not [n for n in report.notes if "ran in this process" in n]
