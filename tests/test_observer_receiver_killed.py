"""A target that kills the torch-distributed receiver (a process its own process started) is
told as that: one finding naming the signal, and no difference in the requests, whose later
commits the stopped path never made. Rank 0's own process, which the child started too, is
killed with it and is told apart."""

from __future__ import annotations

from ppaux.observer import ObserverOptions, check_observer

_KILLS_ITS_CHILDREN = """
import os, signal, sys
sys.path.insert(0, {fixtures!r})
from entropy_good import EntropyObserver, EntropyOutput

def _children():
    me = os.getpid()
    found = []
    for task in os.listdir(f"/proc/{{me}}/task"):
        with open(f"/proc/{{me}}/task/{{task}}/children") as listed:
            found += [int(pid) for pid in listed.read().split()]
    return found

class KillsPeer(EntropyObserver):
    def after_sample(self, state, token_ids):
        for pid in _children():
            os.kill(pid, signal.SIGKILL)
        return EntropyOutput(state)
"""


def test_a_receiver_the_target_killed_is_one_finding_naming_the_signal(tmp_path):
    from pathlib import Path

    fixtures = Path(__file__).resolve().parent.parent / "fixtures" / "observers"
    (tmp_path / "kills.py").write_text(_KILLS_ITS_CHILDREN.format(fixtures=str(fixtures)))
    report = check_observer(
        f"{tmp_path / 'kills.py'}:KillsPeer",
        ObserverOptions(transport="torch-distributed", batch_sizes=(1,), steps=2, timeout_s=60.0),
    )
    assert [f.code for f in report.findings] == ["PP709", "PP708"]
    assert report.findings[0].message.startswith(
        "the torch-distributed transport fails on the receiver: SIGKILL: the receiving process "
        "was ended by SIGKILL; ppaux never signals it during a transfer, so the checked code or "
        "another process did (batch size 1, step 0)"
    )
    # Rank 0's process is one of the children it killed: seen at the next step that needs it.
    assert report.findings[1].message.startswith(
        "rank 0's pop raises ProcessEnded: rank 0's process ended (killed by signal SIGKILL) "
        "after it answered the step before, before this step's pop began (batch size 1, step 1)"
    )
