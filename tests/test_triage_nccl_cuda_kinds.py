"""NCCL's ``WARN Cuda failure`` of a CUDA error past memory, an argument and a kernel's
fault is that process's failure too (exit 1), of the kind the error names: the GPU's ECC is
hardware; 802 'system not yet initialized' (the fabric manager), 999 'unknown error', an
invalid device ordinal, 217 peer access and devices busy or unavailable are the host's set-up;
702 'the launch timed out' is a kernel's. ``explain`` names the same kind.

Expected values are written here by hand, never computed with triage's code.
"""

from __future__ import annotations

import io

import pytest
from typer.testing import CliRunner

from ppaux.triage import triage_paths
from ppaux_cli.app import app

PREFIX = "node1:1234:5678 [3] include/alloc.h:124 NCCL WARN Cuda failure "
CASES = [
    ("214 'uncorrectable ECC error encountered'", "hardware", False),
    ("802 'system not yet initialized'", "shape-kernel", True),
    ("999 'unknown error'", "shape-kernel", True),
    ("'invalid device ordinal'", "shape-kernel", True),
    ("217 'peer access is not supported between these two devices'", "shape-kernel", True),
    ("'all CUDA-capable devices are busy or unavailable'", "shape-kernel", True),
    ("702 'the launch timed out and was terminated'", "shape-kernel", True),
]
DESCRIBED = {"hardware": "a hardware fault", "shape-kernel": "a shape or kernel failure"}


def _root(text: str):
    report = triage_paths(["run.log"], {"run.log": io.BytesIO(text.encode())})
    (found,) = [f for f in report.findings if f.code in ("PP802", "PP809")]
    return found, report


@pytest.mark.parametrize(("said", "kind", "host"), CASES)
def test_a_cuda_failure_nccl_warns_of_is_a_root_of_its_kind(said, kind, host):
    found, report = _root(PREFIX + said + "\n")
    assert found.code == "PP802"
    assert found.extra["kind"] == kind
    argvs = [s["argv"] for s in report.data["steps"] if s["argv"]]
    driver = ["nvidia-smi", "--query-gpu=index,name,driver_version", "--format=csv"]
    assert (driver in argvs) is host


def test_system_not_yet_initialized_names_the_fabric_manager():
    found, _ = _root(PREFIX + "802 'system not yet initialized'\n")
    assert "nvidia-fabricmanager" in " ".join(found.message.split())


@pytest.mark.parametrize(("said", "kind", "host"), CASES)
def test_triage_exits_1_and_explain_names_the_same_kind(tmp_path, said, kind, host):
    path = tmp_path / "run.log"
    path.write_text(PREFIX + said + "\n", encoding="utf-8")
    runner = CliRunner()
    assert runner.invoke(app, ["triage", str(path)]).exit_code == 1
    explained = runner.invoke(app, ["explain", PREFIX + said])
    assert DESCRIBED[kind] in " ".join(explained.output.split())
