"""``ppaux explain`` on a line that is none of sglang's nine messages names its kind of failure:
C++ records (the NCCL watchdog, ``what():``), lines behind a launcher's process prefix, NCCL's
own error types, a process's death and a launcher's summary."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppaux.triage import kind_of_text, pasted_hint
from ppaux_cli.app import app

_WATCHDOG = (
    "[rank1]:[E ProcessGroupNCCL.cpp:1182] [Rank 1] NCCL watchdog thread terminated with "
    "exception: [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
    "OpType=BROADCAST) ran for 1800011 milliseconds before timing out."
)


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        (_WATCHDOG, "communication"),
        (
            "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 3] Process group watchdog thread "
            "terminated with exception: [Rank 3] Watchdog caught collective operation timeout",
            "communication",
        ),
        ("  what():  CUDA error: an illegal memory access was encountered", "shape-kernel"),
        (
            "terminate called after throwing an instance of 'std::runtime_error' what(): NCCL "
            "error: remote process exited or there was a network error, NCCL version 2.18.1",
            "communication",
        ),
        (
            "(VllmWorkerProcess pid=1037219) RuntimeError: The size of tensor a (7968) must "
            "match the size of tensor b (0) at non-singleton dimension 0",
            "shape-kernel",
        ),
        ("ncclInternalError: Internal check failed.", "communication"),
        # a communicator that could not be set up, whatever NCCL's error under it says
        (
            "RuntimeError: ncclCommInitRank failed: unhandled cuda error (run with "
            "NCCL_DEBUG=INFO for details)",
            "communication-init",
        ),
        (
            "tensorflow.python.framework.errors_impl.UnknownError:  ncclCommInitRank failed: "
            "unhandled system error",
            "communication-init",
        ),
        (
            "ncclRemoteError: A call failed possibly due to a network error or a remote process "
            "exiting prematurely. Last error: NET/IB : Got completion from peer 10.0.0.2<39138> "
            "with error 12",
            "communication",
        ),
        # the job's processes could not meet: a set-up's failure, as DistNetworkError's is
        (
            "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The "
            "connection to the C10d store has failed. See inner exception for details.",
            "communication-init",
        ),
        (
            "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError",
            "communication-init",
        ),
        (
            "torch.distributed.DistNetworkError: The server socket has failed to listen on any "
            "local network address. (errno: 98 - Address already in use).",
            "communication-init",
        ),
    ],
)
def test_the_kind_of_a_line(line, kind):
    assert kind_of_text(line) == kind


_EXCEPTION_LINES = st.sampled_from(
    [
        "RuntimeError: The size of tensor a (7968) must match the size of tensor b (0)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "RuntimeError: NCCL error: unhandled system error",
        "KeyError: 'hidden_states'",
        "ValueError: No valid attention backend found",
    ]
)


@settings(max_examples=100, deadline=None)
@given(
    line=_EXCEPTION_LINES,
    name=st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,20}", fullmatch=True),
    pid=st.integers(1, 10**9 - 1),
)
def test_a_launchers_process_prefix_never_changes_the_kind(line, name, pid):
    assert kind_of_text(f"({name} pid={pid}) {line}") == kind_of_text(line) is not None


def _explain(text: str) -> str:
    result = CliRunner().invoke(app, ["explain", text])
    assert result.exit_code == 2, result.output
    return result.output


def test_a_launchers_summary_is_a_message_not_a_rule_code():
    out = _explain("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ")
    assert "unknown rule code" not in out
    assert "torchrun's summary of a child that failed" in out


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("traceback : Signal 9 (SIGKILL) received by PID 4541", "was killed by SIGKILL"),
        (
            "(EngineCore pid=1879) (raylet) A worker died or was killed while executing a task "
            "by an unexpected system error.",
            "its Ray worker process ended",
        ),
        (
            "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this "
            "task.",
            "its Ray worker process ended",
        ),
    ],
)
def test_a_death_says_its_cause_is_elsewhere_and_where_to_look(line, said):
    out = " ".join(_explain(line).split())
    assert said in out and "OOM killer" in out


def test_deepspeed_s_return_code_of_a_signal_is_a_crash_of_that_process():
    out = " ".join(
        _explain(
            "[2023-07-10 04:26:35,999] [ERROR] [launch.py:324:sigkill_handler] ['python3', "
            "'train.py', '--local_rank=1'] exits with return code = -11"
        ).split()
    )
    assert "killed by SIGSEGV (signal 11" in out
    assert "core dump" in out and "OOM killer" not in out


@pytest.mark.parametrize("error", ["unhandled system error", "unhandled cuda error"])
def test_nccls_local_errors_are_not_said_to_follow_a_peers_death(error):
    out = " ".join(
        _explain(f"RuntimeError: NCCL error: {error} (run with NCCL_DEBUG=INFO)").split()
    )
    assert "own set-up" in out
    assert "when a peer died first" not in out


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        # torch's rank prefix, behind a launcher's and a replica's
        (
            "B-nemo-ft3/0 [default1]:[rank1]: torch.distributed.DistBackendError: [1] is setting "
            "up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store "
            "by key '0', but store->get('0') got error: wait timeout after 600000ms",
            "communication",
        ),
        # the async exception a collective's work raised
        (
            "(RayWorkerWrapper pid=92234, ip=10.0.0.2) [rank1]:[E1224 13:23:05.483840160 "
            "ProcessGroupNCCL.cpp:542] [Rank 12] Collective WorkNCCL(SeqNum=1, OpType=BROADCAST, "
            "Timeout(ms)=1800000) raised the following async exception: NCCL error: remote "
            "process exited or there was a network error, NCCL version 2.21.5",
            "communication",
        ),
        ("memory allocation of 2097152 bytes failed", "memory"),
        # the tail of torch's CUDA error, its first line not pasted
        (
            "Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/"
            "cuda-runtime-api/group__CUDART__TYPES.html for more information.",
            "shape-kernel",
        ),
        # sglang's check of the GPUs' free memory, in the process group's set-up: memory
        (
            "Traceback (most recent call last):\n"
            '  File "/srv/sglang/srt/model_executor/model_runner.py", line 300, in '
            "init_torch_distributed\n"
            '    raise ValueError("The memory capacity is unbalanced.")\n'
            "ValueError: The memory capacity is unbalanced. Some GPUs may be occupied by other "
            "processes.",
            "memory",
        ),
        (
            "  what():  [TensorRT-LLM][ERROR] Assertion failed: Failed: MPI error "
            "/src/cpp/tensorrt_llm/common/mpiUtils.cpp:211 '6'",
            "communication",
        ),
    ],
)
def test_the_kind_of_more_lines_triage_reads(line, kind):
    assert kind_of_text(line) == kind


def test_explain_says_the_kind_and_points_to_triage():
    out = " ".join(_explain("memory allocation of 2097152 bytes failed").split())
    assert "a memory failure" in out and "'ppaux triage'" in out


def test_the_parents_sigquit_is_said_to_follow_a_childs_failure():
    out = " ".join(
        _explain(
            "[2026-03-03 03:53:36] Received sigquit from a child process. It usually means the "
            "child failed."
        ).split()
    )
    assert "SIGQUIT from a failing child" in out and "PP804" in out and "'ppaux triage'" in out


@settings(max_examples=100, deadline=None)
@given(
    line=_EXCEPTION_LINES,
    rank=st.integers(0, 10**9 - 1),
    lead=st.sampled_from(["", "B-job/0 [default1]:", "(RayWorkerWrapper pid=7, ip=10.0.0.2) "]),
)
def test_torchs_rank_prefix_never_changes_the_kind(line, rank, lead):
    assert kind_of_text(f"{lead}[rank{rank}]: {line}") == kind_of_text(line) is not None


def test_a_relay_is_said_to_point_at_another_processs_failure():
    out = " ".join(
        _explain(
            "(EngineCore pid=404) ERROR 05-12 14:13:56 [core.py:1110] Exception: WorkerProc "
            "initialization failed due to an exception in a background process. See stack "
            "trace for root cause."
        ).split()
    )
    assert "relays another process's failure" in out and "'ppaux triage'" in out


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime version",
        "[rank0]: RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA "
        "runtime version",
    ],
)
def test_a_driver_older_than_the_runtime_is_a_mismatch_not_a_kernel_or_the_network(line):
    said = " ".join(CliRunner().invoke(app, ["explain", "--", line]).output.split())
    assert "a mismatch of the NVIDIA driver and the CUDA runtime" in said
    assert "check nvidia-smi against torch.version.cuda" in said
    assert "shape or kernel" not in said
    assert "NCCL_DEBUG" not in said


@given(
    result=st.sampled_from([1, 201, 700, 999, 4242]),
    func=st.from_regex(r"[a-z_]{1,12}", fullmatch=True),
    tag=st.sampled_from(["[torch_memory_saver.cpp] ", ""]),
)
@settings(max_examples=15, deadline=None)
def test_a_failed_driver_call_gets_the_driver_s_steps_not_a_synchronous_rerun(result, func, tag):
    # torch memory saver's record of a CUDA driver API call that failed: no kernel ran
    line = f"{tag}CUresult error  result={result} file=csrc/torch_memory_saver.cpp func={func}"
    hint = pasted_hint(line)
    assert hint is not None and hint.brief == "it is a CUDA driver API call that failed"
    assert f"in {func} (csrc/torch_memory_saver.cpp)" in hint.full
    assert hint.look == "look up the CUresult, then check the driver (nvidia-smi)"
    assert "CUDA_LAUNCH_BLOCKING" not in hint.look and "shape or kernel" not in hint.full


def test_explain_on_a_failed_driver_call_says_where_to_look_first():
    line = (
        "[torch_memory_saver.cpp] CUresult error  result=1 file=csrc/torch_memory_saver.cpp "
        "func=resume line=214"
    )
    said = CliRunner().invoke(app, ["explain", "--", line]).output.splitlines()[0]
    assert "a CUDA driver API call that failed; look up the CUresult" in said
    assert "CUDA_LAUNCH_BLOCKING" not in said


@pytest.mark.parametrize("tag", ["[torch_memory_saver.cpp] ", ""])
def test_a_failed_driver_call_out_of_memory_is_a_memory_failure_as_triage_reads_it(tag):
    line = f"{tag}CUresult error  result=2 file=csrc/torch_memory_saver.cpp func=malloc line=9"
    assert kind_of_text(line) == "memory"
    hint = pasted_hint(line)
    assert hint is not None and hint.brief == "it is a memory failure"
