"""NCCL's warnings that its communicator's set-up failed are that failure, not a collective's
elsewhere: PP809 'nccl-setup' (an error, exit 1) with the set-up's steps. Two processes as one
rank in the bootstrap ('Bootstrap Root : rank 1 of 8 ranks has already checked in'): the
ranks and the port; two ranks on one GPU ('Duplicate GPU detected'): the host's own device
selection, not the network; the bootstrap's connection failing (socketStartConnect,
socketPollConnect, 'Connect to ... failed'): the interface, the route, the bootstrap address.
A collective's timeout's steps (TORCH_NCCL_DUMP_ON_TIMEOUT) are no set-up's.

Expected values are written here by hand, never computed with triage's code.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppaux.triage import triage_paths
from ppaux_cli.app import app

ROOT = (
    "hpc-25-14:18569:18835 [0] bootstrap.cc:131 NCCL WARN Bootstrap Root : rank 1 of 8 ranks "
    "has already checked in\n"
)
ABORT = (
    "n122-246-085:12251:12400 [5] NCCL INFO bootstrap.cc:270 -> 2\n"
    "n122-246-085:12251:12400 [5] misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to "
    "fe80::966d:ae03:a2:8cf0%ib1<17943> failed : Software caused connection abort\n"
    "n122-246-085:12251:12400 [5] NCCL INFO init.cc:1350 -> 2\n"
)
NO_ROUTE = (
    "node5:240:240 [6] misc/socket.cc:533 NCCL WARN socketPollConnect: Connect to "
    "10.0.0.4<56849> returned 113(No route to host) errno 115(Operation now in progress)\n"
)
CUT = "tj1-asr-train-v100-13:941227:943077 [0] include/socket.h:390 NCCL WARN Connect to\n"
DUPLICATE_GPU = (
    "RuntimeError: NCCL error in: /opt/conda/work/torch/csrc/distributed/c10d/"
    "ProcessGroupNCCL.cpp:957, invalid usage, NCCL version 21.0.3\n"
    "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\n"
    "dirkg-zeppelin:4005:4041 [0] init.cc:521 NCCL WARN Duplicate GPU detected : rank 0 and "
    "rank 1 both on CUDA device 40\n"
)
VERBS = (
    "host-a:377:378 [4] ibvwrap.c:130 NCCL WARN Call to ibv_create_qp failed\n"
    "host-a:377:378 [4] NCCL INFO init.cc:878 -> 2\n"
    "host-a:377:378 [4] NCCL INFO group.cc:72 -> 2 [Async thread]\n"
)


def _report(text: str):
    return triage_paths(["run.log"], {"run.log": io.BytesIO(text.encode())})


def _found(text: str):
    (found,) = [f for f in _report(text).findings if f.code == "PP809"]
    return found


def _steps(text: str) -> str:
    report = _report(text)
    return " | ".join(f"{s['comment']} {' '.join(s['argv'] or [])}" for s in report.data["steps"])


@pytest.mark.parametrize(
    ("log", "name", "said"),
    [
        (ROOT, "duplicate-rank", "(rank 1 of 8 checked in twice; hpc-25-14 pid 18569 at run.log:1"),
        (
            ABORT,
            "bootstrap-connect",
            "(connect to fe80::966d:ae03:a2:8cf0%ib1<17943>: Software caused connection abort;",
        ),
        (NO_ROUTE, "bootstrap-connect", "connect to 10.0.0.4<56849>: 113(No route to host)"),
        (CUT, "bootstrap-connect", "connect to an address the line does not keep"),
        (DUPLICATE_GPU, "duplicate-gpu", "rank 0 and rank 1 both on CUDA device 40"),
        (VERBS, "ib-verbs", "verbs library failed (ibv_create_qp failed; host-a pid 377"),
    ],
)
def test_nccl_s_set_up_warning_is_named_and_an_error(log, name, said):
    found = _found(log)
    assert found.extra["no_root"] == "nccl-setup"
    assert found.extra["nccl_setup"] == name
    assert found.severity.name == "ERROR"
    assert said in " ".join(found.message.split()), found.message


@pytest.mark.parametrize(
    ("log", "wanted", "unwanted"),
    [
        (ROOT, ("MASTER_PORT", "SLURM_PROCID"), ("TORCH_NCCL_DUMP_ON_TIMEOUT", "set_device")),
        (
            ABORT,
            ("export NCCL_SOCKET_IFNAME=IFACE", "link-local fe80::", "ip route get"),
            ("TORCH_NCCL_DUMP_ON_TIMEOUT", "MASTER_PORT), and"),
        ),
        (
            DUPLICATE_GPU,
            ("torch.cuda.set_device(int(os.environ['LOCAL_RANK']))", "not the network"),
            ("TORCH_NCCL_DUMP_ON_TIMEOUT", "NCCL_SOCKET_IFNAME"),
        ),
        (
            VERBS,
            ("ibv_devinfo", "ulimit -l", "export NCCL_IB_HCA=", "export NCCL_IB_DISABLE=1"),
            ("TORCH_NCCL_DUMP_ON_TIMEOUT", "NCCL_SOCKET_IFNAME", "MASTER_PORT"),
        ),
    ],
)
def test_the_steps_are_the_set_up_s(log, wanted, unwanted):
    words = _steps(log)
    for word in wanted:
        assert word in words, words
    for word in unwanted:
        assert word not in words, words


def test_the_exit_is_1_on_the_command_line(tmp_path):
    path = tmp_path / "run.log"
    path.write_text(ABORT, encoding="utf-8")
    result = CliRunner().invoke(app, ["triage", str(path)])
    assert result.exit_code == 1, result.output


def test_a_collective_s_warning_is_no_set_up():
    log = (
        "node1:77:90 [3] enqueue.cc:100 NCCL WARN Cuda failure 'an illegal memory access was "
        "encountered'\n"
    )
    report = _report(log)
    assert all(f.extra.get("no_root") != "nccl-setup" for f in report.findings)


def test_the_words_in_a_sentence_are_no_warning():
    log = "we read that Bootstrap Root : rank 1 of 8 ranks has already checked in\n" + ROOT
    assert "at run.log:2" in " ".join(_found(log).message.split())


@settings(max_examples=30, deadline=None)
@given(rank=st.integers(0, 4095), size=st.integers(1, 4096))
def test_any_rank_and_size_are_named(rank, size):
    log = (
        f"host-1:10:11 [0] bootstrap.cc:131 NCCL WARN Bootstrap Root : rank {rank} of {size} "
        "ranks has already checked in\n"
    )
    flat = " ".join(_found(log).message.split())
    assert f"(rank {rank} of {size} checked in twice;" in flat


#: vLLM's pynccl wrapper's line that ncclCommInitRank failed (vllm-project/vllm #18997), a pod's
#: name glued before it, its worker's traceback below it cut.
_REAL = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "real"
_WRAPPER = _REAL / "vllm-18997-kuberay-tp8pp2-nccl-init-glued.log"


def test_a_wrappers_line_that_nccl_comm_init_rank_failed_is_the_set_up_root(tmp_path):
    report = triage_paths([str(_WRAPPER)])
    (root,) = [f for f in report.findings if f.code in ("PP801", "PP802", "PP809")]
    assert root.code == "PP802"
    assert root.extra["kind"] == "communication-init"
    assert root.extra["exception"] == "NCCL error"
    assert root.extra["message"].startswith("ncclCommInitRank failed: internal error")
    assert report.data["incidents"][0]["root"]["line"] == 1
    # the worker's traceback below it, cut before its exception, is that failure carried up
    assert [f.code for f in report.findings if f.code == "PP803"] == ["PP803"]
    commands = [" ".join(s["argv"]) for s in report.data["steps"] if s["argv"]]
    assert "export NCCL_DEBUG=INFO" in commands
    result = CliRunner().invoke(app, ["explain", _WRAPPER.read_text().split("\n", 1)[0]])
    assert "communication failure at set-up" in result.output


@settings(max_examples=100, deadline=None)
@given(
    reason=st.text(
        alphabet=st.characters(exclude_categories=("Cs", "Cc")), min_size=1, max_size=60
    ).filter(str.strip),
    said=st.sampled_from(["failed with error: NCCL error: ", "failed: NCCL error: ", "failed: "]),
)
def test_any_reason_after_nccl_comm_init_rank_failed_is_kept(reason, said):
    from ppaux.triage.ncclsetup import init_failure

    assert init_failure(
        f"ERROR 05-30 22:22:26 [pynccl.py:153] ncclCommInitRank {said}{reason}"
    ) == (f"ncclCommInitRank failed: {reason.strip()}")
    assert init_failure(f"ncclCommInitRank succeeded: {reason}") is None


@settings(max_examples=50, deadline=None)
@given(call=st.from_regex(r"ibv_[a-z_]{1,30}", fullmatch=True), device=st.integers(0, 15))
def test_any_failed_verbs_call_is_this_host_s_set_up(call, device):
    found = _found(f"host-b:9:10 [{device}] ibvwrap.c:130 NCCL WARN Call to {call} failed\n")
    assert found.extra["nccl_setup"] == "ib-verbs"
    assert f"({call} failed;" in " ".join(found.message.split())
    assert "this host's InfiniBand devices" in " ".join(found.message.split())


def test_no_placeholder_of_a_verbs_failure_is_given_as_a_command():
    steps = _report(VERBS).data["steps"]
    argvs = [s["argv"] for s in steps if s["argv"]]
    assert argvs and not any("DEVICE" in word or "<" in word for argv in argvs for word in argv)
    assert any("NCCL_IB_HCA=<device>" in (s["comment"] or "") for s in steps)
