"""A target that attacks the check's own channels from inside its child (the hook slot's time,
records nested past the parser's depth, forged fields of a record) is a PP715 finding with the
report written: it never hangs the check, never extends its deadline, never crashes the judge.
The targets are in ``tests/hostile_records.py``."""

from __future__ import annotations

import sys
import time

import pytest
from helpers import REPO

from ppaux.observer import ObserverOptions, check_observer
from ppaux.testing import assert_pp_safe

pytestmark = [
    pytest.mark.torch,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and memfd are Linux's"),
]

TARGETS = REPO / "tests" / "hostile_records.py"
FAST = ObserverOptions(batch_sizes=(1,), steps=1, timeout_s=1.0)


def ends(name: str, options: ObserverOptions = FAST) -> list[tuple[str, str]]:
    report = check_observer(f"{TARGETS}:{name}", options)
    return [(f.extra["end"], f.message) for f in report.findings if f.code == "PP715"]


@pytest.mark.parametrize("name", ["InfiniteSlotTime", "FutureSlotTime"])
def test_a_slot_time_past_the_parents_clock_does_not_move_the_deadline(name):
    started = time.monotonic()
    [(end, message)] = ends(name)
    # The child starts (60 s allowed) then hangs: killed once its timeout and grace (1 + 5 s)
    # pass, not an hour later.
    assert time.monotonic() - started < 120
    assert end == "timeout"
    assert "sent nothing for more than its timeout (1 s)" in message


def test_a_frame_nested_past_the_parsers_depth_is_garbled():
    [(end, message)] = ends("DeepFrame")
    assert end == "garbled"
    assert "a frame of JSON nested deeper than it can be read" in message


def test_a_slot_nested_past_the_parsers_depth_names_no_hook():
    [(end, message)] = ends("DeepSlotThenExit")
    assert end == "exit"
    assert "exited with status 3" in message
    assert "while after_sample ran" not in message


@pytest.mark.parametrize("name", ["TimerOfADict", "TimerOfAString"])
def test_a_forged_timer_is_garbled_not_an_internal_error(name):
    [(end, message)] = ends(name)
    assert end == "garbled"
    assert "a timer whose seconds are not a finite number" in message


def test_assert_pp_safe_raises_an_assertion_for_a_deep_frame():
    with pytest.raises(AssertionError, match="PP715"):
        assert_pp_safe(f"{TARGETS}:DeepFrame", batch_sizes=(1,), steps=1)


@pytest.mark.parametrize("name", ["UnknownEvent", "JunkHeartbeat"])
def test_a_record_of_an_event_not_the_checks_is_garbled_and_moves_no_deadline(name):
    started = time.monotonic()
    [(end, message)] = ends(name)
    assert time.monotonic() - started < 120
    assert end == "garbled"
    assert "an event that is not the check's ('zz')" in message


def test_a_closed_records_descriptor_is_an_exit_without_ppauxs_traceback():
    said: list[bytes] = []
    report = check_observer(f"{TARGETS}:ClosesRecords", FAST, on_output=said.append)
    [found] = [f for f in report.findings if f.code == "PP715"]
    assert found.extra["end"] == "exit"
    assert b"Traceback" not in b"".join(said)
