"""The processes a checked target starts stay in the check's hands: a garbled record stream is
one finding, a process that leaves the child's session is found and ended (a finding), the
target cannot write into ppaux's own streams through ``/proc``, and SIGTERM to ppaux ends the
child and what it started before ppaux ends. Linux (``prctl``, ``/proc``)."""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import ENV, REPO, ppaux_process

from ppaux.observer import ObserverOptions, check_observer

pytestmark = [
    pytest.mark.torch,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's prctl and /proc"),
]

GOOD = (REPO / "fixtures" / "observers" / "entropy_good.py").read_text(encoding="utf-8")
ONE = ObserverOptions(batch_sizes=(2,), steps=2)


def observer(tmp_path: Path, *, head: str = "", after_sample: str = "") -> str:
    text = GOOD.replace("import torch\n", "import torch\n" + head, 1)
    if after_sample:
        text = text.replace(
            "        return EntropyOutput(state)",
            after_sample + "        return EntropyOutput(state)",
        )
        assert after_sample in text
    (tmp_path / "obs.py").write_text(text, encoding="utf-8")
    return f"{tmp_path / 'obs.py'}:EntropyObserver"


def running(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (a zombie has)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as file:
            return file.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def prctl_get(option: int) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    if option == 37:  # PR_GET_CHILD_SUBREAPER writes into an int
        value = ctypes.c_int(-1)
        assert libc.prctl(37, ctypes.byref(value), 0, 0, 0) == 0
        return value.value
    return int(libc.prctl(option, 0, 0, 0, 0))


def test_writing_on_the_low_descriptors_misses_the_records(tmp_path):
    junk = "        import os\n        for fd in range(3, 64):\n"
    junk += "            try:\n                os.write(fd, b'JUNK')\n"
    junk += "            except OSError:\n                pass\n"
    assert check_observer(observer(tmp_path, after_sample=junk), ONE).findings == ()


def test_a_garbled_record_stream_is_one_finding(tmp_path):
    # Every descriptor it holds, the records' among them (it is not named, nor at a low number).
    junk = (
        "        import os\n        for fd in sorted(map(int, os.listdir('/proc/self/fd')))[3:]:\n"
    )
    junk += "            try:\n                os.write(fd, b'JUNK')\n"
    junk += "            except OSError:\n                pass\n"
    report = check_observer(observer(tmp_path, after_sample=junk), ONE)
    ended = [f for f in report.findings if f.code == "PP715"]
    assert [f.extra["end"] for f in ended] == ["garbled"], [f.message for f in ended]
    assert "wrote over its records" in ended[0].message


def test_a_process_started_in_a_session_of_its_own_is_ended_and_named(tmp_path):
    pid_file = tmp_path / "sleeper.pid"
    head = (
        "import subprocess\n"
        "_p = subprocess.Popen(['sleep', '120'], start_new_session=True)\n"
        f"open({str(pid_file)!r}, 'w').write(str(_p.pid))\n"
    )
    report = check_observer(observer(tmp_path, head=head), ONE)
    pid = int(pid_file.read_text(encoding="utf-8"))
    assert not running(pid)
    # Left running, as a thread left running is: a warning (PP718), killed and named.
    assert [f.code for f in report.findings] == ["PP718"]
    assert report.findings[0].extra["end"] == "outlived"
    assert f"sleep (pid {pid})" in report.findings[0].message
    # This process is as it was: dumpable, and no subreaper.
    assert prctl_get(3) == 1
    assert prctl_get(37) == 0


def test_a_grandchild_of_a_grandchild_is_ended_too(tmp_path):
    pid_file = tmp_path / "inner.pid"
    script = f"sleep 120 & echo $! > {pid_file}; wait"
    head = (
        "import subprocess\n"
        f"subprocess.Popen(['sh', '-c', {script!r}], start_new_session=True)\n"
        "import time\n"
        f"while not __import__('os').path.exists({str(pid_file)!r}):\n"
        "    time.sleep(0.01)\n"
    )
    report = check_observer(observer(tmp_path, head=head), ONE)
    pid = int(pid_file.read_text(encoding="utf-8").strip())
    assert not running(pid)
    assert [f.extra["end"] for f in report.findings if f.code == "PP718"] == ["outlived"]


def test_a_clean_target_leaves_the_process_as_it_was(tmp_path):
    before = (prctl_get(3), prctl_get(37))
    report = check_observer(observer(tmp_path), ONE)
    assert report.findings == ()
    assert (prctl_get(3), prctl_get(37)) == before


def test_the_target_cannot_write_into_ppaux_output_through_proc(tmp_path):
    write = (
        "        import os\n"
        "        with open(f'/proc/{os.getppid()}/fd/1', 'a') as f:\n"
        "            f.write('GARBAGE BEFORE THE REPORT')\n"
    )
    result = ppaux_process(
        "check-observer", observer(tmp_path, after_sample=write), "-f", "json", cwd=tmp_path
    )
    assert "GARBAGE" not in result.stdout
    document = json.loads(result.stdout)
    failed = [f for f in document["findings"] if f["code"] == "PP710"]
    assert failed and "PermissionError" in failed[0]["message"], document["findings"]


def _sleeping_check(tmp_path: Path, handler: tuple[int, object]) -> subprocess.Popen[bytes]:
    """ppaux checking a target that starts a sleeper, writes its pid and the sleeper's to
    ``pids``, then sleeps in its first hook; ppaux starts with signal ``handler[0]``'s action
    set to ``handler[1]`` (whatever pytest inherited)."""
    pids = tmp_path / "pids"
    head = (
        "import os, subprocess\n"
        "_p = subprocess.Popen(['sleep', '120'])\n"
        f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{_p.pid}}')\n"
    )
    target = observer(
        tmp_path, head=head, after_sample="        import time\n        time.sleep(600)\n"
    )
    environment = {**os.environ, "PYTHONPATH": str(REPO)}
    environment.update({k: v for k, v in ENV.items() if v is not None})
    return subprocess.Popen(
        [sys.executable, "-m", "ppaux_cli", "check-observer", target, "--timeout", "300"],
        cwd=tmp_path,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=lambda: signal.signal(*handler),
    )


def _started(pids: Path, process: subprocess.Popen[bytes]) -> tuple[int, int]:
    """The target's pid and its sleeper's, once the target has written them."""
    deadline = time.monotonic() + 120
    while not pids.exists() or len(pids.read_text(encoding="utf-8").split()) < 2:
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.1)
    worker, sleeper = map(int, pids.read_text(encoding="utf-8").split())
    return worker, sleeper


@pytest.mark.parametrize("ending", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_to_ppaux_ends_the_child_and_what_it_started(tmp_path, ending):
    process = _sleeping_check(tmp_path, (ending, signal.SIG_DFL))
    try:
        worker, sleeper = _started(tmp_path / "pids", process)
        process.send_signal(ending)
        assert process.wait(timeout=60) == -ending
        assert not running(worker)
        assert not running(sleeper)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_sighup_ignored_from_the_start_ends_nothing(tmp_path):
    # As under nohup: the run goes on through SIGHUP; SIGTERM still ends it and the target.
    process = _sleeping_check(tmp_path, (signal.SIGHUP, signal.SIG_IGN))
    try:
        worker, sleeper = _started(tmp_path / "pids", process)
        process.send_signal(signal.SIGHUP)
        with pytest.raises(subprocess.TimeoutExpired):
            process.wait(timeout=2)
        assert running(worker)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == -signal.SIGTERM
        assert not running(worker)
        assert not running(sleeper)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _frame_to_every_descriptor(message: str) -> str:
    """Code for ``after_sample`` (or a module's top) that writes one well-formed frame holding
    ``message`` (JSON, ``PID`` replaced by the process's pid) on every descriptor past 2."""
    return (
        "        import os, struct\n"
        f"        body = {message!r}.replace('PID', str(os.getpid())).encode()\n"
        "        for fd in sorted(map(int, os.listdir('/proc/self/fd')))[3:]:\n"
        "            try:\n"
        "                os.write(fd, struct.pack('>I', len(body)) + body)\n"
        "            except OSError:\n"
        "                pass\n"
    )


def test_a_well_formed_frame_that_is_no_record_is_one_finding(tmp_path):
    # JSON, an object, the child's pid: but a step without its fields.
    junk = _frame_to_every_descriptor('{"event": "step", "pid": PID, "batch_size": "x"}')
    report = check_observer(observer(tmp_path, after_sample=junk), ONE)
    ended = [f for f in report.findings if f.code == "PP715"]
    assert [f.extra["end"] for f in ended] == ["garbled"], [f.message for f in ended]
    assert "a record that is not one of the check's" in ended[0].message


def test_records_that_end_before_the_check_began_are_a_finding(tmp_path):
    # At import: the child's own 'end' record, nothing before it, then out.
    end = '{"event": "end", "pid": PID, "threads": [], "timers": []}'
    head = "def _end_now():\n" + _frame_to_every_descriptor(end)
    head += "        os._exit(0)\n_end_now()\n"
    report = check_observer(observer(tmp_path, head=head), ONE)
    [found] = [f for f in report.findings if f.code == "PP715"]
    assert found.extra["end"] == "garbled"
    assert "an 'end' record out of the check's order (before the check's start)" in found.message


def test_checks_in_threads_of_one_process_leave_each_other_alone(tmp_path):
    import threading

    target = observer(tmp_path)
    reports: list = []
    threads = [
        threading.Thread(target=lambda: reports.append(check_observer(target, ONE)))
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert [r.findings for r in reports] == [(), ()]
    assert prctl_get(3) == 1 and prctl_get(37) == 0


def test_an_object_in_hand_that_forks_is_named_and_its_copy_ends(tmp_path):
    from ppaux.observer.check import observer_report

    marker = tmp_path / "copy-ran-on"
    fork = (
        "        import os\n"
        "        if os.fork() == 0:\n"
        f"            open({str(marker)!r}, 'w').write('x')\n"
    )
    spec = observer(tmp_path, after_sample=fork)
    import importlib.util

    module_spec = importlib.util.spec_from_file_location("forking_obs", spec.split(":")[0])
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    pid = os.getpid()
    report = observer_report(module.EntropyObserver, ONE, None)
    assert os.getpid() == pid
    assert [f.extra["end"] for f in report.findings if f.code == "PP715"] == ["fork"]
    time.sleep(0.5)
    assert not marker.exists()  # the copy never ran on past the fork


def test_an_output_path_made_a_link_by_the_target_is_not_written(tmp_path):
    from helpers import cli

    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n", encoding="utf-8")
    out = tmp_path / "report.json"
    head = f"os.symlink({str(victim)!r}, {str(out)!r})\n"
    target = observer(tmp_path, head="import os\n" + head)
    result = cli("check-observer", target, "-f", "json", "-o", str(out), "--batch-size", "2")
    assert result.exit_code == 2
    assert "changed while the target ran" in result.stderr
    assert victim.read_text(encoding="utf-8") == "keep me\n"


def test_an_output_folder_moved_and_linked_by_the_target_is_not_written(tmp_path):
    from helpers import cli

    folder, elsewhere = tmp_path / "od", tmp_path / "elsewhere"
    folder.mkdir()
    elsewhere.mkdir()
    swap = (
        f"os.rename({str(folder)!r}, {str(tmp_path / 'moved')!r})\n"
        f"os.symlink({str(elsewhere)!r}, {str(folder)!r})\n"
    )
    target = observer(tmp_path, head="import os\n" + swap)
    out = folder / "new.json"
    result = cli("check-observer", target, "-f", "json", "-o", str(out), "--batch-size", "2")
    assert result.exit_code == 2
    assert f"changed while the target ran (its folder {folder})" in result.stderr
    assert list(elsewhere.iterdir()) == [] and list((tmp_path / "moved").iterdir()) == []


def test_an_object_in_hand_that_leaves_a_thread_running_is_named(tmp_path):
    import importlib.util

    from ppaux.observer.check import observer_report

    start = (
        "        import threading, time\n"
        "        threading.Thread(target=time.sleep, args=(3,), name='lingers').start()\n"
    )
    path = observer(tmp_path, after_sample=start).split(":")[0]
    module_spec = importlib.util.spec_from_file_location("lingering_obs", path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    report = observer_report(module.EntropyObserver, ONE, None)
    ended = [f for f in report.findings if f.code == "PP718"]
    assert [f.extra["end"] for f in ended] == ["threads"]
    assert "lingers" in ended[0].message
