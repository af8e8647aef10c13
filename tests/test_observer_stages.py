"""A check's child that ends before its last record is said to have ended at its stage: while
it was still loading the target, while ppaux set up the paths after it, or at a step (in a
method or between them); a signal that no code of the target's raised names who sends it."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import REPO

from ppaux.observer import ObserverOptions, check_observer

pytestmark = pytest.mark.torch

GOOD = (REPO / "fixtures" / "observers" / "entropy_good.py").read_text(encoding="utf-8")
ONE = ObserverOptions(batch_sizes=(2,), steps=1)

KILLED_AT_IMPORT = """\
import os, signal
os.kill(os.getpid(), signal.SIGKILL)
"""

#: A CPU-time limit just above what the process has used, then a loop: the kernel kills it.
OUT_OF_CPU_AT_IMPORT = """\
import resource, time
used = int(time.process_time()) + 1
resource.setrlimit(resource.RLIMIT_CPU, (used, used))
while True:
    pass
"""

#: The set-up after loading resolves the device through ppaux.replay: a target may change
#: what runs in its own process (never the verdict), here to end it there.
KILLED_IN_SET_UP = """\
import os, signal
import ppaux.replay


def _resolve(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)


ppaux.replay.resolve_device = _resolve
"""

HUNG_AT_IMPORT = """\
import time
time.sleep(3600)
"""


def _module(tmp_path: Path, top: str) -> Path:
    """The good observer, ``top`` run at the end of its module."""
    path = tmp_path / "obs.py"
    path.write_text(GOOD + "\n\n" + top, encoding="utf-8")
    return path


def _ended(path: Path, options: ObserverOptions = ONE) -> tuple[str, str]:
    report = check_observer(f"{path}:EntropyObserver", options)
    [found] = [f for f in report.findings if f.code == "PP715"]
    return found.extra["end"], found.message


@pytest.mark.parametrize(
    "top", [KILLED_AT_IMPORT, OUT_OF_CPU_AT_IMPORT], ids=["killed", "out_of_cpu"]
)
def test_a_kill_while_the_target_loads_says_it_was_loading(tmp_path, top):
    end, message = _ended(_module(tmp_path, top))
    assert end == "signal"
    assert message.startswith(
        "the target's process was killed by signal SIGKILL while still loading the target "
        "(importing its module, making the observer), before it sent every record: the "
        "kernel killed it (at a hard CPU-time limit, RLIMIT_CPU, or out of memory), or "
        "another process did;"
    )


def test_a_kill_in_the_set_up_after_loading_says_so(tmp_path):
    end, message = _ended(_module(tmp_path, KILLED_IN_SET_UP))
    assert end == "signal"
    assert "killed by signal SIGKILL after the target loaded, while ppaux set up the paths" in (
        message
    )
    assert "before the first step" in message
    assert "while still loading" not in message


def test_a_kill_in_a_step_names_the_method_and_the_step(tmp_path):
    marker = "        return EntropyOutput(state)"
    killing = "        import os, signal\n        os.kill(os.getpid(), signal.SIGKILL)\n"
    path = tmp_path / "obs.py"
    path.write_text(GOOD.replace(marker, killing + marker), encoding="utf-8")
    end, message = _ended(path)
    assert end == "signal"
    assert "killed by signal SIGKILL while after_sample ran at batch size 2, step 0," in message
    assert "loading" not in message and "set up" not in message


def test_a_hang_while_the_target_loads_says_it_was_loading(tmp_path):
    options = ObserverOptions(batch_sizes=(2,), steps=1, timeout_s=1.0)
    end, message = _ended(_module(tmp_path, HUNG_AT_IMPORT), options)
    assert end == "timeout"
    assert "while still loading the target (importing its module, making the observer)" in (message)
