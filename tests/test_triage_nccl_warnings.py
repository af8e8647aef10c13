"""A log of NCCL's warnings alone is triaged, not refused: a communication failure whose root
the log does not hold, with what to set and collect; beside a failure they add nothing."""

from __future__ import annotations

import io

import pytest
from helpers import REPO, cli

from ppaux.triage import triage_paths

WARNINGS = [
    "node1:4242:4300 [0] transport/net_socket.cc:540 NCCL WARN NET/Socket : peer "
    "10.0.0.2<45678> shutdown",
    "node1:4242:4300 [0] NCCL WARN Call to connect returned Connection refused, retrying",
    "node1:4243:4301 [1] include/socket.h:409 NCCL WARN Net : Connect to 10.0.0.2<45678> "
    "failed : Connection refused",
]


def test_a_log_of_nccl_warnings_only_has_no_root_on_the_network(tmp_path):
    path = tmp_path / "nccl.log"
    path.write_text("\n".join(WARNINGS) + "\n", encoding="utf-8")
    (found,) = [f for f in triage_paths([str(path)]).findings if f.code == "PP809"]
    assert found.extra["no_root"] == "network-or-other-node"
    assert "only NCCL's warnings (3 lines)" in found.message
    assert "node1 pid 4242" in found.message
    result = cli("triage", str(path))
    assert result.exit_code == 0, result.output  # warnings: no process is known to have died
    assert "not an sglang log" not in result.output
    assert "export NCCL_DEBUG=INFO" in result.output


def test_nccl_warnings_beside_a_failure_add_no_finding(tmp_path):
    lines = [
        *WARNINGS,
        "[2026-12-01 10:00:01 PP1 TP0] Scheduler hit an exception: Traceback (most recent call "
        "last):",
        '  File "/opt/sglang/srt/managers/scheduler.py", line 9, in run_scheduler_process',
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    ]
    path = tmp_path / "mixed.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    codes = [f.code for f in triage_paths([str(path)]).findings]
    assert "PP802" in codes
    assert "PP803" not in codes and "PP809" not in codes


def test_a_healthy_logs_nccl_warning_at_shutdown_is_no_finding(tmp_path):
    healthy = (REPO / "fixtures" / "logs" / "sglang-healthy.log").read_text(encoding="utf-8")
    path = tmp_path / "healthy.log"
    path.write_text(
        healthy + "node1:4242:4300 [0] proxy.cc:1584 NCCL WARN [Service thread] Error encountered "
        "progressing operation=Connect, res=3, closing connection\n",
        encoding="utf-8",
    )
    assert triage_paths([str(path)]).findings == ()
    assert cli("triage", str(path), "--fail-on", "warning").exit_code == 0


def test_words_about_nccl_warnings_are_no_warning(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("If you see NCCL WARN lines, set NCCL_DEBUG=INFO.\n", encoding="utf-8")
    result = cli("triage", str(path))
    assert result.exit_code == 2
    assert "not an sglang log" in result.output


def test_nccl_s_warning_that_the_driver_is_too_old_is_the_host_s_own_root(tmp_path):
    """NCCL's warning of a CUDA call failed for the host's set-up (a driver older than the
    runtime) is that process's failure, at set-up, never the network's: a root at error, with
    the driver and runtime to compare on that host before the network's settings."""
    path = tmp_path / "driver.log"
    path.write_text(
        "NCCL INFO cudaDriverVersion 11070\n"
        "init.cc:1582 NCCL WARN Cuda failure 'CUDA driver version is insufficient for CUDA "
        "runtime version'\n"
        "Failed, NCCL error /src/utils/nccl_utils.cc:296 'unhandled cuda error'\n",
        encoding="utf-8",
    )
    report = triage_paths([str(path)])
    (root,) = [f for f in report.findings if f.code in ("PP802", "PP809")]
    assert root.code == "PP802"
    assert root.extra["exception"] == "ncclUnhandledCudaError"
    assert root.extra["kind"] == "communication-init"
    assert "CUDA driver version is insufficient" in root.message
    argvs = [step["argv"] for step in report.data["steps"] if step["argv"]]
    driver = ["nvidia-smi", "--query-gpu=index,name,driver_version", "--format=csv"]
    assert driver in argvs
    assert argvs.index(driver) < argvs.index(["export", "NCCL_DEBUG=INFO"])
    result = cli("triage", str(path))
    assert result.exit_code == 1, result.output
    assert "driver" in result.output


def test_nccl_s_other_cuda_warnings_stay_warnings(tmp_path):
    """A CUDA failure NCCL warns of that triage does not name (neither the host's set-up, nor
    memory, a kernel's fault or the GPU's) is no root."""
    path = tmp_path / "warned.log"
    path.write_text(
        WARNINGS[0] + "\n"
        "node1:4242:4300 [0] transport/p2p.cc:290 NCCL WARN Cuda failure 'operation not "
        "supported'\n",
        encoding="utf-8",
    )
    (found,) = [f for f in triage_paths([str(path)]).findings if f.code in ("PP802", "PP809")]
    assert found.code == "PP809"
    assert found.extra["no_root"] == "network-or-other-node"


IB_COMPLETION = (
    "host-a:3468:3905 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer "
    "10.0.0.2<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv)\n"
    "host-a:3468:3905 [4] NCCL INFO proxy.cc:878 -> 6 [Progress Thread]\n"
)


@pytest.mark.parametrize("spelling", ["status=12", "error 12"])
def test_a_transfer_failed_in_flight_is_an_error_with_no_root(spelling):
    # the proxy's ncclRemoteError leaves the communicator in error: the job is down
    log = IB_COMPLETION.replace("status=12", spelling)
    report = triage_paths(["run.log"], {"run.log": io.BytesIO(log.encode())})
    (found,) = report.findings
    assert (found.code, found.extra["no_root"]) == ("PP809", "network-or-other-node")
    assert found.severity.name == "ERROR"
