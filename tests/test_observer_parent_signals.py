"""A target that signals ppaux's process (its parent, or the parent's whole process group) while
the check runs is a finding about the target, whatever the signal, SIGABRT and the faults
included; the same signal from anybody else still does what it did. SIGKILL cannot be caught:
it ends ppaux, never with a pass. Linux (``sigtimedwait`` gives the sender)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import ENV, REPO

pytestmark = [
    pytest.mark.torch,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sender of a signal"),
]

GOOD = (REPO / "fixtures" / "observers" / "entropy_good.py").read_text(encoding="utf-8")


def observer(tmp_path: Path, after_sample: str) -> str:
    text = GOOD.replace(
        "        return EntropyOutput(state)",
        after_sample + "        return EntropyOutput(state)",
    )
    assert after_sample in text
    (tmp_path / "obs.py").write_text(text, encoding="utf-8")
    return f"{tmp_path / 'obs.py'}:EntropyObserver"


def started(target: str) -> subprocess.Popen[str]:
    """``ppaux check-observer TARGET`` in a process group of its own (a signal to the group
    reaches nothing of the test's)."""
    environment = {**os.environ, **ENV}
    environment["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPO), os.environ.get("PYTHONPATH")])
    )
    return subprocess.Popen(
        [sys.executable, "-m", "ppaux_cli", "check-observer", target, "--batch-size", "2"],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


@pytest.mark.parametrize(
    "call",
    [
        "os.kill(os.getppid(), signal.SIGABRT)",
        "os.kill(os.getppid(), signal.SIGSEGV)",
        "os.killpg(os.getpgid(os.getppid()), signal.SIGBUS)",
    ],
)
def test_a_fault_signal_the_target_sends_its_parent_is_a_finding(tmp_path, call):
    target = observer(tmp_path, f"        import os, signal\n        {call}\n")
    process = started(target)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 1, (process.returncode, err[-2000:])
    name = call.rpartition(".")[2].rstrip(")")
    assert f"ppaux's process received {name}" in " ".join(out.split())


def test_a_fault_signal_from_another_process_still_ends_ppaux(tmp_path):
    marker = tmp_path / "running"
    target = observer(
        tmp_path,
        f"        import pathlib, time\n        pathlib.Path({str(marker)!r}).touch()\n"
        "        time.sleep(0.5)\n",
    )
    process = started(target)
    deadline = time.monotonic() + 240
    while not marker.exists() and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    assert marker.exists()
    process.send_signal(signal.SIGABRT)  # from this process: not the target's
    process.communicate(timeout=300)
    assert process.returncode == -signal.SIGABRT


def test_sigkill_from_the_target_never_ends_in_a_pass(tmp_path):
    target = observer(tmp_path, "        import os, signal\n        os.kill(os.getppid(), 9)\n")
    process = started(target)
    process.communicate(timeout=300)
    assert process.returncode == -signal.SIGKILL
