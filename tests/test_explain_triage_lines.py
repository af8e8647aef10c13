"""``ppaux explain`` and ``ppaux triage`` agree on real final lines that are none of sglang's
nine messages: the same kind of failure (or the same reason for no root), and explain names
the next steps triage gives the line. Lines from public reports (fixtures/logs/real/README.md:
distrifuser's watchdog, DeepSpeed's launcher, torchrun's agent); what each must be read as is
written by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import cli

#: line, then by hand: triage's root code, its kind or no-root reason, words explain must say,
#: and a command triage's steps hold that explain names too (None: triage gives no command).
LINES = {
    "torchrun-child-failed": (
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "PP809",
        "process-died",
        "never a failure of its own",
        None,
    ),
    "torchrun-sigkill": (
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: "
        "0 (pid: 20327) of binary: /usr/bin/python3",
        "PP809",
        "process-died",
        "killed by SIGKILL",
        "journalctl -k",
    ),
    "torchrun-exit-1": (
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 "
        "(pid: 20327) of binary: /usr/bin/python3",
        "PP802",
        "unknown",
        "local_rank 0 exited with code 1",
        None,
    ),
    "deepspeed-sigsegv": (
        "[2023-07-10 04:26:35,999] [ERROR] [launch.py:324:sigkill_handler] ['/usr/bin/python3', "
        "'-u', 'train.py', '--local_rank=1'] exits with return code = -11",
        "PP809",
        "process-died",
        "killed by SIGSEGV",
        "coredumpctl",
    ),
    "heartbeat-monitor": (
        "[rank1]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 1] Heartbeat monitor timed out! "
        "Process will be terminated after dumping debug info. workMetaList_.size()=0",
        "PP809",
        "network-or-other-node",
        "the cause is on the network or another node",
        "export NCCL_DEBUG=INFO",
    ),
    "watchdog-stuck": (
        "[rank1]:[F ProcessGroupNCCL.cpp:1169] [PG 0 Rank 1] [PG 0 Rank 1] ProcessGroupNCCL's "
        "watchdog got stuck for 600 seconds without making progress in monitoring enqueued "
        "collectives.",
        "PP809",
        "network-or-other-node",
        "the cause is on the network or another node",
        "export NCCL_DEBUG=INFO",
    ),
    # transformerlab-api#381: flashinfer's JIT under sglang, its build tool not installed
    "ninja-missing": (
        "FileNotFoundError: [Errno 2] No such file or directory: 'ninja'",
        "PP802",
        "build",
        "it is a build failure",
        None,
    ),
}


def _triage(tmp_path: Path, line: str) -> dict:
    path = tmp_path / "last-line.log"
    path.write_text(line + "\n", encoding="utf-8")
    result = cli("triage", "--format", "json", str(path))
    assert result.exit_code == 1, result.output  # a process failed: never a pass
    return json.loads(result.output)


@pytest.mark.parametrize("name", sorted(LINES))
def test_explain_and_triage_agree_on_the_line(tmp_path, name):
    line, code, kind, words, command = LINES[name]
    document = _triage(tmp_path, line)
    roots = [f for f in document["findings"] if f["code"] in ("PP801", "PP802", "PP809")]
    assert [f["code"] for f in roots] == [code]
    extra = roots[0]["extra"]
    assert (extra["no_root"] if code == "PP809" else extra["kind"]) == kind
    commands = [" ".join(s["argv"]) for s in document["steps"] if s["argv"]]
    result = cli("explain", "--", line)
    assert result.exit_code == 2
    said = " ".join(result.output.split())
    assert words in said
    assert "'ppaux rules' lists" not in said  # a kind, not the plain refusal
    if command is not None:
        assert any(c.startswith(command) for c in commands), commands
        assert command in said


def test_explain_names_each_command_triage_gives_a_watchdog_line(tmp_path):
    line = LINES["heartbeat-monitor"][0]
    document = _triage(tmp_path, line)
    said = " ".join(cli("explain", "--", line).output.split())
    for step in document["steps"]:
        if step["argv"]:
            assert " ".join(step["argv"]) in said


#: Pastes of several lines holding none of the nine messages, and by hand: the kind triage
#: gives the whole paste's root and the words explain must say of it.
PASTES = {
    # a host allocation failure on one stage, then the other stage's closed connection
    "memory-then-closed-peer": (
        "[2026-12-03 14:56:07 PP1 TP0] memory allocation of 2097152 bytes failed\n"
        "[2026-12-03 14:56:09 PP0 TP0] Scheduler hit an exception: Traceback (most recent call "
        "last):\n"
        '  File "/t/torch/distributed/distributed_c10d.py", line 10, in recv\n'
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by "
        "peer [127.0.0.1]:13718\n",
        "memory",
        "reads it as a memory failure",
    ),
    # vLLM's relay first, the worker's own out-of-memory after it
    "relay-then-worker-oom": (
        "(EngineCore pid=100) ERROR 07-15 21:01:01 [core.py:1240] Traceback (most recent call "
        "last):\n"
        '(EngineCore pid=100) ERROR 07-15 21:01:01 [core.py:1240]   File "/v/vllm/v1/executor/'
        'multiproc_executor.py", line 394, in _init_executor\n'
        "(EngineCore pid=100) ERROR 07-15 21:01:01 [core.py:1240] RuntimeError: WorkerProc "
        "initialization failed due to an exception in a background process. See stack trace for "
        "root cause.\n"
        "(VllmWorker-0 pid=101) ERROR 07-15 21:01:02 [multiproc_executor.py:500] Traceback (most "
        "recent call last):\n"
        '(VllmWorker-0 pid=101) ERROR 07-15 21:01:02 [multiproc_executor.py:500]   File "/v/vllm/'
        'v1/worker/gpu_worker.py", line 200, in init_device\n'
        "(VllmWorker-0 pid=101) ERROR 07-15 21:01:02 [multiproc_executor.py:500] "
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n",
        "memory",
        "reads it as a memory failure",
    ),
}


@pytest.mark.parametrize("name", sorted(PASTES))
def test_explain_reads_a_whole_paste_as_triage_reads_it(tmp_path, name):
    text, kind, words = PASTES[name]
    path = tmp_path / "paste.log"
    path.write_text(text, encoding="utf-8")
    result = cli("triage", "--format", "json", str(path))
    assert result.exit_code == 1, result.output
    (root,) = [f for f in json.loads(result.output)["findings"] if f["code"] == "PP802"]
    assert root["extra"]["kind"] == kind
    said = " ".join(cli("explain", "-", input=text).output.split())
    assert words in said, said
    assert "communication" not in said  # the closed connection or the relay is not the root


def test_a_paste_with_no_root_says_the_root_may_be_above_it():
    # the last lines of a log whose root (PP101's message) is further up
    tail = "".join(Path("fixtures/logs/sglang-aux-list.log").read_text().splitlines(True)[-12:])
    said = " ".join(cli("explain", "-", input=tail).stderr.split())
    assert "no root in it" in said
    assert "a paste may leave the root out: ppaux triage on the whole log" in said
    # triage on the whole log is unchanged: it finds the root there
    whole = cli("triage", "fixtures/logs/sglang-aux-list.log", "--format", "json")
    codes = [f["code"] for f in json.loads(whole.stdout)["findings"]]
    assert "PP801" in codes and "PP809" not in codes


def test_a_missing_ninja_gets_the_build_s_steps(tmp_path):
    document = _triage(tmp_path, LINES["ninja-missing"][0])
    commands = [" ".join(s["argv"]) for s in document["steps"] if s["argv"]]
    assert "nvcc --version" in commands, commands
