"""A target that attacks the check's own channels from inside its child (the hook slot's time,
records nested past the parser's depth, forged fields of a record) is a PP715 finding with the
report written: it never hangs the check, never extends its deadline, never crashes the judge.
The targets are in ``tests/hostile_records.py``."""

from __future__ import annotations

import sys
import time

import pytest
from helpers import REPO

from ppaux.limits import Limits
from ppaux.observer import ObserverOptions, check_observer
from ppaux.suggestions import RaiseLimit
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
    assert "did not finish a step within its timeout (1 s, whatever it sent meanwhile)" in message


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
    assert "an 'end' record whose 'timers' is not what the check sends" in message


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


def flooded(name: str, **limits: int) -> tuple[str, str, tuple]:
    report = check_observer(f"{TARGETS}:{name}", FAST, limits=Limits(**limits))
    [found] = [f for f in report.findings if f.code == "PP715"]
    return found.extra["end"], found.message, found.suggestions


def test_a_record_past_max_record_bytes_ends_the_run_before_it_is_read():
    end, message, suggested = flooded("BigRecord")
    assert end == "flooded"
    assert message.startswith(
        "the target's process sent a record longer than 16,777,216 bytes (before the first "
        "step's record; limit max_record_bytes reached)"
    )
    assert suggested == (RaiseLimit("max_record_bytes", 16 << 20),)


def test_records_past_max_step_records_end_the_run():
    end, message, suggested = flooded("ManyRecords")
    assert end == "flooded"
    assert message.startswith(
        "the target's process sent more than 256 records in one step (before the first "
        "step's record; limit max_step_records reached)"
    )
    assert suggested == (RaiseLimit("max_step_records", 256),)


def test_max_step_records_is_the_runs_own():
    end, message, _ = flooded("ManyRecords", max_step_records=10)
    assert end == "flooded"
    assert "sent more than 10 records in one step" in message


def test_a_run_past_max_run_record_bytes_ends_there():
    end, message, suggested = flooded("ForgedKey", max_run_record_bytes=100)
    assert end == "flooded"
    assert "sent more than 100 bytes of records in all" in message
    assert "limit max_run_record_bytes reached" in message
    assert suggested == (RaiseLimit("max_run_record_bytes", 100),)


def test_a_good_observer_past_a_small_max_record_bytes_names_the_step_before():
    report = check_observer(
        str(REPO / "fixtures" / "observers" / "entropy_good.py") + ":EntropyObserver",
        ObserverOptions(batch_sizes=(1,), steps=2, timeout_s=5.0),
        limits=Limits(max_record_bytes=5000),
    )
    [found] = [f for f in report.findings if f.code == "PP715"]
    assert found.extra["end"] == "flooded"
    assert "sent a record longer than 5,000 bytes (before the first step's record" in (
        found.message
    )
    # The bound was the user's, below its default: the target is not blamed for it.
    assert found.message.startswith("the check's process sent a record longer than 5,000")
    assert "set below its default of 16,777,216 for this run" in found.message
    assert "the target's" not in found.message


def test_records_the_check_sends_do_not_move_the_deadline():
    started = time.monotonic()
    [(end, message)] = ends("RecordHeartbeat")
    assert time.monotonic() - started < 120
    assert end == "timeout"
    assert "did not finish a step within its timeout (1 s, whatever it sent meanwhile)" in message


@pytest.mark.parametrize(
    ("name", "said"),
    [
        (
            "StepOutOfRange",
            "a 'no_output' record out of the check's order (before the first step's record)",
        ),
        (
            "StepTwice",
            "a 'step' record out of the check's order (after the record of batch size 1, step 0)",
        ),
        ("EndTooSoon", "an 'end' record out of the check's order (before the first step's record)"),
        (
            "ForgedBatchSizeType",
            "a 'no_output' record whose 'batch_size' is not what the check sends",
        ),
        ("ForgedKey", "a field 'extra' that a 'made' record does not have"),
    ],
)
def test_a_record_out_of_order_or_with_a_forged_field_is_garbled(name, said):
    [(end, message)] = ends(name)
    assert end == "garbled"
    assert said in message


def test_json_that_names_no_process_is_garbled_at_the_first_frame():
    [(end, message)] = ends("PidlessFrames")
    assert end == "garbled"
    assert "a record that is not one of the check's (no integer 'pid')" in message


def test_records_of_other_processes_are_one_fork_finding_naming_how_many():
    [(end, message)] = ends("ForkFrames")
    assert end == "fork"
    assert "3 copies of the checking process tried to answer for it and were stopped" in message


def test_records_of_other_processes_count_against_max_step_records(monkeypatch):
    monkeypatch.setenv("PPAUX_FORK_FRAMES", "300")
    report = check_observer(f"{TARGETS}:ForkFrames", FAST)
    ended = {f.extra["end"]: f.message for f in report.findings if f.code == "PP715"}
    assert "sent more than 256 records in one step" in ended["flooded"]


def test_a_record_that_would_cost_more_than_its_budget_to_read_is_flooded():
    end, message, suggested = flooded("DenseRecord")
    assert end == "flooded"
    # Four times max_record_bytes (16 MiB), and 80 KiB per request of batch size 1.
    assert message.startswith(
        "the target's process sent a record that would take more than 67,190,784 bytes of "
        "memory to read"
    )
    assert suggested == (RaiseLimit("max_record_bytes", 16 << 20),)
