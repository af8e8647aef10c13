"""A process that its runtime or its launcher reports dead, after a few serving lines, is a
death (PP809 process-died, exit 1) with the steps of what killed it: sglang's launcher's
``Rank 0 scheduler is dead`` and its ``Exit code: -9``, its engine's ``Scheduler or
DataParallelController N terminated with -9``, Ray's memory monitor, Slurm's OOM kill and a
task's exit, Kubernetes' ``OOMKilled``. Words in a sentence are no record, and a wait status
too long to be one is said unreadable, not read from its first digits.

Expected values are written here by hand, never computed with triage's code.
"""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppaux.triage import triage_paths
from ppaux_cli.app import app

DECODE = (
    "[2026-12-03 14:56:00 PP0] Decode batch. #running-req: 1, #token: 100, token usage: 0.01, "
    "gen throughput (token/s): 10.0, #queue-req: 0\n"
)
RAYLET = (
    "(raylet) [2025-04-02 15:02:00,117 E 135782 135782] (raylet) node_manager.cc:3069: 1 "
    "Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed due to "
    "other reasons at node (ID: 351e406b196f66bb45eaad02a3b8b4725babfa8cc12949432f7ad7d8, IP: "
    "10.95.143.76) over the last time period.\n"
)


def _report(text: str):
    return triage_paths(["run.log"], {"run.log": io.BytesIO(text.encode())})


def _died(text: str) -> tuple[str, str, int]:
    """(the PP809 finding's message, its no_root, how many PP802) of ``text``."""
    report = _report(text)
    (found,) = [f for f in report.findings if f.code == "PP809"]
    roots = [f for f in report.findings if f.code == "PP802"]
    return found.message, str(found.extra["no_root"]), len(roots)


@pytest.mark.parametrize(
    ("log", "said"),
    [
        (
            DECODE + "[2026-12-03 14:56:08] Rank 0 scheduler is dead. Please check if there are "
            "relevant logs.\n[2026-12-03 14:56:09] Exit code: -9\n",
            "rank 0 scheduler died: killed by SIGKILL (signal 9; sglang's launcher)",
        ),
        (
            "[12-16 14:27:08] Rank 0 scheduler is dead. Please check if there are relevant "
            "logs.\n[12-16 14:27:10] Exit code: -9\n",
            "rank 0 scheduler died: killed by SIGKILL (signal 9; sglang's launcher)",
        ),
        (
            DECODE + "[2026-12-03 14:56:08 PP0] Scheduler or DataParallelController 1234 "
            "terminated with -9\n",
            "scheduler pid=1234 died: killed by SIGKILL (signal 9; sglang's engine)",
        ),
        (
            "Compute log probs:  76%|####      | 244/320\n" + RAYLET,
            "1 Ray worker(s) on 10.95.143.76 died: killed by Ray's memory monitor",
        ),
        (
            DECODE + "slurmstepd: error: Detected 1 oom_kill event in StepId=4242.0. Some of "
            "the step tasks have been OOM Killed.\nsrun: error: gpu-node-3: task 1: Out Of "
            "Memory\nsrun: error: gpu-node-3: task 0: Killed\n",
            "a task of Slurm step 4242.0 died: killed by the OOM killer inside the step's "
            "memory limit",
        ),
        (
            DECODE + "slurmstepd: error: Detected 8 oom-kill event(s) in step 59137890.batch "
            "cgroup. Some of your processes may have been killed by the cgroup out-of-memory "
            "handler.\n",
            "a task of Slurm step 59137890.batch died: killed by the OOM killer inside the "
            "step's memory limit (Slurm's cgroup: 8 oom_kill event(s))",
        ),
        (
            "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=191.batch cgroup. Some "
            "of your processes may have been killed by the cgroup out-of-memory handler.\n",
            "a task of Slurm step 191.batch died: killed by the OOM killer",
        ),
        (
            # a wrapper's labels before Slurm's record (the tool, then its own job's tag)
            "qdo-srun.py: srun#64: slurmstepd: error: Detected 1 oom_kill event in "
            "StepId=43622791.67. Some of the step tasks have been OOM Killed.\n"
            "qdo-srun.py: srun#64: Found OOM event for task 6627566 ; setting task state to "
            "Killed\n",
            "a task of Slurm step 43622791.67 died: killed by the OOM killer",
        ),
        (
            DECODE + 'StdErr: "srun: error: gpu-node-3: task 1: Out Of Memory\n',
            "Slurm task 1 (on gpu-node-3) died: killed for memory",
        ),
        (
            DECODE + "srun: error: gpu-node-3: task 1: Out Of Memory\n",
            "Slurm task 1 (on gpu-node-3) died: killed for memory",
        ),
        (
            DECODE + "srun: error: gpu-node-3: task 1: Exited with exit code 1\n",
            "Slurm task 1 (on gpu-node-3) died: exited with status 1 (srun)",
        ),
        (
            DECODE + "    State:          Terminated\n      Reason:       OOMKilled\n"
            "      Exit Code:    137\n",
            "a Kubernetes container died: killed for memory (Kubernetes OOMKilled",
        ),
    ],
)
def test_a_runtime_s_record_of_a_death_is_that_process_s_death(log, said):
    message, no_root, roots = _died(log)
    assert " ".join(message.split()).find(said) >= 0, message
    assert no_root == "process-died"
    assert roots == 0


@pytest.mark.parametrize(
    ("log", "step"),
    [
        (RAYLET, "RAY_memory_usage_threshold"),
        ("srun: error: gpu-node-3: task 1: Out Of Memory\n", "sacct -j JOB"),
        ("      Reason:       OOMKilled\n", "resources.limits.memory"),
        (
            "Rank 0 scheduler is dead. Please check if there are relevant logs.\nExit code: -9\n",
            "Killed process|Out of memory",
        ),
    ],
)
def test_the_steps_are_those_of_what_killed_it(log, step):
    report = _report(log)
    words = [f"{s['comment']} {' '.join(s['argv'] or [])}" for s in report.data["steps"]]
    assert any(step in w for w in words), words


def test_the_exit_is_1_on_the_command_line(tmp_path):
    path = tmp_path / "run.log"
    path.write_text(DECODE + RAYLET, encoding="utf-8")
    result = CliRunner().invoke(app, ["triage", str(path)])
    assert result.exit_code == 1, result.output


@pytest.mark.parametrize(
    "line",
    [
        "We restarted; the log said that a Child process unexpectedly failed with exitcode=9. "
        "pid=4242 and nothing else.",
        "I think the NCCL WARN Cuda failure 'out of memory' we saw is unrelated.",
        "Someone wrote that Rank 0 scheduler is dead. Please check if there are relevant logs.",
        "the docs say Reason: OOMKilled means the limit was reached",
        "the admin said: slurmstepd: error: Detected 1 oom_kill event in StepId=4242.0 is harmless",
    ],
)
def test_words_in_a_sentence_are_no_record(line):
    report = _report(DECODE + line + "\n")
    assert [f.code for f in report.findings if f.code in ("PP802", "PP809")] == []


def test_an_exception_s_message_is_no_label_before_a_record():
    # an exception line whose message quotes srun's words is that exception, not srun's record
    report = _report(DECODE + "RuntimeError: srun: error: gpu-node-3: task 1: Out Of Memory\n")
    assert [f.code for f in report.findings if f.code in ("PP802", "PP809")] == ["PP802"]


def test_a_status_too_long_for_a_wait_status_is_not_readable():
    report = _report(
        DECODE + "[2026-12-03 14:56:07] Child process unexpectedly failed with "
        "exitcode=99999999999999999999999. pid=4242\n"
    )
    (found,) = [f for f in report.findings if f.code == "PP809"]
    flat = " ".join(found.message.split())
    assert "child pid=4242 died: its wait status is not readable" in flat
    assert "signal" not in flat


def test_an_exit_code_far_from_the_dead_scheduler_s_line_is_not_its():
    log = (
        "Rank 0 scheduler is dead. Please check if there are relevant logs.\n"
        + DECODE * 6
        + "Exit code: -9\n"
    )
    message, _, _ = _died(log)
    assert "the log does not give its exit code" in " ".join(message.split())


@settings(max_examples=30, deadline=None)
@given(rank=st.integers(0, 4095), signal_number=st.sampled_from([(9, "SIGKILL"), (15, "SIGTERM")]))
def test_any_rank_s_dead_scheduler_is_named_with_its_signal(rank, signal_number):
    number, name = signal_number
    log = (
        f"[2026-12-03 14:56:08] Rank {rank} scheduler is dead. Please check if there are "
        f"relevant logs.\n[2026-12-03 14:56:09] Exit code: -{number}\n"
    )
    message, _, _ = _died(log)
    flat = " ".join(message.split())
    assert f"rank {rank} scheduler died: killed by {name} (signal {number};" in flat


@pytest.mark.parametrize(
    ("line", "said"),
    [
        (RAYLET.strip(), "killed by Ray's memory monitor"),
        ("      Reason:       OOMKilled", "Kubernetes OOMKilled"),
        (
            "[2026-12-03 14:56:08] Rank 0 scheduler is dead. Please check if there are "
            "relevant logs.",
            "the log does not give its exit code",
        ),
    ],
)
def test_explain_says_the_line_reports_that_death(line, said):
    result = CliRunner().invoke(app, ["explain", line])
    flat = " ".join(result.output.split())
    assert result.exit_code == 2
    assert said in flat


TUNE_ERROR = (
    'Traceback (most recent call last):\n  File "/srv/job/tune.py", line 272, in run\n'
    '    raise TuneError("Trials did not complete", errored_trials)\n'
    "ray.tune.error.TuneError: ('Trials did not complete', [seed:5591])\n"
)


@pytest.mark.parametrize(
    "kill",
    [
        "slurmstepd: error: Detected 8 oom-kill event(s) in step 59137890.batch cgroup. Some "
        "of your processes may have been killed by the cgroup out-of-memory handler.\n",
        "slurmstepd: error: Detected 8 oom_kill events in StepId=59137890.batch. Some of the "
        "step tasks have been OOM Killed.\n",
    ],
)
def test_a_summary_of_failed_trials_is_never_the_root_over_the_kill(kill):
    # Ray Tune's TuneError only says that trials failed: the OOM kill Slurm logs after it is
    # what ended them, never collateral of it.
    message, no_root, roots = _died(TUNE_ERROR + kill)
    assert no_root == "process-died"
    assert roots == 0
    assert "Slurm step 59137890.batch died: killed by the OOM killer" in " ".join(message.split())
    assert [f.code for f in _report(TUNE_ERROR + kill).findings if f.code == "PP803"] == []


def test_a_summary_of_failed_trials_alone_says_what_it_is():
    message, no_root, roots = _died(TUNE_ERROR)
    assert (no_root, roots) == ("process-died", 0)
    assert "Ray Tune's TuneError" in " ".join(message.split())
