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
    # the worker's repr() of the error on line 2, then its traceback: one failure, from line 2
    assert root.extra["line"] == 2
    assert root.extra["kind"] == "shape-kernel"
    assert [f.extra["line"] for f in report.findings if f.code == "PP803"] == [15]


HANDLED = (
    "2024-05-01 01:00:00,000 WARNING download failed, retrying:\n"
    "Traceback (most recent call last):\n"
    '  File "/app/hub.py", line 3, in fetch\n'
    "    get()\n"
    "ConnectionResetError: [Errno 104] Connection reset by peer\n"
)
CUT = (
    "Traceback (most recent call last):\n"
    '  File "/app/train.py", line 300, in train_step\n'
    "    loss = model(batch)\n"
)


@pytest.mark.parametrize(
    "went_on",
    [
        # the logger's next records, each with its own time: hours of steps
        "2024-05-01 01:00:05,000 INFO download ok\n"
        + "".join(f"2024-05-01 0{h}:00:00,000 INFO step {h}000 loss 2.1\n" for h in range(2, 8))
        + "2024-05-01 08:00:00,000 ERROR crash\n",
        # Python logging's default format, no time
        "INFO:root:download ok\nINFO:root:step 2000 loss 2.1\n",
    ],
)
def test_a_handled_traceback_then_a_cut_one_is_the_cut_one_s_failure(
    tmp_path: Path, went_on: str
) -> None:
    # The program logged on after the first exception (it retried): that one was handled.
    # The cut traceback later is what failed, its cause not in the log.
    log = tmp_path / "train.log"
    log.write_text(HANDLED + went_on + CUT)
    report = triage_paths([str(log)])
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert root.extra["exception"] is None
    cut_at = len((HANDLED + went_on).splitlines()) + 1
    assert root.extra["line"] == cut_at
    assert "the cause is not in it" in root.message
    assert "ConnectionResetError" not in root.message
    assert not [f for f in report.findings if f.code == "PP803"]


def test_a_handled_traceback_alone_is_still_reported(tmp_path: Path) -> None:
    # nothing failed after it: the only failure the log shows stays its root
    log = tmp_path / "train.log"
    handled = HANDLED.replace(
        "ConnectionResetError: [Errno 104] Connection reset by peer", "ValueError: bad value 7"
    )
    log.write_text(handled + "2024-05-01 01:00:05,000 INFO download ok\n")
    (root,) = [f for f in triage_paths([str(log)]).findings if f.code == "PP802"]
    assert root.extra["exception"] == "ValueError"
    assert root.extra["message"] == "bad value 7"


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


SHARD = (
    "Traceback (most recent call last):\n"
    '  File "/home/user/serve.py", line 40, in <module>\n'
    "    main()\n"
    '  File "/home/user/serve.py", line 33, in main\n'
    "    load(model)\n"
    "ValueError: checkpoint shard 3 has 0 bytes\n"
)
SHUTDOWN = (
    "Traceback (most recent call last):\n"
    '  File "/home/user/serve.py", line 52, in shutdown\n'
    "    pool.join()\n"
)


@pytest.mark.parametrize(
    "record",
    [
        "2024-05-01 10:00:02,117 ERROR serve.py:41 worker 3 failed, shutting down",
        "2024-05-01 10:00:02,117 CRITICAL worker 3 failed, shutting down",
        "ERROR 2024-05-01T10:00:02.117Z worker 3 failed, shutting down",
        "2024-05-01T10:00:02.117Z\terror\tworker 3 failed, shutting down",
        '"2024-05-01T10:00:02.117Z","ERROR","worker 3 failed, shutting down"',
    ],
)
def test_an_error_record_after_a_traceback_is_no_proof_it_was_handled(
    tmp_path: Path, record: str
) -> None:
    # The level (taken off with the row's time) says the program reported a failure, not that
    # it went on: the complete traceback stays the root, the cut one after it its collateral.
    log = tmp_path / "serve.log"
    log.write_text(SHARD + record + "\n" + SHUTDOWN)
    report = triage_paths([str(log)])
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert root.extra["exception"] == "ValueError"
    assert root.extra["message"] == "checkpoint shard 3 has 0 bytes"
    assert root.extra["line"] == 1
    assert [f.extra["line"] for f in report.findings if f.code == "PP803"] == [8]


@pytest.mark.parametrize(
    "record",
    [
        "2024-05-01 10:00:02,117 INFO serve.py:41 retrying the download",
        "INFO 2024-05-01T10:00:02.117Z retrying the download",
        "2024-05-01 10:00:02,117 WARNING retrying the download",
    ],
)
def test_a_record_below_error_after_a_traceback_still_says_it_went_on(
    tmp_path: Path, record: str
) -> None:
    log = tmp_path / "serve.log"
    log.write_text(SHARD + record + "\n" + SHUTDOWN)
    report = triage_paths([str(log)])
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert root.extra["exception"] is None
    assert root.extra["line"] == 8
    assert not [f for f in report.findings if f.code == "PP803"]
