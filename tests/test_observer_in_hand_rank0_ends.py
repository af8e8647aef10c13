"""With the object in hand, what the target does in rank 0's copy (:mod:`ppaux.observer.handapart`)
is its failure as in the check's child: a fork made in ``from_pp_tensors`` (which runs only in
rank 0's copy) is PP715 'fork' and the fork's copy runs no further than the method that forked;
a thread started there and left running is PP718 (a warning), named "(in rank 0's process)",
as the check of the same file given by name reports it."""

from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO

from ppaux.observer import ObserverOptions, check_observer, observer_report

pytestmark = [
    pytest.mark.torch,
    pytest.mark.skipif(not hasattr(os, "fork"), reason="rank 0's copy is forked"),
]

GOOD = (REPO / "fixtures" / "observers" / "entropy_good.py").read_text(encoding="utf-8")
ONE = ObserverOptions(batch_sizes=(2,), steps=2)
REBUILD = '        return EntropyOutput(tensors["entropy"])'


def _observer(tmp_path: Path, name: str, in_rank0: str) -> tuple[str, Any]:
    text = GOOD.replace(REBUILD, in_rank0 + REBUILD)
    assert in_rank0 in text
    path = tmp_path / f"{name}.py"
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return f"{path}:EntropyObserver", module.EntropyObserver


def _ends(report: Any) -> list[str]:
    return [f.extra["end"] for f in report.findings if f.code == "PP715"]


def test_a_fork_in_rank_0s_copy_is_a_fork_and_runs_no_further_than_its_step(tmp_path):
    calls = tmp_path / "calls"
    fork = (
        "        import os\n"
        f"        open({str(calls)!r}, 'a').write(f'{{os.getpid()}}\\n')\n"
        "        os.fork()\n"
    )
    by_name, in_hand = _observer(tmp_path, "forks_in_rank0", fork)
    pid = os.getpid()
    report = observer_report(in_hand, ONE, None)
    assert os.getpid() == pid
    assert _ends(report) == ["fork"]
    message = next(f.message for f in report.findings if f.code == "PP715")
    assert message.startswith(
        "the target forked: 2 copies of rank 0's process were ended before it answered;"
    )
    assert [f.code for f in report.findings if f.code != "PP715"] == []
    time.sleep(0.3)
    callers = calls.read_text(encoding="utf-8").split()
    # Rank 0's own process called it at each step; no fork reached a later step's call.
    assert len(callers) == 2 and len(set(callers)) == 1 and int(callers[0]) != pid
    # By name, the forked copies are the target's failure too (ended as forks, or found
    # still running at the end).
    named = check_observer(by_name, ONE)
    ends = _ends(named) + [f.extra["end"] for f in named.findings if f.code == "PP718"]
    assert ends and set(ends) <= {"fork", "outlived"}


def test_a_thread_left_running_in_rank_0s_copy_is_named_as_by_name(tmp_path):
    start = (
        "        import threading, time\n"
        "        threading.Thread(target=time.sleep, args=(5,), name='rank0-lingers').start()\n"
    )
    by_name, in_hand = _observer(tmp_path, "lingers_in_rank0", start)
    for report in (observer_report(in_hand, ONE, None), check_observer(by_name, ONE)):
        left = [f for f in report.findings if f.code == "PP718"]
        assert [(f.severity.value, f.extra["end"]) for f in left] == [("warning", "threads")]
        assert "rank0-lingers (in rank 0's process)" in left[0].message
        assert not [f for f in report.findings if f.code == "PP715"], report.findings


def test_a_clean_observer_in_hand_ends_nothing(tmp_path):
    _, in_hand = _observer(tmp_path, "clean_in_rank0", "")
    report = observer_report(in_hand, ONE, None)
    assert report.findings == ()
