"""With the object in hand, rank 0's process cannot end the test process: a signal it sends its
parent (``os.kill(os.getppid(), ...)``: SIGTERM, SIGINT, SIGUSR1, SIGABRT) is a finding about
the target (PP715 ``signalled``), the test process goes on and prints no traceback, rank 0's
process fresh or forked; each distinct signal of a flood is named; processes rank 0 started
are killed with its process group and named (PP718 ``outlived``), as by name. Linux (the
sender of a signal, the subreaper)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers import REPO
from hypothesis import given
from hypothesis import strategies as st

from ppaux.observer import ObserverOptions, observer_report
from ppaux.observer.child import ChildEnd
from ppaux.observer.endings import left_behind
from ppaux.observer.signals import signal_name

pytestmark = [
    pytest.mark.torch,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sender of a signal"),
]

GOOD = (REPO / "fixtures" / "observers" / "entropy_good.py").read_text(encoding="utf-8")
REBUILD = '        return EntropyOutput(tensors["entropy"])'
SIGNALS = ("SIGTERM", "SIGINT", "SIGUSR1", "SIGABRT")
#: Eight signals of different kinds: stopping, taken, faults.
FLOOD = ("SIGUSR1", "SIGUSR2", "SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGALRM", "SIGABRT")


def _module(tmp_path: Path, name: str, in_rank0: str) -> None:
    text = GOOD.replace(REBUILD, in_rank0 + REBUILD)
    assert in_rank0 in text
    (tmp_path / f"{name}.py").write_text(text, encoding="utf-8")


#: Checks each module named on the command line in hand, in a process of its own: the test
#: process is never the one a regression would end.
SCRIPT = textwrap.dedent(
    """
    import importlib, json, sys
    sys.path.insert(0, sys.argv[1])
    from ppaux.testing import pp_safety_report
    for name in sys.argv[2:]:
        report = pp_safety_report(
            importlib.import_module(name).EntropyObserver, batch_sizes=(2,), steps=2
        )
        found = [[f.code, f.extra.get("end"), f.message] for f in report.findings]
        print(json.dumps([name, found]), flush=True)
    print("done", flush=True)
    """
)


@pytest.mark.parametrize("fork", ["1", "0"], ids=["forked", "fresh"])
def test_signals_rank_0_sends_its_parent_are_findings_and_the_test_process_goes_on(tmp_path, fork):
    names = []
    for sig in SIGNALS:
        _module(
            tmp_path,
            sig.lower(),
            f"        import os, signal\n        os.kill(os.getppid(), signal.{sig})\n",
        )
        names.append(sig.lower())
    kills = "".join(f"            os.kill(os.getppid(), signal.{sig})\n" for sig in FLOOD)
    _module(tmp_path, "flood", f"        import os, signal\n        if True:\n{kills}")
    names.append("flood")
    environment = {**os.environ, "PPAUX_TEST_RANK0_FORK": fork}
    environment["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPO), os.environ.get("PYTHONPATH")])
    )
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path), *names],
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        start_new_session=True,  # a signal to the group reaches nothing of the test's
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-3000:])
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[-1] == "done"
    reports = dict(json.loads(line) for line in lines[:-1])
    for sig in SIGNALS:
        found = reports[sig.lower()]
        assert [(code, end) for code, end, _ in found] == [("PP715", "signalled")], found
        assert found[0][2].startswith(f"ppaux's process received {sig} while the target ran")
    flood = reports["flood"]
    assert [(code, end) for code, end, _ in flood] == [("PP715", "signalled")], flood
    named = flood[0][2].removeprefix("ppaux's process received ").split(" while")[0]
    assert sorted(named.split(", ")) == sorted(FLOOD)


def test_processes_rank_0_starts_are_killed_and_named(tmp_path, monkeypatch):
    pids = tmp_path / "pids"
    spawn = (
        "        import subprocess\n"
        f"        with open({str(pids)!r}, 'a') as file:\n"
        "            for session in (False, True):\n"
        "                started = subprocess.Popen(['sleep', '60'], start_new_session=session)\n"
        "                file.write(f'{started.pid}\\n')\n"
    )
    _module(tmp_path, "spawns_in_rank0", spawn)
    monkeypatch.syspath_prepend(str(tmp_path))
    import spawns_in_rank0  # type: ignore[import-not-found]

    report = observer_report(
        spawns_in_rank0.EntropyObserver, ObserverOptions(batch_sizes=(2,), steps=1), None
    )
    left = [f for f in report.findings if f.code == "PP718"]
    assert [(f.severity.value, f.extra["end"]) for f in left] == [("warning", "outlived")]
    started = [int(pid) for pid in pids.read_text(encoding="utf-8").split()]
    assert len(started) == 2
    for pid in started:
        assert f"(pid {pid})" in left[0].message
    time.sleep(0.2)
    for pid in started:  # killed and reaped: gone
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert not [f for f in report.findings if f.code == "PP715"], report.findings


@given(
    st.lists(
        st.sampled_from(sorted(signal_name(n) for n in signal.valid_signals())),
        unique=True,
        min_size=1,
    )
)
def test_every_distinct_signal_is_named(names):
    (ending,) = left_behind(ChildEnd(signalled=list(names)))
    said = ending.text.removeprefix("ppaux's process received ").split(" while the target")[0]
    assert said.split(", ") == names


def test_past_64_signals_the_rest_are_counted():
    many = ChildEnd(signalled=[f"SIGRTMIN+{n}" for n in range(70)])
    (ending,) = left_behind(many)
    assert "SIGRTMIN+63" in ending.text and "SIGRTMIN+64" not in ending.text
    assert "6 more" in ending.text
