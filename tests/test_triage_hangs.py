"""A hang is a finding: sglang's watchdog's records (``Scheduler debug info:``, ``Scheduler
watchdog timeout (self.watchdog_timeout=300, self.soft=False)``, sglang 0.5.23's
``sglang/srt/utils/watchdog.py``) and a py-spy dump of an sglang process (``Process N:
sglang::scheduler_..._PP0``) are read, never refused as no log; where nothing failed, PP809 says
the log shows a hang and no root (an error where sglang's watchdog, which takes the server down,
found it; a warning for a dump), with the steps of a hang. After a failure, they are what
followed it. Expectations by hand."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import cli
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths
from ppaux.triage.hangs import hang_words

WATCHDOG = (
    "[2026-01-29 13:12:36 PP1 TP0] Scheduler debug info:\n"
    "scheduler.cur_batch.batch_size()=1\n"
    "[2026-01-29 13:12:37 PP1 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, "
    "self.soft=False)\n"
)
PYSPY = (
    "Process 3438121: sglang::scheduler_DP1_TP1_EP1_PP0\n"
    "Python v3.12.11 (/usr/bin/python3.12)\n\n"
    'Thread 3438121 (idle): "MainThread"\n'
    "    send (torch/distributed/distributed_c10d.py:2487)\n"
)


def _run(tmp_path: Path, text: str) -> tuple[int, dict]:
    log = tmp_path / "server.log"
    log.write_text(text)
    result = cli("triage", "--format", "json", str(log))
    return result.exit_code, json.loads(result.output)


def test_sglang_s_watchdog_is_a_hang_and_fails_the_gate(tmp_path: Path) -> None:
    code, document = _run(tmp_path, WATCHDOG)
    assert code == 1
    (found,) = document["findings"]
    assert found["code"] == "PP809"
    assert found["severity"] == "error"
    assert found["extra"]["no_root"] == "hang"
    assert found["message"].startswith(
        "no root in this log: it shows a hang, not a failure: PP1 TP0"
    )
    assert ["pgrep", "-af", "sglang::"] in [s["argv"] for s in document["steps"]]
    assert not any("check-skew" in " ".join(s["argv"] or []) for s in document["steps"])


def test_a_py_spy_dump_is_read_and_said(tmp_path: Path) -> None:
    code, document = _run(tmp_path, PYSPY)
    assert code == 0
    (found,) = document["findings"]
    assert found["extra"]["no_root"] == "hang"
    assert found["severity"] == "warning"
    assert "sglang::scheduler_DP1_TP1_EP1_PP0" in found["message"]


def test_after_a_failure_a_hang_record_is_what_followed(tmp_path: Path) -> None:
    failure = (
        "[2026-01-29 13:12:30 PP0 TP0] Scheduler hit an exception: Traceback (most recent call "
        'last):\n  File "/srv/sglang/srt/managers/scheduler.py", line 3, in run\n    go()\n'
        "[2026-01-29 13:12:30 PP0 TP0] ValueError: bad batch\n"
    )
    report = triage_paths([str(_write(tmp_path, failure + WATCHDOG))])
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert root.key == "PP0 TP0"
    after = [f for f in report.findings if f.code == "PP803" and f.extra.get("kind") == "hang"]
    assert after and all("found hung by sglang's watchdog" in f.message for f in after)
    assert not [f for f in report.findings if f.code == "PP809"]


OLD_WATCHDOG = "Watchdog timeout (self.watchdog_timeout=300)\n"


def test_the_0_4_scheduler_s_one_line_is_a_hang_with_or_without_a_prefix(tmp_path: Path) -> None:
    # sglang 0.3/0.4's Scheduler.watchdog_thread logs 'Watchdog timeout (self.watchdog_timeout=
    # 300)' with no process name, then sends SIGQUIT to the parent (sglang-3752's log).
    for before in ("[2025-03-09 00:57:15 TP4] ", "(Scheduler pid=41) [2025-03-09 00:57:15] ", ""):
        code, document = _run(tmp_path, before + OLD_WATCHDOG)
        assert code == 1, before
        (found,) = document["findings"]
        assert found["code"] == "PP809"
        assert found["extra"]["no_root"] == "hang"
        assert "watchdog timeout after 300 s" in found["message"]
    assert hang_words("we saw Watchdog timeout (self.watchdog_timeout=300) in the log") is None


def test_the_words_in_a_sentence_are_no_hang() -> None:
    assert hang_words("we saw the Scheduler debug info: line twice in the log") is None
    assert hang_words("see Process 12: python3 train.py") is None


def _write(tmp_path: Path, text: str) -> Path:
    log = tmp_path / "server.log"
    log.write_text(text)
    return log


@settings(max_examples=25)
@given(st.text(max_size=200))
def test_hang_words_never_raise_and_need_their_words(text: str) -> None:
    said = hang_words(text)
    if said is not None:
        assert "sglang::" in text or "debug info:" in text or "atchdog timeout (" in text
