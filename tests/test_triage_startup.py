"""An NCCL error whose own frames say neither set-up nor a collective is read as a
communicator's set-up where its process's lines next to it say it was starting up (its
worker's method, a traceback of the same process through the start-up), and only then."""

from __future__ import annotations

from pathlib import Path

from ppaux.triage import triage_paths

_ERROR = [
    'ERROR 08-19 21:33:11 worker_base.py:386]   File "/venv/vllm/distributed/pynccl_wrapper.py"'
    ", line 223, in NCCL_CHECK",
    'ERROR 08-19 21:33:11 worker_base.py:386]     raise RuntimeError(f"NCCL error: {error_str}")',
    "ERROR 08-19 21:33:11 worker_base.py:386] RuntimeError: NCCL error: invalid usage",
]
_STARTING = [
    "Process Process-1:",
    "Traceback (most recent call last):",
    '  File "/venv/vllm/engine/async_llm_engine.py", line 471, in from_engine_args',
    "    engine = cls(",
    '  File "/venv/vllm/worker/worker.py", line 175, in init_device',
    "    init_worker_distributed_environment(self.parallel_config, self.rank)",
]
_SERVING = [
    "Process Process-1:",
    "Traceback (most recent call last):",
    '  File "/venv/vllm/engine/llm_engine.py", line 1100, in step',
    "    outputs = self.model_executor.execute_model(request)",
]


def _root(tmp_path: Path, lines: list[str]) -> tuple[str, str]:
    path = tmp_path / "vllm.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root,) = [f for f in triage_paths([str(path)]).findings if f.code == "PP802"]
    return root.extra["kind"], root.extra["exception"]


def test_a_start_up_traceback_of_the_same_process_next_to_it_says_set_up(tmp_path):
    assert _root(tmp_path, [*_ERROR, *_STARTING]) == ("communication-init", "RuntimeError")


def test_a_traceback_of_the_same_process_serving_says_nothing_of_set_up(tmp_path):
    assert _root(tmp_path, [*_ERROR, *_SERVING]) == ("communication", "RuntimeError")


def test_a_start_up_far_from_the_error_is_not_its_process_s_start_up(tmp_path):
    filler = [
        f"INFO 08-19 21:40:{n % 60:02d} metrics.py:341] Avg throughput: 1.0" for n in range(60)
    ]
    assert _root(tmp_path, [*_ERROR, *filler, *_STARTING])[0] == "communication"


def test_a_collective_in_the_frames_keeps_it_in_flight(tmp_path):
    collective = [
        'ERROR 08-19 21:33:11 worker_base.py:386]   File "/venv/vllm/distributed/pynccl.py", '
        "line 120, in all_reduce",
        "ERROR 08-19 21:33:11 worker_base.py:386]     self.nccl.ncclAllReduce(buffer)",
    ]
    assert _root(tmp_path, [*collective, *_ERROR, *_STARTING])[0] == "communication"


def _ray(pid: int, text: str) -> str:
    return f"(RayWorkerWrapper pid={pid}) ERROR 01-29 07:44:33 worker_base.py:467] {text}"


_RAY_ERROR = [
    _ray(335, '  File "/venv/vllm/distributed/pynccl_wrapper.py", line 254, in NCCL_CHECK'),
    _ray(335, "RuntimeError: NCCL error: internal error"),
]


def test_another_worker_s_folded_start_up_stands_for_this_one_s(tmp_path):
    folded = [
        _ray(994, "Error executing method init_device. [repeated 14x across cluster]"),
        _ray(994, "Traceback (most recent call last): [repeated 14x across cluster]"),
    ]
    assert _root(tmp_path, [*_RAY_ERROR, *folded])[0] == "communication-init"


def test_another_worker_s_own_start_up_is_not_this_one_s(tmp_path):
    own = [
        _ray(994, "Error executing method init_device."),
        _ray(994, "Traceback (most recent call last):"),
    ]
    assert _root(tmp_path, [*_RAY_ERROR, *own])[0] == "communication"


_RESTART = [
    "INFO 08-19 21:33:20 supervisor.py:12] worker exited; restarting (attempt 1/3)",
    "Traceback (most recent call last):",
    '  File "/venv/vllm/engine/async_llm_engine.py", line 471, in from_engine_args',
    "    engine = cls(",
    '  File "/venv/torch/distributed/distributed_c10d.py", line 1500, in init_process_group',
    "    store, rank, world_size = next(rendezvous_iterator)",
    "torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
    "network address. port: 29500, code: -98, name: EADDRINUSE, message: address already in use",
]


def _no_root(tmp_path: Path, lines: list[str]) -> str:
    path = tmp_path / "vllm.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (found,) = [f for f in triage_paths([str(path)]).findings if f.code in ("PP802", "PP809")]
    assert found.code == "PP809", found.message
    return found.extra["no_root"]


def test_a_later_restart_that_fails_at_set_up_is_not_the_error_s_start_up(tmp_path):
    # the restart's traceback ends in an error of its own: another failure, after this one
    assert _no_root(tmp_path, [*_ERROR, *_RESTART]) == "network-or-other-node"


def test_the_error_s_own_method_says_in_flight_whatever_follows(tmp_path):
    method = (
        "ERROR 08-19 21:33:11 worker_base.py:386] Error executing method execute_model. This "
        "might cause deadlock in distributed execution."
    )
    assert _root(tmp_path, [method, *_ERROR, *_STARTING]) == ("communication", "RuntimeError")


def test_a_start_up_that_carries_the_same_error_up_says_set_up(tmp_path):
    carried = [*_STARTING, "RuntimeError: NCCL error: invalid usage"]
    assert _root(tmp_path, [*_ERROR, *carried]) == ("communication-init", "RuntimeError")


def test_a_fragment_s_own_start_up_method_before_its_frames_says_set_up(tmp_path):
    method = (
        "ERROR 08-19 21:33:11 worker_base.py:386] Error executing method init_device. This "
        "might cause deadlock in distributed execution."
    )
    assert _root(tmp_path, [method, *_ERROR])[0] == "communication-init"


def test_ray_s_folded_copy_of_the_same_traceback_is_no_second_root(tmp_path):
    def traceback(pid: int, fold: str) -> list[str]:
        return [
            _ray(pid, f"Error executing method init_device.{fold}"),
            _ray(pid, f"Traceback (most recent call last):{fold}"),
            _ray(pid, f'  File "/venv/vllm/worker/worker.py", line 175, in init_device{fold}'),
            _ray(pid, f"RuntimeError: NCCL error: internal error{fold}"),
        ]

    path = tmp_path / "ray.log"
    lines = [*traceback(335, ""), *traceback(994, " [repeated 14x across cluster]")]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = triage_paths([str(path)])
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert root.extra["message"] == "NCCL error: internal error"  # no fold note in the error
    assert root.extra["ranks"] == ["RayWorkerWrapper pid=335", "RayWorkerWrapper pid=994"]
    assert len(report.data["incidents"]) == 1


def test_explain_reads_the_restart_paste_as_triage_does():
    from helpers import cli

    text = "\n".join([*_ERROR, *_RESTART])
    said = " ".join(cli("explain", "-", input=text).output.split())
    assert "'ppaux triage -' reads it as a communication failure and nothing else" in said
    assert "the cause is on the network or another node" in said
    assert "at set-up" not in said


def test_ray_s_fold_note_after_a_chain_s_sentence_is_no_message(tmp_path):
    fold = " [repeated 2x across cluster]"
    lines = [
        "(SGLangEngine pid=7) [2026-01-04 01:42:55 TP1] Scheduler hit an exception: Traceback "
        "(most recent call last):" + fold,
        '(SGLangEngine pid=7)   File "/srv/app/jit.py", line 299, in run_ninja' + fold,
        "(SGLangEngine pid=7)     subprocess.run(" + fold,
        "(SGLangEngine pid=7) subprocess.CalledProcessError: Command '['ninja']' returned "
        "non-zero exit status 1." + fold,
        "(SGLangEngine pid=7) The above exception was the direct cause of the following "
        "exception:" + fold,
    ]
    log = tmp_path / "ray.log"
    log.write_text("\n".join(lines) + "\n")
    findings = triage_paths([str(log)]).findings
    (root,) = [f for f in findings if f.code == "PP802"]
    assert root.extra["message"] == "Command '['ninja']' returned non-zero exit status 1."
    # the chain goes on past the paste: its own exception is cut
    assert [f.key for f in findings if f.code == "PP810"] == ["TP1"]
