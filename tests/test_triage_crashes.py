"""``ppaux triage`` on failures that are no sglang traceback: torch's C++ records and a dying
process's last words, a rank's traceback with no frame of sglang's, and which failure is the
root when a traceback is cut. Expected values are written by hand from the lines given."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppaux.triage import triage_paths
from ppaux_cli.app import app

ROOTS = ("PP801", "PP802", "PP809")
SITE = "/usr/local/lib/python3.10/dist-packages"


def _triage(tmp_path: Path, text: str) -> tuple[int, list[dict]]:
    log = tmp_path / "crash.log"
    log.write_text(text)
    result = CliRunner().invoke(app, ["triage", "--format", "json", str(log)])
    document = json.loads(result.output)
    assert document["problems"] == []
    return result.exit_code, document["findings"]


def _root(findings: list[dict]) -> dict:
    return next(f for f in findings if f["code"] in ROOTS)


WATCHDOG_IMA = (
    "[rank0]:[E504 23:32:59.338859795 ProcessGroupNCCL.cpp:1896] [PG ID 0 PG GUID "
    "0(default_pg) Rank 0] Process group watchdog thread terminated with exception: CUDA error: "
    "an illegal memory access was encountered\n"
    "Exception raised from c10_cuda_check_implementation at /pytorch/c10/cuda/"
    "CUDAException.cpp:43 (most recent call first):\n"
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f84 in "
    "/usr/lib/libc10.so)\n"
)


def test_a_watchdog_that_ended_on_an_illegal_memory_access_is_its_rank_s_failure(tmp_path):
    code, findings = _triage(tmp_path, WATCHDOG_IMA)
    assert code == 1
    root = _root(findings)
    assert root["code"] == "PP802"
    assert root["key"] == "rank 0"
    assert root["extra"]["exception"] == "CUDA error"
    assert root["extra"]["kind"] == "shape-kernel"


def test_a_watchdog_that_ran_out_of_memory_is_a_memory_failure(tmp_path):
    code, findings = _triage(
        tmp_path,
        "[rank2]:[E504 23:32:59.3 ProcessGroupNCCL.cpp:1896] [PG ID 0 PG GUID 0 Rank 2] Process "
        "group watchdog thread terminated with exception: CUDA error: out of memory\n",
    )
    assert code == 1
    root = _root(findings)
    assert (root["key"], root["extra"]["kind"]) == ("rank 2", "memory")


def test_a_what_line_names_the_process_group_s_rank(tmp_path):
    code, findings = _triage(
        tmp_path,
        "  what():  [PG ID 2 PG GUID 3 Rank 1] Process group watchdog thread terminated with "
        "exception: CUDA error: an illegal memory access was encountered\n",
    )
    assert code == 1
    root = _root(findings)
    assert root["key"] == "rank 1"
    assert root["extra"]["kind"] == "shape-kernel"


def test_terminate_and_its_what_line_are_one_failure(tmp_path):
    code, findings = _triage(
        tmp_path,
        "terminate called after throwing an instance of 'c10::AcceleratorError'\n"
        "  what():  CUDA error: unspecified launch failure\n"
        "Fatal Python error: Aborted\n",
    )
    assert code == 1
    roots = [f for f in findings if f["code"] in ROOTS]
    assert len(roots) == 1
    assert roots[0]["extra"]["exception"] == "c10::AcceleratorError"
    assert roots[0]["extra"]["kind"] == "shape-kernel"
    assert not [f for f in findings if f["code"] == "PP803"]


def test_terminate_whose_what_line_is_the_watchdog_s_error_is_that_error(tmp_path):
    code, findings = _triage(
        tmp_path,
        "terminate called after throwing an instance of 'c10::DistBackendError'\n"
        "  what():  [PG ID 2 PG GUID 3 Rank 1] Process group watchdog thread terminated with "
        "exception: CUDA error: an illegal memory access was encountered\n",
    )
    assert code == 1
    roots = [f for f in findings if f["code"] in ROOTS]
    assert [(f["key"], f["extra"]["exception"], f["extra"]["kind"]) for f in roots] == [
        ("rank 1", "CUDA error", "shape-kernel")
    ]
    assert not [f for f in findings if f["code"] == "PP803"]


def test_a_terminate_on_a_backend_error_alone_fails_a_gate(tmp_path):
    code, findings = _triage(
        tmp_path, "terminate called after throwing an instance of 'c10::DistBackendError'\n"
    )
    assert code == 1
    root = _root(findings)
    assert root["code"] == "PP809"
    assert root["severity"] == "error"


def test_a_fault_handler_s_abort_is_a_failure_whose_cause_is_not_in_the_log(tmp_path):
    code, findings = _triage(
        tmp_path,
        "frame #4: <unknown function> + 0x126850 (0x7f06 in /usr/lib/libc.so.6)\n\n"
        "Fatal Python error: Aborted\n\n"
        "Thread 0x00007ee43dfff640 (most recent call first):\n"
        f'  File "{SITE}/sglang/srt/managers/scheduler.py", line 1419 in watchdog_thread\n',
    )
    assert code == 1
    root = _root(findings)
    assert root["code"] == "PP802"
    assert root["extra"]["exception"] == "Fatal Python error"
    assert "the cause is not in this log" in root["message"]


def test_a_fault_handler_s_words_written_into_another_thread_s_line_are_read(tmp_path):
    code, findings = _triage(
        tmp_path,
        '  File "/opt/conda/lib/python3.10/threading.py", line 320 in wait\n'
        '  File "/opt/torch/utils/_contextlib.pyFatal Python error: "Aborted, line \n',
    )
    assert code == 1
    root = _root(findings)
    assert root["extra"]["exception"] == "Fatal Python error"
    assert root["extra"]["message"].startswith("Aborted (the process aborted")


def test_torchrun_s_summary_names_the_rank_that_failed_first(tmp_path):
    code, findings = _triage(
        tmp_path,
        "Failures:\n[1]:\n  time      : 2024-03-05_07:01:51\n  host      : host-a\n"
        "  rank      : 1 (local_rank: 1)\n  exitcode  : 1 (pid: 69812)\n"
        "------------------------------------------------------------\n"
        "Root Cause (first observed failure):\n[0]:\n  time      : 2024-03-05_07:01:51\n"
        "  host      : host-a\n  rank      : 0 (local_rank: 0)\n  exitcode  : 1 (pid: 69811)\n",
    )
    assert code == 1
    root = _root(findings)
    assert root["key"] == "rank 0"
    assert root["extra"]["exception"] is None
    assert "rank 0 exited with code 1" in root["message"]
    assert "cuts its traceback" not in root["message"]


def test_the_exception_on_a_worker_s_header_line_is_read(tmp_path):
    prefix = "(VllmWorkerProcess pid=839) ERROR 08-19 19:03:55 multiproc_worker_utils.py:226] "
    code, findings = _triage(
        tmp_path,
        f"{prefix}Exception in worker VllmWorkerProcess while processing method init_device: "
        "NCCL error: unhandled cuda error, Traceback (most recent call last):\n"
        f'{prefix}  File "/opt/vllm/worker/worker.py", line 132, in init_device\n'
        f"{prefix}    init_worker_distributed_environment(self.parallel_config)\n"
        f'{prefix}  File "/opt/vllm/worker/worker.py", line 348, in '
        "init_worker_distributed_environment\n",
    )
    assert code == 1
    root = _root(findings)
    assert root["code"] == "PP802"
    assert root["extra"]["exception"] == "Exception"
    assert root["extra"]["message"].startswith("NCCL error: unhandled cuda error")
    assert root["extra"]["kind"] == "communication-init"


def test_ray_s_repeat_count_and_a_written_carriage_return_are_not_a_function_s_name(tmp_path):
    log = tmp_path / "ray.log"
    log.write_text(
        "(RayWorkerWrapper pid=880) ERROR 04-16 01:01:44 [worker_base.py:620] Traceback (most "
        "recent call last): [repeated 6x across cluster]\n"
        '(RayWorkerWrapper pid=880) ERROR 04-16 01:01:44 [worker_base.py:620]   File "/opt/w.py",'
        " line 612, in execute_method [repeated 6x across cluster]\n"
        '  File "/opt/x.py", line 3, in run_scheduler_process^M\n'
    )
    report = triage_paths([str(log)])
    functions = {str(f.location.function) for f in report.findings if f.location}
    assert "execute_method" in functions
    assert not any("repeated" in f or "^M" in f for f in functions)
    alone = tmp_path / "cr.log"
    alone.write_text('  File "/opt/x.py", line 3, in run_scheduler_process^M\n')
    report = triage_paths([str(alone)])
    functions = {str(f.location.function) for f in report.findings if f.location}
    assert "run_scheduler_process" in functions


def test_a_watchdog_record_names_its_rank_behind_what_a_paste_put_before_it(tmp_path):
    code, findings = _triage(
        tmp_path,
        "`[36m(RayWorkerWrapper pid=4009) [rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog "
        "caught collective operation timeout: WorkNCCL(SeqNum=158046, OpType=GATHER) ran for "
        "600000 milliseconds before timing out.\n",
    )
    assert code == 1  # a rank's watchdog took it down: a gate fails
    root = _root(findings)
    assert root["code"] == "PP809"
    assert root["message"].startswith("no root in this log: the cause is on the network")
    assert "(rank 1 at " in root["message"]


# -- properties ------------------------------------------------------------------------------

_HEALTHY = "[2026-06-17 06:48:30 TP0] Decode batch. #running-req: 1, #token: 10\n"
#: Lines of a server's start-up, of other lengths: a log whose every other line has one
#: length reads as a terminal's hard wraps (ppaux.triage.wrapping), which is not what is tested.
_START = (
    "[2026-06-17 06:48:20 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16\n"
    "[2026-06-17 06:48:21 TP0] KV Cache is allocated.\n"
    "[2026-06-17 06:48:22] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to "
    "quit)\n"
)


def _sglang_traceback(n: int, complete: bool) -> str:
    text = (
        f"[2026-06-17 06:48:3{n % 10} TP{n % 4}] Scheduler hit an exception: Traceback (most "
        "recent call last):\n"
        f'  File "{SITE}/sglang/srt/managers/scheduler.py", line {10 + n}, in event_loop\n'
        "    self.run_batch()\n"
    )
    return text + (f"RuntimeError: step {n} failed\n" if complete else "")


#: Failure shapes a log may hold, each a function of a number (for ranks and times).
FAILURES = {
    "complete": lambda n: _sglang_traceback(n, True),
    "cut": lambda n: _sglang_traceback(n, False) + _HEALTHY,
    "one-line": lambda n: f"[2026-06-17 06:48:3{n % 10} PP1 TP{n % 4}] ValueError: bad {n}\n",
    "watchdog-timeout": lambda n: (
        f"[rank{n}]:[E1206 18:44:12.7 ProcessGroupNCCL.cpp:607] [Rank {n}] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE) ran for 600000 "
        "milliseconds before timing out.\n"
    ),
    "watchdog-ima": lambda n: WATCHDOG_IMA.replace("rank0", f"rank{n}"),
    "terminate": lambda n: "terminate called after throwing an instance of 'c10::Error'\n",
    "fatal": lambda n: "Fatal Python error: Segmentation fault\n",
    "gloo": lambda n: (
        f"[2026-06-17 06:48:3{n % 10} TP{n % 4}] RuntimeError: [../third_party/gloo/gloo/"
        "transport/tcp/pair.cc:534] Read error [10.0.0.2]:1234: Connection reset by peer\n"
    ),
}
_shapes = st.lists(
    st.tuples(st.sampled_from(sorted(FAILURES)), st.integers(0, 7)), min_size=1, max_size=5
)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(shapes=_shapes, healthy=st.integers(0, 3))
def test_a_log_holding_any_failure_never_exits_0(tmp_path, shapes, healthy):
    text = _START + _HEALTHY * healthy + "".join(_HEALTHY + FAILURES[s](n) for s, n in shapes)
    code, findings = _triage(tmp_path, text)
    assert code == 1, findings
    assert any(f["code"] in ROOTS and f["severity"] == "error" for f in findings)


_EXCEPTIONS = st.sampled_from(
    [
        ("ValueError", "bad value"),
        ("KeyError", "'hidden_states'"),
        ("AssertionError", "no room"),
        ("torch.OutOfMemoryError", "CUDA out of memory"),
        ("RuntimeError", "CUDA error: an illegal memory access was encountered"),
    ]
)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rank=st.integers(0, 15), raised=_EXCEPTIONS, shapes=_shapes)
def test_a_rank_s_complete_traceback_before_every_other_failure_is_the_root(
    tmp_path, rank, raised, shapes
):
    exception, message = raised
    prefix = f"[rank{rank}]: "
    first = (
        f"{prefix}Traceback (most recent call last):\n"
        f'{prefix}  File "/srv/train/run.py", line 8, in <module>\n'
        f"{prefix}    step(batch)\n"
        f"{prefix}{exception}: {message}\n"
    )
    rest = _START + "".join(_HEALTHY + FAILURES[s](n) for s, n in shapes)
    code, findings = _triage(tmp_path, first + rest)
    assert code == 1
    root = _root(findings)
    assert root["code"] == "PP802"
    assert root["key"] == f"rank {rank}"
    assert root["extra"]["exception"] == exception


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rank=st.integers(0, 15), other=st.integers(1, 15), before=st.booleans())
def test_a_cut_traceback_is_never_the_root_over_an_earlier_complete_one(
    tmp_path, rank, other, before
):
    cut = (rank + other) % 16  # another rank's (one stream's two tracebacks read as one)
    complete = (
        f"[rank{rank}]: Traceback (most recent call last):\n"
        f'[rank{rank}]:   File "/srv/train/run.py", line 8, in <module>\n'
        f"[rank{rank}]:     dist.all_reduce(x)\n"
        f"[rank{rank}]: torch.distributed.DistBackendError: NCCL error: remote process exited\n"
    )
    truncated = (
        f"[rank{cut}]: Traceback (most recent call last):\n"
        f'[rank{cut}]:   File "/srv/train/run.py", line 8, in <module>\n'
    )
    text = complete + truncated if before else truncated + _HEALTHY + complete
    code, findings = _triage(tmp_path, text)
    assert code == 1
    root = _root(findings)
    # the root is the first failure in the log's order: the complete one when it came first
    assert root["key"] == f"rank {rank if before else cut}"


MISMATCH = (
    "Detected mismatch between collectives on ranks. Rank {rank} is running collective: "
    "CollectiveFingerPrint(SequenceNumber=7, OpType=BROADCAST, TensorShape=[4096]), but Rank 0 "
    "is running collective: CollectiveFingerPrint(SequenceNumber=7, OpType=BROADCAST, "
    "TensorShape=[2048]).Collectives differ in the following aspects:   Tensor Tensor shapes: "
    "4096vs 2048"
)


def test_a_collective_mismatch_printed_without_its_type_is_its_rank_s_root(tmp_path):
    """torch's check that the ranks call the same collective, as a trainer printed it (no
    exception type), behind a launcher's ``<rank> :`` label: that rank's failure, of shape (the
    ranks' programs differ), never the network's."""
    text = "".join(
        f"3 :{line}\n"
        for line in (
            "Error in Trainer.compute_loss: " + MISMATCH.format(rank=3),
            "input_ids_shape: torch.Size([1, 2, 157])",
        )
    )
    code, findings = _triage(tmp_path, text)
    assert code == 1
    root = _root(findings)
    assert root["code"] == "PP802"
    assert root["extra"]["exception"] == "collective mismatch"
    assert root["extra"]["kind"] == "shape-kernel"
    assert root["extra"]["ranks"] == ["task 3, rank 3"]
    assert "TensorShape=[4096]" in root["message"]


def test_a_collective_mismatch_under_torch_s_rank_prefix_keeps_that_rank(tmp_path):
    text = "[rank1]: RuntimeError: " + MISMATCH.format(rank=1) + "\n"
    code, findings = _triage(tmp_path, text)
    root = _root(findings)
    assert code == 1
    assert root["extra"]["ranks"] == ["rank 1"]
    assert root["extra"]["exception"] == "RuntimeError"
    assert root["extra"]["kind"] == "shape-kernel"


_TIMEOUT = (
    "  what():  [Rank {rank}] NCCL watchdog thread terminated with exception: [Rank {rank}] "
    "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=31, OpType=_ALLGATHER_BASE, "
    "NumelIn=2, NumelOut=8, Timeout(ms)=1800000) ran for 1800693 milliseconds before timing "
    "out.\n"
)
_STRAY = (
    "    return recursively_apply(\n"
    "           ^^^^^^^^^^^^^^^^^^\n"
    f'  File "{SITE}/accelerate/utils/operations.py", line 128, in recursively_apply\n'
)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rank=st.integers(0, 63))
def test_a_stray_frame_after_a_watchdog_timeout_is_no_root(tmp_path, rank):
    # Another process's frame written in between a watchdog's records, with neither its header
    # nor its exception: the timed-out collective is the story, not an unseen exception.
    code, findings = _triage(tmp_path, _TIMEOUT.format(rank=rank) + _STRAY)
    (root,) = [f for f in findings if f["code"] in ROOTS]
    assert root["code"] == "PP809"
    assert root["extra"]["no_root"] == "network-or-other-node"
    assert code == 1


def test_a_stray_frame_before_any_watchdog_timeout_is_still_a_cut_root(tmp_path):
    _, findings = _triage(tmp_path, _STRAY + _TIMEOUT.format(rank=2))
    (root,) = [f for f in findings if f["code"] in ROOTS]
    assert root["code"] == "PP802" and root["extra"]["kind"] == "unknown"


_CUDA_TAIL = (
    "Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/cuda-runtime-api/"
    "group__CUDART__TYPES.html for more information.\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, so the "
    "stacktrace below might be incorrect.\n"
    "Exception raised from c10_cuda_check_implementation at /pytorch/c10/cuda/"
    "CUDAException.cpp:44 (most recent call first):\n"
    "frame #4: c10d::ProcessGroupNCCL::Watchdog::runLoop() + 0x969 (0x7f54 in /srv/torch/lib/"
    "libtorch_cuda.so)\n"
)


def test_a_cuda_error_s_tail_alone_is_that_kernel_failure(tmp_path):
    code, findings = _triage(tmp_path, _CUDA_TAIL)
    (root,) = [f for f in findings if f["code"] in ROOTS]
    assert root["code"] == "PP802" and code == 1
    assert root["extra"]["exception"] == "CUDA error"
    assert root["extra"]["kind"] == "shape-kernel"
    assert "cudaErrorIllegalAddress" in root["message"]


def test_a_cuda_error_s_tail_after_its_first_line_is_the_same_failure(tmp_path):
    text = (
        "[2026-06-17 06:48:30 TP0] Scheduler hit an exception: Traceback (most recent call "
        "last):\n"
        f'  File "{SITE}/sglang/srt/managers/scheduler.py", line 10, in run\n'
        "    self.step()\n"
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        + "".join(_CUDA_TAIL.splitlines(keepends=True)[:3])
    )
    _, findings = _triage(tmp_path, text)
    assert [(f["code"], f["key"]) for f in findings if f["code"] in ("PP802", "PP803")] == [
        ("PP802", "TP0")
    ]
    assert _root(findings)["extra"]["exception"] == "RuntimeError"
