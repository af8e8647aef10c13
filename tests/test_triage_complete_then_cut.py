"""A traceback cut off before its exception is a root only where no complete one is in the log
(docs/triage.md): a complete bare traceback (a script's, through no sglang frame) followed by a
cut one keeps its exception as the root, the cut one its collateral. Logs written here or from
public reports (fixtures/logs/real/README.md); expectations by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from ppaux.triage import triage_paths

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "real"
COMPLETE = (
    "Traceback (most recent call last):\n"
    '  File "/srv/train.py", line 5, in step\n'
    "    y = f(x)\n"
    "RuntimeError: CUDA error: device-side assert triggered\n"
)


@pytest.mark.parametrize(
    "cut",
    [
        "\nTraceback (most recent call last):\n",
        'Traceback (most recent call last):\n  File "/srv/train.py", line 9, in main\n',
        "some other line\nTraceback (most recent call last):\n"
        '  File "/srv/train.py", line 9, in main\n    g()\n',
    ],
)
def test_a_complete_traceback_then_a_cut_one(tmp_path: Path, cut: str) -> None:
    log = tmp_path / "train.log"
    log.write_text(COMPLETE + cut)
    report = triage_paths([str(log)])
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert root.extra["exception"] == "RuntimeError"
    assert root.extra["message"].startswith("CUDA error: device-side assert triggered")
    assert root.extra["line"] == 1
    assert [f.code for f in report.findings if f.code == "PP803"] == ["PP803"]


def test_a_cut_traceback_alone_is_still_the_root(tmp_path: Path) -> None:
    log = tmp_path / "cut.log"
    log.write_text('Traceback (most recent call last):\n  File "/srv/train.py", line 9, in main\n')
    (root,) = [f for f in triage_paths([str(log)]).findings if f.code == "PP802"]
    assert root.extra["exception"] is None
    assert root.extra["line"] == 1


def test_a_scheduler_s_cut_traceback_stays_before_a_script_s_complete_one(tmp_path: Path) -> None:
    # a bare script's traceback is no PP failure beside a scheduler's
    log = tmp_path / "server.log"
    log.write_text(
        "[2026-01-01 00:00:00 PP1] Scheduler hit an exception: Traceback (most recent call "
        "last):\n"
        '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", '
        "line 10, in run_scheduler_process\n" + COMPLETE
    )
    (root,) = [f for f in triage_paths([str(log)]).findings if f.code == "PP802"]
    assert root.key == "PP1"


def test_the_real_srun_log_names_task_14_s_assert() -> None:
    report = triage_paths([str(REAL / "pippy-260-srun-label-device-assert.log")])
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert root.key == "task 14"
    assert root.extra["exception"] == "RuntimeError"
    assert root.extra["message"].startswith("CUDA error: device-side assert triggered")
    assert root.extra["line"] == 3
    assert root.extra["kind"] == "shape-kernel"
    assert [f.extra["line"] for f in report.findings if f.code == "PP803"] == [15]


def test_a_cut_traceback_then_a_complete_one_stay_two_failures(tmp_path: Path) -> None:
    # the second header starts a traceback of its own: the first was cut before its exception
    log = tmp_path / "train.log"
    log.write_text(
        'Traceback (most recent call last):\n  File "/app/y.py", line 9, in <module>\n    g()\n'
        + COMPLETE
    )
    report = triage_paths([str(log)])
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert root.extra["exception"] == "RuntimeError"
    assert root.extra["line"] == 4
    (cut,) = [f for f in report.findings if f.code == "PP803"]
    assert cut.extra["line"] == 1
    assert "exception the log does not show" in cut.message
