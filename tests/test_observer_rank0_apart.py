"""Rank 0's side of a check runs in a process of its own that imported the target separately,
as sglang's rank 0 is another process: state the last stage's observer keeps at module or class
level is not there (:mod:`ppaux.observer.apart`), and none of rank 0's methods runs in the
last stage's process."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import REPO

from ppaux.observer import ObserverOptions, check_observer

pytestmark = pytest.mark.torch

SHARED = REPO / "fixtures" / "observers" / "shared_state.py"
GOOD = REPO / "fixtures" / "observers" / "entropy_good.py"
ONE = ObserverOptions(batch_sizes=(2,), steps=2)


def _findings(report):
    return [(item.code, item.message) for item in report.findings]


def test_a_module_global_read_back_by_from_pp_tensors_is_a_difference():
    report = check_observer(f"{SHARED}:SharedStateObserver", ONE)
    found = _findings(report)
    assert found, "state kept in a module global must not pass"
    # What rank 0 rebuilt differs, and so does what its consume wrote from it.
    assert {code for code, _ in found} == {"PP711", "PP712"}
    rebuilt = [text for code, text in found if code == "PP711"]
    assert rebuilt and all(".value of the output rank 0 rebuilt differs" in t for t in rebuilt)
    # Rank 0's own process held no kept value: it rebuilt torch.zeros(1), not the batch's two.
    assert any("(shape)" in text and "(1,)" in text and "(2,)" in text for text in rebuilt)


def test_a_class_attribute_set_by_after_sample_is_not_on_rank_0():
    report = check_observer(f"{SHARED}:ClassStateObserver", ONE)
    (item,) = report.findings
    assert item.code == "PP710"
    assert item.message.startswith(
        "from_pp_tensors raised RuntimeError: nothing kept: after_sample never ran in this "
        "process on rank 0 (batch size 2, step 0)"
    )
    assert item.location is not None
    assert item.location.line == 66


def test_a_correct_observer_is_as_clean_as_before():
    assert check_observer(f"{GOOD}:EntropyObserver", ONE).findings == ()


def _written(tmp_path: Path, text: str) -> str:
    (tmp_path / "obs.py").write_text(GOOD.read_text(encoding="utf-8") + text, encoding="utf-8")
    return f"{tmp_path / 'obs.py'}:Keeping"


KEEPING = """

SEEN = []


class Keeping(EntropyObserver):
    def after_sample(self, state, token_ids):
        SEEN.append(1)
        return super().after_sample(state, token_ids)
"""


def test_consume_reading_what_after_sample_kept_fails_on_rank_0(tmp_path):
    target = _written(
        tmp_path,
        KEEPING
        + """

class KeptHost(EntropyHostOutput):
    def consume(self, batch, commits):
        if not SEEN:
            raise LookupError("no step seen in this process")
        super().consume(batch, commits)


EntropyOutput.copy_to_host = lambda self, copy: KeptHost(copy(self.entropy))
""",
    )
    (item,) = check_observer(target, ONE).findings
    assert item.code == "PP710"
    assert item.message.startswith(
        "consume raised LookupError: no step seen in this process on rank 0 (batch size 2, step 0)"
    )


def test_rank_0_process_ending_is_a_finding_and_leaves_nothing_behind(tmp_path):
    target = _written(
        tmp_path,
        KEEPING
        + """
    def from_pp_tensors(self, tensors):
        if not SEEN:
            import os

            os._exit(3)
        return super().from_pp_tensors(tensors)
""",
    )
    (item,) = check_observer(target, ONE).findings
    assert item.code == "PP708"
    assert "rank 0's process ended (exit code 3)" in item.message


LOGGING = """

import os


def _note(what):
    with open(os.environ["PPAUX_TEST_LOG"], "a") as log:
        log.write(f"{os.getpid()} {what}\\n")


class Logged(EntropyObserver):
    def __init__(self):
        _note("__init__")

    def after_sample(self, state, token_ids):
        _note("after_sample")
        return super().after_sample(state, token_ids)

    def from_pp_tensors(self, tensors):
        _note("from_pp_tensors")
        return super().from_pp_tensors(tensors)
"""


def test_none_of_rank_0s_methods_runs_in_the_last_stages_process(tmp_path, monkeypatch):
    log = tmp_path / "log.txt"
    monkeypatch.setenv("PPAUX_TEST_LOG", str(log))
    (tmp_path / "obs.py").write_text(GOOD.read_text("utf-8") + LOGGING, encoding="utf-8")
    assert check_observer(f"{tmp_path / 'obs.py'}:Logged", ONE).findings == ()
    notes = [line.split(" ") for line in log.read_text("utf-8").splitlines()]
    by_method: dict[str, list[str]] = {}
    for pid, method in notes:
        by_method.setdefault(method, []).append(pid)
    (last_stage,) = set(by_method["after_sample"])
    (rank0,) = set(by_method["from_pp_tensors"])
    assert rank0 != last_stage
    # One rebuild per step, all in rank 0's process, which made rank 0's observer; the last
    # stage's process made its own observer alone.
    assert len(by_method["from_pp_tensors"]) == 2
    assert by_method["__init__"].count(last_stage) == 1
    assert rank0 in by_method["__init__"]


def _rank0_method(tmp_path: Path, body: str) -> str:
    text = f"""

class Ending(EntropyObserver):
    def from_pp_tensors(self, tensors):
{body}
        return super().from_pp_tensors(tensors)
"""
    (tmp_path / "obs.py").write_text(GOOD.read_text("utf-8") + text, encoding="utf-8")
    return f"{tmp_path / 'obs.py'}:Ending"


def test_rank_0s_process_killed_by_a_signal_is_a_finding_naming_it(tmp_path):
    target = _rank0_method(
        tmp_path, "        import os, signal\n        os.kill(os.getpid(), signal.SIGKILL)"
    )
    (item,) = check_observer(target, ONE).findings
    assert item.code == "PP708"
    assert "rank 0's process ended (killed by signal SIGKILL)" in item.message


def test_a_hang_on_rank_0_is_a_timeout_naming_from_pp_tensors(tmp_path):
    target = _rank0_method(tmp_path, "        import time\n        time.sleep(3600)")
    options = ObserverOptions(batch_sizes=(1,), steps=1, timeout_s=1.0)
    found = check_observer(target, options).findings
    # Killed with the child's process group: nothing is left behind to be named.
    (item,) = [f for f in found if f.code == "PP715"]
    assert item.extra["end"] == "timeout"
    assert "while from_pp_tensors ran" in item.message
    assert item.location is not None
    text = (tmp_path / "obs.py").read_text("utf-8").splitlines()
    assert item.location.line == text.index("    def from_pp_tensors(self, tensors):") + 1


def test_a_fork_on_rank_0_is_a_finding_and_only_rank_0s_own_answer_counts(tmp_path):
    target = _rank0_method(tmp_path, "        import os\n        os.fork()")
    found = check_observer(target, ONE).findings
    assert [f.code for f in found] == ["PP715"]
    assert found[0].extra["end"] == "fork"


def test_a_thread_left_running_in_rank_0s_process_is_named(tmp_path):
    target = _written(
        tmp_path,
        KEEPING
        + """
    def from_pp_tensors(self, tensors):
        import threading
        import time

        if not any(t.name == "rank0-stray" for t in threading.enumerate()):
            threading.Thread(target=time.sleep, args=(3600,), name="rank0-stray").start()
        return super().from_pp_tensors(tensors)
""",
    )
    # A thread left running is a warning (PP718), not a way the child ended.
    [left] = [f for f in check_observer(target, ONE).findings if f.code == "PP718"]
    assert (left.severity.value, left.extra["end"]) == ("warning", "threads")
    assert "rank0-stray (in rank 0's process)" in left.message
