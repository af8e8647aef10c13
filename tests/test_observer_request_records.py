"""A batch's requests cross in records of at most 256 requests each: the parent never reads a
record that grows with the batch, and the requests past the first 256 are judged as the
first ones are."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from helpers import OBSERVER_START as START
from hypothesis import given
from hypothesis import strategies as st

from ppaux.observer import ObserverOptions
from ppaux.observer.judge import Judge
from ppaux.observer.protocol import Protocol

REPO = Path(__file__).resolve().parent.parent
SAME = {".x": {"kind": "value", "type": "int", "text": "1", "key": "1"}}
OTHER = {".x": {"kind": "value", "type": "int", "text": "2", "key": "2"}}


def step(size: int, index: int, count: int) -> dict:
    return {
        "event": "step",
        "batch_size": size,
        "step": index,
        "sent": ["x"],
        "single": None,
        "pp": None,
        "output_type": "Out",
        "output": {},
        "rebuilt_type": "Out",
        "rebuilt": {},
        "single_reqs": [SAME] * count,
        "pp_reqs": [SAME] * count,
    }


def reqs(size: int, index: int, first: int, pp: list[dict]) -> dict:
    return {
        "event": "reqs",
        "batch_size": size,
        "step": index,
        "first": first,
        "single_reqs": [SAME] * len(pp),
        "pp_reqs": pp,
    }


def test_the_next_requests_of_a_step_are_taken_without_moving_the_run():
    protocol = Protocol((600,), 2, 10)
    for record in ({"event": "ready"}, START, step(600, 0, 256)):
        assert protocol.take(record)
    assert protocol.take(reqs(600, 0, 256, [SAME] * 256)) is False
    assert protocol.take(reqs(600, 0, 512, [SAME] * 88)) is False
    assert protocol.where() == "after the record of batch size 600, step 0"


@pytest.mark.parametrize(
    "records",
    [
        [reqs(600, 0, 0, [SAME])],  # before any step
        [step(600, 0, 256), reqs(600, 0, 300, [SAME])],  # not where the last stopped
        [step(600, 0, 256), reqs(600, 1, 256, [SAME])],  # another step's
        [step(600, 0, 256), reqs(600, 0, 256, [SAME] * 345)],  # past the batch
        [step(600, 0, 256), reqs(600, 0, 256, [])],  # none
        [step(600, 0, 256), step(600, 1, 256), reqs(600, 0, 256, [SAME])],
    ],
)
def test_requests_out_of_place_are_refused(records):
    protocol = Protocol((600,), 2, 10)
    protocol.take({"event": "ready"})
    protocol.take(START)
    with pytest.raises(ValueError, match="a 'reqs' record out of the check's order"):
        for record in records:
            protocol.take(record)


def judged(pp_late: list[dict]) -> Judge:
    judge = Judge(
        target="obs.py:Obs",
        transport="wire",
        impl="ppaux",
        sender="ppaux",
        batch_sizes=(300,),
        steps=1,
    )
    judge.take(START)
    judge.take(step(300, 0, 256))
    judge.take(reqs(300, 0, 256, pp_late))
    return judge


def test_a_difference_in_a_later_record_is_the_steps_by_its_request_number():
    judge = judged([SAME] * 43 + [OTHER])
    report = judge.report()
    [found] = [f for f in report.findings if f.code == "PP712"]
    assert found.message.startswith(".x of request 299 after consume differs (value)")
    [entry] = report.data["steps"][0]["differences"]
    assert entry["where"] == "request 299"
    assert judge.rows == [("300", "0", "x", "1 difference(s)")]


@given(st.lists(st.booleans(), min_size=1, max_size=44))
def test_every_differing_request_of_a_later_record_is_counted_in_the_steps_row(differ):
    judge = judged([OTHER if d else SAME for d in differ])
    wheres = [d["where"] for d in judge.report().data["steps"][0]["differences"]]
    assert wheres == [f"request {256 + i}" for i, d in enumerate(differ) if d]
    verdict = judge.rows[0][3]
    assert verdict == (f"{sum(differ)} difference(s)" if any(differ) else "same on both paths")


def _records_of(batch_size: int, monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """The records an in-process check of the worked example at ``batch_size`` sends."""
    from ppaux.observer.check import check_loaded
    from ppaux.observer.target import observer_from

    sys.path.insert(0, str(REPO / "fixtures" / "observers"))
    try:
        from entropy_good import EntropyObserver
    finally:
        sys.path.pop(0)
    taken: list[dict] = []
    original = Judge.take

    def take(self: Judge, message: dict) -> None:
        taken.append(message)
        original(self, message)

    monkeypatch.setattr(Judge, "take", take)
    report = check_loaded(
        observer_from(EntropyObserver, "EntropyObserver"),
        ObserverOptions(batch_sizes=(batch_size,), steps=2),
    )
    assert report.findings == ()
    return taken


def test_no_record_describes_more_than_256_requests(monkeypatch):
    taken = _records_of(600, monkeypatch)
    shape = [
        (m["event"], m["step"], m.get("first", 0), len(m["single_reqs"]), len(m["pp_reqs"]))
        for m in taken
        if "single_reqs" in m
    ]
    assert shape == [
        ("step", 0, 0, 256, 256),
        ("reqs", 0, 256, 256, 256),
        ("reqs", 0, 512, 88, 88),
        ("step", 1, 0, 256, 256),
        ("reqs", 1, 256, 256, 256),
        ("reqs", 1, 512, 88, 88),
        ("requests", 1, 0, 256, 256),
        ("reqs", 1, 256, 256, 256),
        ("reqs", 1, 512, 88, 88),
    ]
