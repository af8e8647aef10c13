"""One NCCL line alone: ``triage`` and ``explain`` tell the same story. NCCL's 'unhandled system
error' is a communication failure whose cause is most often the host's own set-up (both say so,
with the host's steps first); its 'unhandled cuda error' is a CUDA failure of that rank's own GPU
(a root of the shape or kernel kind, never the network's); torch's ``DistBackendError`` line is
read as a log; torch's 'Exception (either an error or timeout)' record is no timeout. What
each line must be read as is written by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import cli
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage import read_pasted

_HOST = "the cause is most often this host's own set-up, else the network or another node"
#: line, then by hand: PP809's no-root reason and the words triage and explain both say.
LINES = {
    "system-error": ("RuntimeError: NCCL error: unhandled system error", _HOST),
    "remote-exited": (
        "RuntimeError: NCCL error: remote process exited or there was a network error",
        "the cause is on the network or another node",
    ),
}


def _triage(tmp_path: Path, line: str) -> dict:
    path = tmp_path / "one-line.log"
    path.write_text(line + "\n", encoding="utf-8")
    result = cli("triage", "--format", "json", str(path))
    assert result.exit_code == 1, result.output  # read as a log, and never a pass
    return json.loads(result.output)


@pytest.mark.parametrize("name", sorted(LINES))
def test_triage_and_explain_tell_the_same_story_of_one_nccl_line(tmp_path, name):
    line, words = LINES[name]
    document = _triage(tmp_path, line)
    (found,) = [f for f in document["findings"] if f["code"] in ("PP802", "PP809")]
    assert found["code"] == "PP809"
    assert found["extra"]["no_root"] == "network-or-other-node"
    assert words in found["message"]
    said = " ".join(cli("explain", "--", line).output.split())
    assert words in said
    assert "'ppaux triage -' reads it as a communication failure and nothing else" in said
    commands = [" ".join(s["argv"]) for s in document["steps"] if s["argv"]]
    assert commands[0] in said  # the first command triage gives, named by explain too
    host = words == _HOST
    assert ("df -h /dev/shm" in commands) is host  # the host's own set-up checked first


_CUDA = (
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
    "ProcessGroupNCCL.cpp:1970, unhandled cuda error, NCCL version 2.20.5"
)


def test_an_unhandled_cuda_error_alone_is_that_rank_s_own_failure(tmp_path):
    document = _triage(tmp_path, _CUDA)
    (found,) = [f for f in document["findings"] if f["code"] in ("PP802", "PP809")]
    assert found["code"] == "PP802"
    assert found["extra"]["kind"] == "shape-kernel"
    said = " ".join(cli("explain", "--", _CUDA).output.split())
    assert "a shape or kernel failure" in said
    assert "a CUDA failure of this rank's own GPU, not the network's" in said
    assert "network or another node" not in said


_EITHER = (
    "[rank0]:[E1206 10:00:00.000000000 ProcessGroupNCCL.cpp:1515] [PG 0 (default_pg) Rank 0] "
    "Exception (either an error or timeout) detected by watchdog at work: 2, last enqueued NCCL "
    "work: 2, last completed NCCL work: 1."
)
_IMA = (
    "[rank0]:[E1206 10:00:00.000000000 ProcessGroupNCCL.cpp:1595] [PG 0 (default_pg) Rank 0] "
    "Process group watchdog thread terminated with exception: CUDA error: an illegal memory "
    "access was encountered"
)


def test_the_watchdog_s_either_an_error_or_timeout_record_is_no_timeout(tmp_path):
    document = _triage(tmp_path, f"{_IMA}\n{_EITHER}")
    (root,) = [f for f in document["findings"] if f["code"] == "PP802"]
    assert root["extra"]["kind"] == "shape-kernel"
    (echo,) = [f for f in document["findings"] if f["code"] == "PP803"]
    assert "watchdog timeout" not in echo["message"]
    assert "found a collective that failed (an error or a timeout" in echo["message"]


def test_a_real_watchdog_timeout_is_still_said_as_one(tmp_path):
    timeout = (
        "[rank0]:[E1206 10:00:01.000000000 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE) ran for 600000 "
        "milliseconds before timing out."
    )
    document = _triage(tmp_path, f"{_IMA}\n{_EITHER}\n{timeout}")
    (echo,) = [f for f in document["findings"] if f["code"] == "PP803"]
    assert "logged an NCCL watchdog timeout" in echo["message"]


def test_the_either_record_alone_says_no_root_in_both(tmp_path):
    document = _triage(tmp_path, _EITHER)
    (found,) = [f for f in document["findings"] if f["code"] == "PP809"]
    assert found["extra"]["no_root"] == "network-or-other-node"
    said = " ".join(cli("explain", "--", _EITHER).output.split())
    assert "no root in it, the cause is on the network or another node" in said
    assert "timed out or hung" in said and "a collective that failed" in said


def test_explain_reads_the_fault_and_its_either_record_as_triage_does():
    said = " ".join(cli("explain", "-", input=f"{_IMA}\n{_EITHER}").output.split())
    assert "'ppaux triage -' reads it as a shape or kernel failure" in said
    assert "timeout" not in said.split("reads it as", 1)[1].split(";", 1)[0]


_ONE_LINES = st.sampled_from(
    [
        "RuntimeError: NCCL error: unhandled system error",
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:1970, unhandled cuda error, NCCL version 2.20.5",
        "RuntimeError: CUDA error: uncorrectable ECC error encountered",
        "RuntimeError: CUDA error: uncorrectable NVLink error detected during the execution",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "[PG 0 Rank 1] Process group watchdog thread terminated with exception: CUDA error: "
        "uncorrectable ECC error encountered",
    ]
)


@settings(max_examples=60, deadline=None)
@given(
    line=_ONE_LINES,
    prefix=st.sampled_from(["", "[rank1]: ", "(RayWorkerWrapper pid=335) ", "node1 | "]),
)
def test_explain_says_triage_s_reading_of_a_line(line, prefix):
    # the promise: explain says of a line what triage reads in it, behind any prefix triage
    # takes off (the words each line must give are written by hand above)
    text = prefix + line
    reading = read_pasted(text)
    assert reading is not None
    said = " ".join(cli("explain", "--", text).output.split())
    assert " ".join(reading.words.split()) in said


_VERBS = "host-a:377:378 [4] ibvwrap.c:130 NCCL WARN Call to ibv_create_qp failed"


def test_a_failed_verbs_call_is_this_host_s_infiniband_set_up(tmp_path):
    document = _triage(tmp_path, _VERBS)
    (found,) = [f for f in document["findings"] if f["code"] == "PP809"]
    assert found["extra"]["nccl_setup"] == "ib-verbs"
    said = " ".join(cli("explain", "--", _VERBS).output.split())
    assert "this host's InfiniBand devices or their limits" in said
    assert "check ibv_devinfo and ulimit -l on this host" in said
    assert "one a line: ibv_devinfo ulimit -l export NCCL_IB_DISABLE=1" in said
    assert "DEVICE" not in said  # no placeholder given as a command to paste
    assert "network or another node" not in said
