"""A fault of the GPU or its links (an uncorrectable ECC error, the driver's Xid, NVLink, a GPU
fallen off the bus) is one kind, ``hardware``, wherever it surfaced (NCCL's watchdog record, a
CUDA error in a traceback), with steps that check the device and drain the node; ``triage`` and
``explain`` say the same of each line. What each is read as is written by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import cli

from ppaux.triage import kind_of_text

_CUDA_NOTE = (
    "CUDA kernel errors might be asynchronously reported at some other API call, so the "
    "stacktrace below might be incorrect.\n"
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
)
_TRACEBACK = (
    "[2026-12-01 10:00:01 PP1 TP0] Scheduler hit an exception: Traceback (most recent call "
    "last):\n"
    '  File "/opt/sglang/srt/model_executor/model_runner.py", line 300, in forward\n'
    "    return self.model.forward(x)\n"
)
#: Logs of one hardware fault each.
LOGS = {
    "watchdog-ecc": (
        "[rank1]:[E1206 10:00:00.000 ProcessGroupNCCL.cpp:1595] [PG 0 Rank 1] Process group "
        "watchdog thread terminated with exception: CUDA error: uncorrectable ECC error "
        "encountered\n"
    ),
    "watchdog-ecc-with-note": (
        "[rank1]:[E1206 10:00:00.000 ProcessGroupNCCL.cpp:1595] [PG 0 Rank 1] Process group "
        "watchdog thread terminated with exception: CUDA error: uncorrectable ECC error "
        f"encountered\n{_CUDA_NOTE}"
    ),
    "nvlink": (
        f"{_TRACEBACK}RuntimeError: CUDA error: uncorrectable NVLink error detected during the "
        f"execution\n{_CUDA_NOTE}"
    ),
    "fallen-off-the-bus": (
        f"{_TRACEBACK}RuntimeError: CUDA error: unknown error (the GPU has fallen off the bus)\n"
    ),
    "xid": (
        f"{_TRACEBACK}RuntimeError: CUDA error: unspecified launch failure; NVRM: Xid "
        "(PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\n"
    ),
    "ecc-enum": f"{_TRACEBACK}torch.AcceleratorError: CUDA error: cudaErrorECCUncorrectable\n",
}


def _triage(tmp_path: Path, text: str) -> dict:
    path = tmp_path / "server.log"
    path.write_text(text, encoding="utf-8")
    result = cli("triage", "--format", "json", str(path))
    assert result.exit_code == 1, result.output
    return json.loads(result.output)


@pytest.mark.parametrize("name", sorted(LOGS))
def test_a_hardware_fault_is_its_own_kind_with_the_device_s_steps(tmp_path, name):
    document = _triage(tmp_path, LOGS[name])
    (root,) = [f for f in document["findings"] if f["code"] == "PP802"]
    assert root["extra"]["kind"] == "hardware"
    assert "a hardware fault (the GPU or its links)" in root["message"]
    commands = [s["argv"] for s in document["steps"] if s["argv"]]
    assert ["nvidia-smi", "-q", "-d", "ECC,PAGE_RETIREMENT,ROW_REMAPPER"] in commands
    assert ["journalctl", "-k", "-g", "NVRM: Xid"] in commands
    comments = " ".join(s["comment"] for s in document["steps"])
    assert "drain the node" in comments
    # none of a kernel's or the network's steps: the device is at fault
    assert ["python3", "-m", "sglang.check_env"] not in commands
    assert ["export", "NCCL_DEBUG=INFO"] not in commands


@pytest.mark.parametrize("name", sorted(LOGS))
def test_explain_says_what_triage_says_of_the_same_text(name):
    text = LOGS[name].strip()
    said = " ".join(cli("explain", "--", text).output.split())
    assert "a hardware fault (the GPU or its links" in said
    assert "shape or kernel" not in said and "communication" not in said
    assert kind_of_text(text) == "hardware"
    piped = " ".join(cli("explain", "-", input=text).output.split())
    assert "a hardware fault (the GPU or its links" in piped


@pytest.mark.parametrize(
    "line",
    [
        # a peer's last words, quoted after its closed connection: this process's socket failed
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed "
        "by peer [10.0.0.2]:23456 (peer said: 'CUDA error: uncorrectable ECC error "
        "encountered')",
        # words of a path, not of the device
        "RuntimeError: Connection reset by peer while reading /data/uncorrectable ECC error.txt",
    ],
)
def test_a_fault_another_process_reported_is_not_this_one_s_hardware(line):
    assert kind_of_text(line) == "communication"


def test_a_watchdog_s_cuda_error_of_no_hardware_is_read_alike_by_both(tmp_path):
    # the C++ record names no exception type: its 'CUDA error' words are read as a message's
    line = (
        "[rank1]:[E1206 10:00:00.000 ProcessGroupNCCL.cpp:1595] [PG 0 Rank 1] Process group "
        "watchdog thread terminated with exception: CUDA error: invalid argument"
    )
    document = _triage(tmp_path, line + "\n")
    (root,) = [f for f in document["findings"] if f["code"] == "PP802"]
    assert root["extra"]["kind"] == "shape-kernel"
    said = " ".join(cli("explain", "--", line).output.split())
    assert "it is a shape or kernel failure" in said


_XID_79 = (
    "[Mon Dec  1 10:00:00 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU "
    "has fallen off the bus."
)


def test_the_driver_s_xid_record_of_the_device_is_a_hardware_root_in_both(tmp_path):
    document = _triage(tmp_path, _XID_79 + "\n")
    (root,) = [f for f in document["findings"] if f["code"] == "PP802"]
    assert root["extra"]["kind"] == "hardware"
    assert root["extra"]["exception"] == "driver Xid"
    said = " ".join(cli("explain", "--", _XID_79).output.split())
    assert "it is a hardware fault (the GPU or its links" in said


def test_an_xid_of_a_program_s_fault_is_no_hardware_fault(tmp_path):
    # Xid 13, a graphics engine exception: what a kernel did, not the device failing
    line = (
        "[Mon Dec  1 10:00:00 2026] NVRM: Xid (PCI:0000:3b:00): 13, pid=1234, Graphics "
        "Exception: ESR 0x504648"
    )
    document = _triage(tmp_path, line + "\n")
    (root,) = [f for f in document["findings"] if f["code"] == "PP802"]
    assert root["extra"]["kind"] != "hardware"
    assert kind_of_text(line) == root["extra"]["kind"]
