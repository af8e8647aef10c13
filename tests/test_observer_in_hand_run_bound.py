"""Rank 0's answers in hand are bounded at each step (``timeout_s``) and over the whole run, as
the CLI's check bounds its run (:func:`ppaux.observer.handapart.run_bound`)."""

from __future__ import annotations

import os
import socket
import threading
import time
from typing import Any

import pytest

from ppaux.observer.apart import RankZero, _receive, send
from ppaux.observer.handapart import HandRankZero, run_bound
from ppaux.observer.options import ObserverOptions


def _slow_rank0(delay: float, run_s: float | None) -> tuple[HandRankZero, Any]:
    """A rank 0 that answers each step after ``delay`` seconds."""
    ours, theirs = socket.socketpair()
    told, tell = os.pipe()
    os.close(tell)
    hand = HandRankZero(RankZero(ours, 0), told)
    hand.whole(1.0, run_s)

    def peer() -> None:
        with theirs:
            while True:
                try:
                    _receive(theirs)
                except (OSError, EOFError):
                    return
                time.sleep(delay)
                try:
                    send(theirs, {"events": []}, [])
                except OSError:
                    return

    threading.Thread(target=peer, daemon=True).start()
    return hand, (ours, told)


def _answers(hand: HandRankZero, steps: int) -> list[dict[str, Any]]:
    answers = []
    for _ in range(steps):
        hand.send({})
        answers.append(hand.answer())
    return answers


@pytest.mark.parametrize("run_s", [None, 1.0], ids=["steps only", "whole run"])
def test_rank_0_slow_within_each_step_is_stopped_by_the_runs_bound(run_s):
    hand, (sock, told) = _slow_rank0(0.4, run_s)
    try:
        answers = _answers(hand, 3)  # 0.4 s a step: within 1 s each, 1.2 s in all
    finally:
        sock.close()
        os.close(told)
    faults = [a for a in answers if "fault" in a]
    if run_s is None:
        assert not faults
    else:
        assert len(faults) == 1 and answers[-1] is faults[0]
        assert "within the run's 1 s" in str(faults[0])


def test_the_runs_bound_is_the_clis_parts():
    options = ObserverOptions(batch_sizes=(1, 4), steps=3, timeout_s=2.0)
    assert run_bound(options, False) == (2 * 3 * 2 + 4) * 2.0
    assert run_bound(options, True) == (2 * 1000 + 4) * 2.0
