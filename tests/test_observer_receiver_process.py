"""The torch-distributed transport's receiver is ppaux's own process: it is never named as one
the target left behind, it waits for the next message as long as the target takes between
messages (a slow step is not a closed connection), and it starts with the warning filters the
check's child starts with."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from helpers import REPO

from ppaux.observer import ObserverOptions, check_observer

pytestmark = [pytest.mark.torch, pytest.mark.distributed]

GOOD = (REPO / "fixtures" / "observers" / "entropy_good.py").read_text(encoding="utf-8")
MARK = "        return EntropyOutput(state)"


def observer_file(tmp_path: Path, after_sample: str) -> Path:
    """The good observer, ``after_sample`` run at the top of its ``after_sample``."""
    path = tmp_path / "obs.py"
    path.write_text(GOOD.replace(MARK, after_sample + MARK), encoding="utf-8")
    return path


def _ends(report: object) -> list[str]:
    return [f.extra["end"] for f in report.findings if f.code == "PP715"]  # type: ignore[attr-defined]


def test_the_receiver_is_not_a_process_the_target_left_behind(tmp_path):
    path = observer_file(tmp_path, "        import os\n        os._exit(3)\n")
    report = check_observer(
        f"{path}:EntropyObserver",
        ObserverOptions(transport="torch-distributed", batch_sizes=(1,), steps=2, timeout_s=60.0),
    )
    assert _ends(report) == ["exit"], [f.message for f in report.findings]


def test_a_step_slower_than_the_wires_timeout_is_not_a_closed_connection(tmp_path):
    # The step sleeps 5 s: past the wire's own timeout (3 s) between two messages, within the
    # step's allowance (the timeout plus 5 s). The default wire passes it; so must this.
    path = observer_file(tmp_path, "        import time\n        time.sleep(5)\n")
    report = check_observer(
        f"{path}:EntropyObserver",
        ObserverOptions(transport="torch-distributed", batch_sizes=(1,), steps=1, timeout_s=3.0),
    )
    assert [(f.code, f.message) for f in report.findings] == []


def test_the_receiver_gets_the_users_pythonwarnings_as_the_childs_w_options(monkeypatch):
    import torch

    from ppaux.replay import DistributedWire, runs_boot

    monkeypatch.setenv("PYTHONWARNINGS", "ignore::ImportWarning,always::UserWarning")
    wire = DistributedWire(torch.device("cpu"), timeout_s=30.0)
    try:
        process = wire._spawn()
        argv: list[str] = []
        for _ in range(100):  # read once it runs (it waits for its peer meanwhile)
            with open(f"/proc/{process.pid}/cmdline", "rb") as file:
                argv = file.read().decode().split("\0")[:-1]
            if argv or process.poll() is not None:
                break
            time.sleep(0.1)
    finally:
        wire._reset()
    assert argv[1:6] == ["-I", "-W", "ignore::ImportWarning", "-W", "always::UserWarning"]
    assert argv[6] == "-c"
    assert runs_boot(argv)
