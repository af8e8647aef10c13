"""Next steps that fit the failure of a real log (fixtures/logs/real/, sources in its README):
a worker whose start-up raised is looked for in its own output before any kill; another
program's check of its own parallel settings gets the settings to check, in that program's
words; a traceback cut inside NCCL's communicator set-up gets NCCL's steps; a comparison of
stages whose count the logs do not give still names a command to run. The words expected are
written by hand from reading each log."""

from __future__ import annotations

from pathlib import Path

from ppaux.triage import triage_paths
from ppaux.triage.steps import Deployment, next_steps, render

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "real"


def _steps(stem: str) -> list[tuple[tuple[str, ...] | None, str]]:
    report = triage_paths([str(REAL / f"{stem}.log")])
    assert not report.problems
    steps = report.data["steps"]
    assert isinstance(steps, list)
    return [
        (tuple(step["argv"]) if step["argv"] else None, str(step["comment"] or ""))
        for step in steps
    ]


def _words(steps: list[tuple[tuple[str, ...] | None, str]]) -> str:
    return "\n".join(" ".join(argv or ()) + " " + comment for argv, comment in steps)


def test_a_worker_whose_start_up_raised_is_read_before_any_kill_is_looked_for():
    steps = _steps("vllm-ascend-2228-workerproc-init-failed-background")
    assert steps
    first = steps[0][1]
    assert "traceback" in first and "start-up" in first
    kills = [k for k, (argv, _) in enumerate(steps) if argv and argv[0] in ("journalctl", "dmesg")]
    assert all(k > 0 for k in kills)
    assert "Killed process" not in first


def test_megatron_s_layers_per_stage_name_its_settings():
    steps = _steps("bionemo-784-srun-label-megatron-pp-layers-assert")
    words = _words(steps)
    assert "num_layers" in words and "pipeline_model_parallel_size" in words
    assert "NCCL_DEBUG" not in words and "journalctl" not in words
    assert "sglang" not in words and "ppaux check-skew" not in words


def test_tensorrt_llm_s_world_size_names_the_launch():
    words = _words(_steps("optimum-nvidia-68-tllm-assert-mpisize-tp-pp"))
    assert "mpirun -n" in words and "tp * pp" in words
    assert "NCCL_DEBUG" not in words and "sglang" not in words


def test_torch_pipelining_s_micro_batches_name_them():
    words = _words(_steps("torchtitan-775-indented-fragment-valueerror-microbatches"))
    assert "micro-batches" in words and "n_microbatches" in words
    assert "sglang" not in words


def test_another_job_s_parallel_check_says_to_read_its_settings():
    words = _words(_steps("automodel-2575-pp-batch-assert-oneline"))
    assert "configuration" in words and "settings" in words
    assert "NCCL_DEBUG" not in words and "sglang" not in words


def test_a_traceback_cut_inside_nccl_s_set_up_gets_nccl_s_steps():
    steps = _steps("vllm-7800-workerprocess-nccl-init-pynccl-cut")
    assert "whole log" in steps[0][1]
    assert ("export", "NCCL_DEBUG=INFO") in [argv for argv, _ in steps]


def test_stages_of_unknown_count_still_name_a_command_to_run():
    steps = next_steps([("auxiliary-output", None)], Deployment(sglang=True), [], [])
    commands = [step.argv for step in steps if step.argv is not None]
    ppaux = [argv for argv in commands if argv[0] == "ppaux" and argv[1] != "capture"]
    assert ("ppaux", "check-skew", "--", "stages/") in ppaux
    assert any(argv[:4] == ("ppaux", "fingerprint", "--pp-rank", "0") for argv in ppaux)
    assert all("N" not in argv for argv in commands)
    for step in steps:
        assert render(step)


def test_a_log_with_no_failure_says_so_in_every_format_that_holds_words():
    from typer.testing import CliRunner

    from ppaux_cli.app import app

    log = str(REAL / "sglang-12496-compose-healthy.log")
    for form in ("text", "markdown", "json", "github", "sarif", "junit", "html"):
        result = CliRunner().invoke(app, ["triage", "--format", form, log])
        assert result.exit_code == 0, (form, result.output)
        assert "no failure found" in result.output, form
    # GitLab's code-quality report is a list of issues: none
    result = CliRunner().invoke(app, ["triage", "--format", "gitlab", log])
    assert result.exit_code == 0 and result.output.strip() == "[]"
    # a log that holds a failure never says it
    failed = CliRunner().invoke(app, ["triage", str(REAL / "sglang-4289-nccl-init.log")])
    assert failed.exit_code == 1 and "no failure found" not in failed.output


def test_an_infiniband_completion_in_error_gets_infiniband_s_steps():
    # NCCL's two 'NET/IB : Got completion from peer ... with status=12' warnings alone
    words = _words(_steps("nccl-1405-ib-completion-vendor-err-129"))
    assert "ibstat" in words and "NCCL_IB_TIMEOUT" in words and "peer" in words
    # not a set-up's or a timeout's: no interface to choose, no flight recorder's dump
    assert "NCCL_SOCKET_IFNAME" not in words and "TORCH_NCCL_DUMP_ON_TIMEOUT" not in words


def test_a_ray_actor_s_error_and_its_details_are_one_death_of_no_named_library():
    # RayActorError at line 19, its details and 'The actor is dead because ...' at line 25
    report = triage_paths([str(REAL / "vllm-1111-jupyter-rayactorerror-system-error.log")])
    (no_root,) = [f for f in report.findings if f.code == "PP809"]
    assert no_root.extra["records"] == [
        f"{REAL / 'vllm-1111-jupyter-rayactorerror-system-error.log'}:19"
    ]
    assert "more record" not in no_root.message
    # the log names no communication library: the fix is a death's, not the network's
    assert no_root.extra["collectives"] is None
    assert "NCCL" not in no_root.hint and "OOM kills" in no_root.hint


def test_a_relayed_start_up_failure_s_fix_says_where_its_traceback_is():
    report = triage_paths([str(REAL / "vllm-ascend-2228-workerproc-init-failed-background.log")])
    (no_root,) = [f for f in report.findings if f.code == "PP809"]
    assert no_root.extra["relayed"] is True
    assert "own traceback" in no_root.hint and "NCCL_SOCKET_IFNAME" not in no_root.hint


def test_a_kernel_s_jit_build_gets_the_build_s_steps():
    words = _words(_steps("kserve-4565-enginecore-failed-start-ninja-cut"))
    assert "nvcc --version" in words and "torch_extensions" in words
    assert "NCCL_DEBUG" not in words and "ppaux fingerprint" not in words


def test_a_full_shared_memory_gets_the_disk_s_steps():
    words = _words(_steps("megatron-878-enospc-semlock-interleaved"))
    assert "df -h /dev/shm" in words and "--shm-size" in words
    assert "NCCL_DEBUG" not in words and "ppaux fingerprint" not in words


def test_weights_that_cannot_be_read_get_the_weights_steps():
    words = _words(_steps("cogvideo-455-rank0-safetensors-no-such-device"))
    assert "ls -l MODEL_DIR" in words and "local disk" in words
    assert "NCCL_DEBUG" not in words and "ppaux fingerprint" not in words


def test_a_collective_s_timeout_is_one_failure_and_its_steps_dump_every_rank_s_stacks():
    # rank 5's three records of one ALLREDUCE timeout (DeepSpeed#7533)
    report = triage_paths([str(REAL / "deepspeed-7533-watchdog-allreduce-frames.log")])
    (no_root,) = [f for f in report.findings if f.code == "PP809"]
    assert len(no_root.extra["records"]) == 1 and "1 communication failure" in no_root.message
    words = _words(_steps("deepspeed-7533-watchdog-allreduce-frames"))
    assert "py-spy dump --pid" in words and "never entered the collective" in words
    assert "TORCH_NCCL_DUMP_ON_TIMEOUT=1" in words and "TORCH_NCCL_TRACE_BUFFER_SIZE" in words
