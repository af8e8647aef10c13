"""Processes that another reports dead (a signal in torchrun's summary, Ray's ActorDiedError,
the raylet's 'A worker died'), launchers' summaries (ChildFailedError), and C++ ``terminate``
lines that other processes wrote into: never read as a root of another kind."""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppaux.triage import triage_paths
from ppaux.triage.crashes import _cpp_type
from ppaux_cli.app import app

_SUMMARY = (
    '  File "/env/lib/python3.10/site-packages/torch/distributed/launcher/api.py", line 268, '
    "in launch_agent\n"
    "    raise ChildFailedError(\n"
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
    "============================================================\n"
    "train.py FAILED\n"
    "------------------------------------------------------------\n"
    "Root Cause (first observed failure):\n"
    "[0]:\n"
    "  time      : 2026-03-28_18:48:30\n"
    "  host      : host-a\n"
    "  rank      : 3 (local_rank: 3)\n"
    "  exitcode  : {code} (pid: 4541)\n"
    "  error_file: <N/A>\n"
    "  traceback : {said}\n"
    "============================================================\n"
)


def _roots(path):
    report = triage_paths([str(path)])
    return [f for f in report.findings if f.code in ("PP801", "PP802", "PP809")], report


def test_a_rank_killed_by_a_signal_is_no_root_and_says_where_to_look(tmp_path):
    log = tmp_path / "killed.log"
    log.write_text(_SUMMARY.format(code="-9", said="Signal 9 (SIGKILL) received by PID 4541"))
    (found,), report = _roots(log)
    assert found.code == "PP809"
    assert found.extra["no_root"] == "process-died"
    assert found.message.startswith("no root in this log: rank 3 was killed by SIGKILL (signal 9)")
    assert "OOM killer" in found.message
    argvs = [s["argv"] for s in report.data["steps"] if s["argv"]]
    assert ["journalctl", "-k", "-g", "Killed process|Out of memory"] in argvs
    assert not any("check-skew" in a for a in argvs)
    # the launcher's ChildFailedError is no failure of its own
    assert not any(
        "ChildFailedError" in str((f.extra or {}).get("exception")) for f in report.findings
    )
    result = CliRunner().invoke(app, ["triage", "--format", "json", str(log)])
    assert result.exit_code == 1, result.output


def test_a_segfault_points_at_a_core_dump_not_the_oom_killer(tmp_path):
    log = tmp_path / "segv.log"
    log.write_text(_SUMMARY.format(code="-11", said="Signal 11 (SIGSEGV) received by PID 4541"))
    (found,), _ = _roots(log)
    assert found.extra["no_root"] == "process-died"
    assert "was killed by SIGSEGV (signal 11)" in found.message
    assert "OOM killer" not in found.message and "core dump" in found.message


def test_a_launchers_summary_of_an_exit_code_is_still_that_ranks_failure(tmp_path):
    log = tmp_path / "exit1.log"
    log.write_text(_SUMMARY.format(code="1", said="To enable traceback see: ..."))
    (found,), _ = _roots(log)
    assert found.code == "PP802"
    assert found.key == "rank 3"
    assert found.extra["exception"] is None


def test_a_ray_actor_that_died_is_no_root_of_kind_other(tmp_path):
    log = tmp_path / "actor.log"
    log.write_text(
        "ray.exceptions.RayTaskError(ActorDiedError): ray::TaskRunner.run() (pid=1, ip=x)\n"
        '  File "trainer/main.py", line 215, in run\n'
        "    trainer.fit()\n"
        "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
        "\tclass_name: create_colocated_worker_cls.<locals>.WorkerDict\n"
        "\tpid: 20174\n"
        "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR "
        "Worker exit detail: (1) The process is killed by SIGKILL by OOM killer due to high "
        "memory usage.\n"
    )
    (found,), _ = _roots(log)
    assert found.code == "PP809"
    assert found.extra["no_root"] == "process-died"
    assert "WorkerDict pid=20174" in found.message
    assert "SYSTEM_ERROR" in found.message and "OOM killer" in found.message


def test_a_worker_the_raylet_reports_dead_comes_before_the_cut_traceback_after_it(tmp_path):
    log = tmp_path / "raylet.log"
    log.write_text(
        "(EngineCore pid=18) (raylet) A worker died or was killed while executing a task by an "
        "unexpected system error. Worker PID: 442 Worker exit type: SYSTEM_ERROR\n"
        "(EngineCore pid=18) ERROR 03-29 12:59:53 [core.py:1099] EngineCore failed to start.\n"
        "(EngineCore pid=18) ERROR 03-29 12:59:53 [core.py:1099] Traceback (most recent call "
        "last):\n"
        '(EngineCore pid=18) ERROR 03-29 12:59:53 [core.py:1099]   File "/app/vllm/core.py", '
        "line 1073, in run_engine_core\n"
    )
    (found,), _ = _roots(log)
    assert found.code == "PP809"
    assert found.extra["no_root"] == "process-died"
    assert found.message.startswith("no root in this log: Ray worker pid=442 died")
    assert found.location.line == 1


def test_a_failure_before_a_death_stays_the_root(tmp_path):
    log = tmp_path / "before.log"
    log.write_text(
        "[2026-06-17 06:48:30 PP1 TP0] ValueError: bad weight shape for layer 40\n"
        "(raylet) A worker died or was killed while executing a task. Worker PID: 7\n"
    )
    (found,), report = _roots(log)
    assert found.code == "PP802" and found.key == "PP1 TP0"
    (after,) = [f for f in report.findings if f.code == "PP803"]
    assert "Ray worker pid=7" in after.message and "died" in after.message


def test_interleaved_terminate_lines_name_the_type_once(tmp_path):
    log = tmp_path / "terminate.log"
    log.write_text(
        "terminate called after throwing an instance of 'c10::DistBackendErrorterminate called "
        "after throwing an instance of ''\n"
        "terminate called after throwing an instance of 'c10::DistBackendErrorc10::"
        "DistBackendError'\n"
        "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 3] Process group watchdog thread "
        "terminated with exception: [Rank 3] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=4, OpType=BROADCAST) ran for 1800011 milliseconds before timing out.\n"
    )
    (found,), report = _roots(log)
    assert found.code == "PP809"
    assert found.extra["no_root"] == "network-or-other-node"
    assert not any("terminate called" in f.message for f in report.findings)


_NAMES = st.from_regex(
    r"[A-Za-z_][A-Za-z0-9_]{0,12}(::[A-Za-z_][A-Za-z0-9_]{0,12}){1,2}", fullmatch=True
)


@settings(max_examples=200, deadline=None)
@given(
    name=_NAMES,
    glued=st.sampled_from(["", "terminate called after throwing an instance of ", "same"]),
)
def test_a_terminate_lines_type_is_the_first_one_its_quotes_hold(name, glued):
    # a name that is itself one name twice cannot be told from two writes of it
    assume(name[: len(name) // 2] != name[len(name) // 2 :])
    quoted = name + (name if glued == "same" else glued)
    assert _cpp_type(quoted) == name


def test_an_unqualified_type_is_never_halved():
    assert _cpp_type("AA") == "AA"
    assert _cpp_type("std::bad_alloc") == "std::bad_alloc"


def test_vllms_own_process_prefixes_are_not_called_ray(tmp_path):
    for name, launcher in [
        ("VllmWorkerProcess pid=236", "vllm"),
        ("Worker_TP4_EP4 pid=1217", "vllm"),
        ("EngineCore_DP0 pid=18", "vllm"),
        ("RayWorkerWrapper pid=880", "ray"),
        ("WorkerDict pid=859188", "ray"),
        ("pid=12, ip=10.0.0.1", "ray"),
    ]:
        log = tmp_path / "prefixed.log"
        log.write_text(
            f"({name}) INFO starting\n"
            f"({name}) Traceback (most recent call last):\n"
            f'({name})   File "/srv/app/main.py", line 3, in run\n'
            f"({name})     go()\n"
            f"({name}) ValueError: no valid attention backend\n"
        )
        (reading,) = triage_paths([str(log)]).data["logs"]
        assert reading["launcher"] == launcher, name


def test_supervisords_record_of_a_program_it_did_not_expect_to_end_fails_the_gate(tmp_path):
    healthy = (
        "[2026-12-03 14:56:00 PP0] Decode batch, #running-req: 3, #token: 96\n"
        "[2026-12-03 14:56:01 PP1] Decode batch, #running-req: 3, #token: 96\n"
    )
    log = tmp_path / "supervised.log"
    log.write_text(
        healthy
        + "2026-12-03 14:56:09,001 WARN exited: sglang (terminated by SIGKILL; not expected)\n"
        + "2026-12-03 14:56:10,002 INFO spawned: 'sglang' with pid 4343\n"
        + "2026-12-03 14:56:20,003 INFO exited: sglang (exit status 1; not expected)\n"
    )
    (found,), _ = _roots(log)
    assert found.code == "PP809" and found.extra["no_root"] == "process-died"
    assert found.message.startswith(
        "no root in this log: sglang (supervisord's program) was killed by SIGKILL (signal 9)"
    )
    assert CliRunner().invoke(app, ["triage", str(log)]).exit_code == 1
    # an exit supervisord expected is no death
    calm = tmp_path / "calm.log"
    calm.write_text(
        healthy + "2026-12-03 15:00:00,001 INFO exited: sglang (exit status 0; expected)\n"
    )
    assert _roots(calm)[0] == []


@settings(max_examples=12, deadline=None)
@given(arguments=st.integers(0, 1500), code=st.sampled_from([-11, -9, -6, 1]))
def test_deepspeeds_exit_line_says_how_the_child_ended_whatever_its_commands_length(
    tmp_path_factory, arguments, code
):
    # The launcher echoes the child's whole command between its name and the return code: a
    # command of thousands of characters still says how the child ended, never a pass.
    command = ", ".join(["'/usr/bin/python3'", "'train.py'", *["'--x'"] * arguments])
    line = (
        "[2023-07-10 04:26:35,999] [ERROR] [launch.py:324:sigkill_handler] "
        f"[{command}, '--local_rank=1'] exits with return code = {code}"
    )
    log = tmp_path_factory.mktemp("ds") / "launcher.log"
    log.write_text(line + "\n", encoding="utf-8")
    report = triage_paths([str(log)])
    (death,) = [f for f in report.findings if f.code == "PP809"]
    expected = {
        -11: "local_rank 1 died: killed by SIGSEGV (signal 11; DeepSpeed's launcher)",
        -9: "local_rank 1 died: killed by SIGKILL (signal 9; DeepSpeed's launcher)",
        -6: "local_rank 1 died: killed by SIGABRT (signal 6; DeepSpeed's launcher)",
        1: "local_rank 1 died: exited with status 1 (DeepSpeed's launcher)",
    }[code]
    assert expected in death.message, death.message
