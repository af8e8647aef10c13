"""Slurm ending a step or a job (``slurmstepd: error: *** STEP 4242.0 ON node CANCELLED AT <time>
DUE TO TIME LIMIT ***``, srun's ``tasks 0-1,3: Terminated``) is a death of that step, said with
what ended it (the time limit, a pre-emption, a cancellation) and Slurm's own steps: PP809, exit
1, never "not an sglang log". Expected values are written here by hand."""

from __future__ import annotations

import io

import pytest
from typer.testing import CliRunner

from ppaux.triage import death_in_text, triage_paths
from ppaux_cli.app import app

TIME_LIMIT = (
    "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"
    "slurmstepd: error: *** STEP 32233190.0 ON nid01934 CANCELLED AT 2020-07-03T02:59:56 "
    "DUE TO TIME LIMIT ***\n"
    "srun: error: nid01934: tasks 2,4-5,7: Terminated\n"
    "srun: error: nid01935: tasks 8-15: Terminated\n"
)


def _pp809(text: str):
    report = triage_paths(["job.out"], {"job.out": io.BytesIO(text.encode())})
    (found,) = [f for f in report.findings if f.code.startswith("PP8")]
    assert (found.code, found.extra.get("no_root")) == ("PP809", "process-died")
    return found, report


def test_a_time_limit_is_slurm_ending_the_step():
    found, report = _pp809(TIME_LIMIT)
    assert found.message.startswith(
        "no root in this log: Slurm step 32233190.0 (on nid01934) died: cancelled by Slurm at "
        "its time limit (the job's --time) (job.out:2); Slurm ended it, as the line says: "
    )
    assert (
        "2 more records of a death: Slurm task 2,4-5,7 (on nid01934), Slurm task 8-15 (on nid01935)"
    ) in found.message
    steps = report.data["next_steps"]
    assert any("sacct -j JOB --format=JobID,State,Elapsed,Timelimit" in s for s in steps)
    assert not any("Killed process" in s for s in steps)  # not the OOM killer's steps


@pytest.mark.parametrize(
    ("why", "said"),
    [
        (
            "PREEMPTION",
            "died: cancelled by Slurm: pre-empted (preemption), not a failure of its own",
        ),
        (
            "JOB REQUEUE",
            "died: cancelled by Slurm: pre-empted (job requeue), not a failure of its own",
        ),
        ("", "died: cancelled by Slurm (scancel, an administrator or a node's failure)"),
        ("NODE FAILURE", "died: cancelled by Slurm (due to node failure)"),
    ],
)
def test_why_slurm_ended_it_is_said(why, said):
    line = "slurmstepd: error: *** JOB 608 ON gpu-7 CANCELLED AT 2024-04-23T12:18:08 " + (
        f"DUE TO {why} ***" if why else "***"
    )
    found, _ = _pp809(line + "\n")
    assert f"Slurm job 608 (on gpu-7) {said}" in found.message


def test_behind_a_progress_bar_on_the_same_line():
    line = (
        "Preparing test set...:  46%|####      | 31/67 [29:02<35:12, 58.67s/it]slurmstepd: error: "
        "*** STEP 6053.0 ON DEL2212S020 CANCELLED AT 2024-04-23T12:18:08 ***\n"
        "srun: error: DEL2212S020: task 0: Terminated\n"
    )
    found, _ = _pp809(line)
    assert "Slurm step 6053.0 (on DEL2212S020) died: cancelled by Slurm" in found.message


def test_the_words_in_a_sentence_are_no_record():
    assert (
        death_in_text("our runbook: a STEP that is CANCELLED AT its time limit is retried") is None
    )
    report = triage_paths(
        ["job.out"],
        {"job.out": io.BytesIO(b"note: the step was CANCELLED AT noon by the operator\n")},
    )
    assert not [f for f in report.findings if f.code == "PP809"]


def test_the_cli_reads_it_with_exit_1(tmp_path):
    log = tmp_path / "slurm-32233190.out"
    log.write_text(TIME_LIMIT)
    result = CliRunner().invoke(app, ["triage", str(log)])
    assert result.exit_code == 1
    assert "PP809 error" in result.stdout
