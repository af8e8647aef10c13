"""Records triage reads without a Python traceback of their own, or as part of another: a
process's exception that relays another's failure (vLLM's engine), a host allocation that
failed, a launcher killing its children (DeepSpeed), torchrun's summary flattened into a
console's rows, torch.fx's ``Original traceback:`` notes, an MPI error while a C++ object is
set up; where a record written before the root is said to stand; and a progress bar's erase of
a line written before a traceback's lines."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths

_RELAY = (
    "(EngineCore pid=404) ERROR 05-12 14:13:56 [core.py:1110] Exception: WorkerProc "
    "initialization failed due to an exception in a background process. See stack trace for "
    "root cause.\n"
)
_WORKER = (
    "(VllmWorker pid=410) ERROR 05-12 14:13:50 [multiproc_executor.py:500] Traceback (most "
    "recent call last):\n"
    '(VllmWorker pid=410) ERROR 05-12 14:13:50 [multiproc_executor.py:500]   File "/srv/app/'
    'worker.py", line 10, in init\n'
    "(VllmWorker pid=410) ERROR 05-12 14:13:50 [multiproc_executor.py:500]     load()\n"
    "(VllmWorker pid=410) ERROR 05-12 14:13:50 [multiproc_executor.py:500] ValueError: no "
    "weights for layer 3\n"
)


def _findings(tmp_path, text, name="x.log"):
    log = tmp_path / name
    log.write_text(text)
    report = triage_paths([str(log)])
    assert not report.problems
    return report.findings


def _roots(findings):
    """The findings that name a root, or say that the logs hold none."""
    return [f for f in findings if f.code in ("PP801", "PP802", "PP809")]


def test_a_relay_alone_is_no_root(tmp_path):
    findings = _findings(tmp_path, _RELAY)
    (root,) = _roots(findings)
    assert root.code == "PP809"
    assert root.extra["no_root"] == "process-died"
    assert "EngineCore pid=404 reports that a process it started failed" in root.message


def test_a_relay_is_collateral_of_the_failure_it_relays(tmp_path):
    findings = _findings(tmp_path, _WORKER + _RELAY)
    (root,) = _roots(findings)
    assert root.code == "PP802"
    assert root.extra["exception"] == "ValueError"
    assert "WorkerProc initialization failed" not in root.message


def test_a_relay_that_quotes_the_error_names_the_worker_that_died(tmp_path):
    text = (
        "(EngineCore pid=7) ERROR 07-15 21:01:01 [core.py:1240] RuntimeError: Worker failed "
        "with error 'CUDA error: an illegal memory access was encountered\n"
        "(EngineCore pid=7) ERROR 07-15 21:01:01 [core.py:1240] ', please check the stack "
        "trace above for the root cause\n"
        "(EngineCore pid=7) ERROR 07-15 21:01:01 [multiproc_executor.py:284] Worker proc "
        "VllmWorker-3 died unexpectedly (exit code: -15), shutting down executor.\n"
    )
    findings = _findings(tmp_path, text)
    (root,) = _roots(findings)
    assert root.code == "PP802"
    assert root.extra["kind"] == "shape-kernel"
    assert root.extra["ranks"] == ["EngineCore pid=7, VllmWorker-3"]


def test_a_host_allocation_that_failed_is_a_memory_root_and_the_launchers_kills_follow(tmp_path):
    text = (
        "[2023-04-16 21:36:16,042] [INFO] [comm.py:586:init_distributed] Initializing "
        "TorchBackend in DeepSpeed with backend nccl\n"
        "memory allocation of 2097152 bytes failed\n"
        "[2023-04-16 21:54:13,235] [INFO] [launch.py:428:sigkill_handler] Killing subprocess "
        "62215\n"
    )
    findings = _findings(tmp_path, text)
    (root,) = _roots(findings)
    assert root.code == "PP802" and root.extra["kind"] == "memory"
    (after,) = [f for f in findings if f.code == "PP803"]
    assert after.key == "subprocess 62215"
    assert "was killed by its launcher" in after.message


def test_launchers_kills_alone_are_deaths_whose_cause_is_elsewhere(tmp_path):
    text = (
        "[2023-04-16 21:54:13,235] [INFO] [launch.py:428:sigkill_handler] Killing subprocess "
        "62215\n"
    )
    findings = _findings(tmp_path, text)
    (root,) = _roots(findings)
    assert root.code == "PP809" and root.extra["no_root"] == "process-died"


@settings(max_examples=30, deadline=None)
@given(ranks=st.lists(st.integers(0, 63), min_size=1, max_size=6, unique=True))
def test_torchrun_summary_rows_in_a_console_table_are_the_ranks_deaths(tmp_path_factory, ranks):
    rows = "".join(
        f"  | 2024-08-23T22:22:58.879Z | [{r}]: time : 2024-08-23_22:22:58 host : node-a rank "
        f": {r} (local_rank: {r % 8}) exitcode : -6 (pid: {100 + r}) error_file: <N/A> "
        f"traceback : Signal 6 (SIGABRT) received by PID {100 + r}\n"
        for r in ranks
    )
    findings = _findings(tmp_path_factory.mktemp("rows"), rows)
    (root,) = _roots(findings)
    assert root.code == "PP809" and root.extra["no_root"] == "process-died"
    assert f"rank {ranks[0]} was killed by SIGABRT" in root.message
    for rank in ranks[1:]:
        assert f"rank {rank}" in root.message.split("of a death: ", 1)[1]


def test_fx_original_traceback_frames_are_notes_of_the_same_exception(tmp_path):
    text = (
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "/env/torch/fx/interpreter.py", line 333, in placeholder\n'
        "[rank0]:     raise RuntimeError(\n"
        "[rank0]: RuntimeError: Expected positional argument for parameter x\n"
        "[rank0]: \n"
        "[rank0]: While executing %x : [num_users=1] = placeholder[target=x]\n"
        "[rank0]: Original traceback:\n"
        '[rank0]: File "/env/model.py", line 474, in forward\n'
        "[rank0]:     outputs = self.model(\n"
        '[rank0]: File "/env/model.py", line 90, in model\n'
        "[rank0]:     return f(x)\n"
    )
    findings = _findings(tmp_path, text)
    assert [f.code for f in findings if f.code.startswith("PP80")] == ["PP802"]


def test_without_fx_words_a_later_fragment_is_still_a_failure(tmp_path):
    text = (
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "/env/torch/fx/interpreter.py", line 333, in placeholder\n'
        "[rank0]:     raise RuntimeError(\n"
        "[rank0]: RuntimeError: Expected positional argument for parameter x\n"
        "[rank0]: something else happened\n"
        '[rank0]: File "/env/model.py", line 474, in forward\n'
        "[rank0]:     outputs = self.model(\n"
    )
    findings = _findings(tmp_path, text)
    assert "PP803" in [f.code for f in findings]


def test_an_mpi_error_while_a_plugin_is_set_up_is_a_communication_init_root(tmp_path):
    text = (
        "terminate called after throwing an instance of 'tensorrt_llm::common::TllmException'\n"
        "  what():  [TensorRT-LLM][ERROR] Assertion failed: Failed: MPI error /src/common/"
        "mpiUtils.cpp:211 '6'\n"
        "1       0x7fb4aebbeb71 tensorrt_llm::common::throwRuntimeError(char const*, int) + 82\n"
        "4       0x7fb4614edcec tensorrt_llm::plugins::AllreducePlugin::initialize() + 204\n"
    )
    findings = _findings(tmp_path, text)
    (root,) = _roots(findings)
    assert root.code == "PP802" and root.extra["kind"] == "communication-init"


def test_an_mpi_error_in_flight_alone_is_no_root(tmp_path):
    text = (
        "terminate called after throwing an instance of 'tensorrt_llm::common::TllmException'\n"
        "  what():  [TensorRT-LLM][ERROR] Assertion failed: Failed: MPI error /src/common/"
        "mpiUtils.cpp:211 '6'\n"
    )
    findings = _findings(tmp_path, text)
    (root,) = _roots(findings)
    assert root.code == "PP809" and root.extra["no_root"] == "network-or-other-node"


def test_a_record_earlier_in_the_roots_log_is_said_to_stand_above_it(tmp_path):
    text = (
        "host-a:4242:4242 [0] init.cc:1582 NCCL WARN Cuda failure 'CUDA driver version is "
        "insufficient for CUDA runtime version'\n"
        "[2026-12-03 14:56:05 PP0] Scheduler hit an exception: Traceback (most recent call "
        "last):\n"
        '  File "/srv/sglang/python/sglang/srt/managers/scheduler.py", line 10, in run\n'
        "    x()\n"
        "ValueError: bad weight\n"
    )
    findings = _findings(tmp_path, text)
    (after,) = [f for f in findings if f.code == "PP803"]
    assert "above the root in its log" in after.message
    assert "after the root" not in after.message and "before the root" not in after.message


def test_an_elided_install_path_is_said_to_be_elided(tmp_path):
    text = (
        "[TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File ".../sglang/srt/managers/scheduler.py", line 4546, in run_scheduler_process\n'
        "    scheduler.run_event_loop()\n"
        "ValueError: bad weight\n"
    )
    findings = _findings(tmp_path, text)
    (build,) = [f for f in findings if f.code == "PP806"]
    assert build.extra["install"] == "elided"
    assert "a path the log elides" in build.message and "installed in" not in build.message


def test_rays_error_of_a_remote_task_follows_the_tasks_own_failure(tmp_path):
    text = (
        "(WorkerDict pid=2201) Traceback (most recent call last):\n"
        '(WorkerDict pid=2201)   File "/srv/app/workers.py", line 300, in generate\n'
        "(WorkerDict pid=2201)     out = self.model(x)\n"
        "(WorkerDict pid=2201) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
        "2.00 GiB\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/app/main.py", line 40, in main\n'
        "    ray.get(runner.run.remote(config))\n"
        "ray.exceptions.RayTaskError(OutOfMemoryError): ray::main_task() (pid=2100, "
        "ip=10.0.0.2)\n"
        '  File "/srv/app/workers.py", line 300, in generate\n'
        "    out = self.model(x)\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    )
    findings = _findings(tmp_path, text)
    roots = _roots(findings)
    assert [(f.code, f.key) for f in roots] == [("PP802", "WorkerDict pid=2201")]
    (after,) = [f for f in findings if f.code == "PP803"]
    # The driver's traceback relays the task's: its failure is the remote exception Ray
    # carries, after the root.
    assert "torch.OutOfMemoryError: CUDA out of memory" in after.message
    assert "collateral of WorkerDict pid=2201" in after.message


_DRIVER = (
    "Traceback (most recent call last):\n"
    '  File "/app/driver.py", line 10, in <module>\n'
    "    ray.get(refs)\n"
    '  File "/usr/lib/python3/site-packages/ray/_private/worker.py", line 2630, in get\n'
    "    raise value.as_instanceof_cause()\n"
)


def test_rays_error_heads_the_remote_traceback_whose_aux_failure_is_the_root(tmp_path):
    text = _DRIVER + (
        "ray.exceptions.RayTaskError(RuntimeError): ray::Stage.step() (pid=11, ip=10.0.0.1, "
        "actor_id=ab)\n"
        '  File "/usr/local/lib/python3.11/site-packages/sglang/srt/managers/'
        'scheduler_pp_mixin.py", line 900, in pop_auxiliary_output_from_pp_tensors\n'
        "    raise X\n"
        "RuntimeError: received a non-tensor auxiliary PP output\n"
    )
    findings = _findings(tmp_path, text)
    roots = _roots(findings)
    assert [f.code for f in roots] == ["PP801"]
    assert roots[0].extra["exception"] == "RuntimeError"
    assert "received a non-tensor auxiliary PP output" in roots[0].message
    assert roots[0].location is not None
    assert roots[0].location.function == "pop_auxiliary_output_from_pp_tensors"


def test_rays_error_of_a_remote_oom_gives_the_remote_headline_and_frame(tmp_path):
    text = _DRIVER + (
        "ray.exceptions.RayTaskError(OutOfMemoryError): ray::Stage.step() (pid=11, "
        "ip=10.0.0.1)\n"
        '  File "/srv/app/model.py", line 77, in forward\n'
        "    y = self.proj(x)\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    )
    findings = _findings(tmp_path, text)
    (root,) = _roots(findings)
    assert root.code == "PP802"
    assert root.extra["exception"] == "torch.OutOfMemoryError"
    assert root.extra["kind"] == "memory"
    assert root.location is not None
    assert root.location.function == "forward"
    assert "ray::Stage.step()" not in root.message


def test_a_sigquit_of_the_roots_second_written_before_it_is_said_so(tmp_path):
    text = (
        "[2026-03-03 03:53:36] Received sigquit from a child process. It usually means the "
        "child failed.\n"
        "[2026-03-03 03:53:36 TP3] Scheduler hit an exception: Traceback (most recent call "
        "last):\n"
        '  File "/srv/sglang/python/sglang/srt/managers/scheduler.py", line 10, in run\n'
        "    x()\n"
        "ValueError: bad weight\n"
    )
    findings = _findings(tmp_path, text)
    (sigquit,) = [f for f in findings if f.code == "PP804"]
    assert "before it in its log" in sigquit.message
    assert "after the root" not in sigquit.message


_DS_EXIT = (
    "[2023-07-10 04:26:35,999] [ERROR] [launch.py:324:sigkill_handler] ['/srv/venv/bin/python3', "
    "'-u', 'train.py', '--local_rank={rank}', '--deepspeed', 'ds.json'] exits with return code "
    "= {code}\n"
)
#: What each return code says, and which steps follow: a crash's core dump, a kill's OOM killer,
#: or an error status of the child's own (its own output).
_ENDS = {
    -11: ("killed by SIGSEGV (signal 11; ", "crash"),
    -6: ("killed by SIGABRT (signal 6; ", "crash"),
    -9: ("killed by SIGKILL (signal 9; ", "killed"),
    -15: ("killed by SIGTERM (signal 15; ", "killed"),
    1: ("exited with status 1 (", "exited"),
    2: ("exited with status 2 (", "exited"),
    137: ("exited with status 137, a shell's report of SIGKILL (128 + signal 9; ", "killed"),
    139: ("exited with status 139, a shell's report of SIGSEGV (128 + signal 11; ", "crash"),
}


@settings(max_examples=30, deadline=None)
@given(rank=st.integers(0, 63), code=st.sampled_from(sorted(_ENDS)))
def test_deepspeed_s_return_code_line_is_that_local_rank_s_death(tmp_path_factory, rank, code):
    # The launcher kills its other children first, then says which child ended and how: a
    # negative return code is the signal that ended it, a positive one its exit status (above
    # 128, a shell's report of a signal).
    text = (
        "[2023-07-10 04:26:05,876] [INFO] [launch.py:318:sigkill_handler] Killing subprocess "
        "94984\n" + _DS_EXIT.format(rank=rank, code=code)
    )
    log = tmp_path_factory.mktemp("ds") / "x.log"
    log.write_text(text)
    report = triage_paths([str(log)])
    (root,) = _roots(report.findings)
    assert root.code == "PP809" and root.extra["no_root"] == "process-died"
    assert root.severity.value == "error"
    assert root.message.startswith(f"no root in this log: local_rank {rank} died: ")
    said, end = _ENDS[code]
    assert said in " ".join(root.message.split())
    argvs = [s["argv"] for s in report.data["steps"]]
    assert root.extra["crashed"] is (end == "crash")
    assert root.extra["exited"] is (end == "exited")
    assert (["coredumpctl", "list"] in argvs) is (end == "crash")
    killed = ["journalctl", "-k", "-g", "Killed process|Out of memory"] in argvs
    assert killed is (end == "killed")


def test_deepspeed_s_return_code_zero_is_no_death(tmp_path):
    findings = _findings(tmp_path, _DS_EXIT.format(rank=0, code=0))
    assert _roots(findings) == []


_AGENT = (
    "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: {code}) local_rank: "
    "{rank} (pid: 20327) of binary: /srv/venv/bin/python3\n"
)
_TORCHRUN_CUT = (
    "Traceback (most recent call last):\n"
    '  File "/srv/venv/bin/torchrun", line 33, in <module>\n'
    "    sys.exit(load_entry_point('torch==1.12.0', 'console_scripts', 'torchrun')())\n"
    '  File "/srv/venv/lib/python3.8/site-packages/torch/distributed/run.py", line 761, in '
    "main\n"
    "    run(args)\n"
)


@settings(max_examples=30, deadline=None)
@given(rank=st.integers(0, 63), code=st.sampled_from([1, 2, 255]))
def test_torchrun_s_agent_line_is_that_local_rank_s_failure(tmp_path_factory, rank, code):
    # torchrun's own traceback after it relays the child's failure: the launcher's record of the
    # root's own exit, never the root nor collateral.
    log = tmp_path_factory.mktemp("agent") / "x.log"
    log.write_text(_AGENT.format(code=code, rank=rank) + _TORCHRUN_CUT)
    findings = triage_paths([str(log)]).findings
    (root,) = _roots(findings)
    assert root.code == "PP802" and root.key == f"local_rank {rank}"
    assert f"local_rank {rank} exited with code {code} " in root.message
    assert [f.code for f in findings if f.code == "PP803"] == []
    assert [r["line"] for r in root.extra["launcher_records"]] == [2]


def test_torchrun_s_agent_line_of_a_signal_is_a_death(tmp_path):
    findings = _findings(tmp_path, _AGENT.format(code=-9, rank=3))
    (root,) = _roots(findings)
    assert root.code == "PP809" and root.extra["no_root"] == "process-died"
    assert "killed by SIGKILL" in root.message


def test_torchrun_s_own_traceback_alone_is_no_root(tmp_path):
    findings = _findings(tmp_path, _TORCHRUN_CUT)
    assert [f.code for f in findings if f.code in ("PP801", "PP802")] == []


def _aux_with(escape: str) -> str:
    return (
        "[2026-12-03 14:56:07 PP0] Scheduler hit an exception: Traceback (most recent call "
        "last):\n"
        f'{escape}  File "/usr/local/lib/python3.11/site-packages/sglang/srt/managers/'
        'scheduler_pp_mixin.py", line 900, in pop_auxiliary_output_from_pp_tensors\n'
        "    raise RuntimeError(msg)\n"
        f"{escape}RuntimeError: received a non-tensor auxiliary PP output\n"
    )


@given(escape=st.sampled_from(["\x1b[2K", "\x1b[K", "\x1b[1G", "^[[2K", "^[[K", "^[[1G"]))
@settings(max_examples=12, deadline=None)
def test_a_progress_bars_erase_or_column_move_before_a_line_is_peeled(tmp_path_factory, escape):
    tmp_path = tmp_path_factory.mktemp("esc")
    findings = _findings(tmp_path, _aux_with(escape))
    roots = _roots(findings)
    assert [(f.code, f.key) for f in roots] == [("PP801", "PP0")]
    assert roots[0].extra["exception"] == "RuntimeError"


def test_a_relay_quoting_one_of_the_nine_is_that_message(tmp_path):
    # vLLM's engine quotes the worker's error word for word: sglang's message, its rule
    prefix = "(EngineCore pid=100) ERROR 07-15 21:01:01 [core.py:1240] "
    text = (
        f"{prefix}Traceback (most recent call last):\n"
        f'{prefix}  File "/v/vllm/v1/executor/multiproc_executor.py", line 394, in get_response\n'
        f"{prefix}    raise RuntimeError(\n"
        f"{prefix}RuntimeError: Worker failed with error 'received a non-tensor auxiliary PP "
        "output', please check the stack trace above for the root cause\n"
    )
    (root,) = _roots(_findings(tmp_path, text))
    assert root.code == "PP801"
    assert root.sglang_error == "received a non-tensor auxiliary PP output"
    assert "(quoted by RuntimeError: Worker failed with error" in root.message, root.message


def test_vllms_engine_core_start_failure_pointing_above_is_a_relay(tmp_path):
    text = (
        "(APIServer pid=1) Traceback (most recent call last):\n"
        '(APIServer pid=1)   File "/v/vllm/v1/engine/core_client.py", line 500, in __init__\n'
        "(APIServer pid=1)     raise RuntimeError(\n"
        "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause "
        "above. Failed core proc(s): {}\n"
    )
    (root,) = _roots(_findings(tmp_path, text))
    assert root.code == "PP809"
    assert root.extra["no_root"] == "process-died"
