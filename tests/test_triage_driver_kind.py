"""A driver, a CUDA runtime and a build that do not fit each other: its own kind (``driver``),
whatever exception or engine says it, with steps of the driver and the build, never a kernel's
(no CUDA_LAUNCH_BLOCKING). Each expected answer is written by hand."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppaux_cli.app import app

#: The words CUDA, torch and lmdeploy's TurboMind give, as those programs print them.
_WORDS = [
    "CUDA error: CUDA driver version is insufficient for CUDA runtime version",
    "[TM][ERROR] CUDA runtime error: API call is not supported in the installed CUDA driver "
    "/lmdeploy/src/turbomind/utils/allocator.h:163",
    "The NVIDIA driver on your system is too old (found version 11040). Please update your GPU "
    "driver by downloading and installing a new version from the URL: "
    "http://www.nvidia.com/Download/index.aspx",
    "CUDA error: no kernel image is available for execution on the device",
    "CUDA error: system has unsupported display driver / cuda driver combination",
]


def _triage(text: str) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as where:
        log = Path(where) / "driver.log"
        log.write_text(text)
        result = CliRunner().invoke(app, ["triage", "--format", "json", str(log)])
    assert result.exit_code == 1, result.output
    return json.loads(result.output)


@given(words=st.sampled_from(_WORDS), rank=st.sampled_from(["", "[rank3]: "]))
def test_a_driver_and_build_mismatch_is_its_own_kind_with_no_kernel_steps(words, rank):
    text = (
        f"{rank}Traceback (most recent call last):\n"
        f'{rank}  File "/opt/env/lib/python3.11/site-packages/engine/model.py", line 12, in load\n'
        f"{rank}    model.to(device)\n"
        f"{rank}RuntimeError: {words}\n"
    )
    document = _triage(text)
    (root,) = [f for f in document["findings"] if f["code"] == "PP802"]  # type: ignore[union-attr]
    assert root["extra"]["kind"] == "driver"
    assert "shape or kernel failure" not in root["message"]
    argvs = [" ".join(step["argv"]) for step in document["steps"] if step["argv"]]
    assert "nvidia-smi" in argvs
    assert not any("CUDA_LAUNCH_BLOCKING" in argv for argv in argvs)
    assert not any("compute-sanitizer" in argv for argv in argvs)


@given(words=st.sampled_from(_WORDS))
def test_explain_says_the_same_kind(words):
    said = " ".join(
        CliRunner().invoke(app, ["explain", "--", f"RuntimeError: {words}"]).output.split()
    )
    assert "mismatch" in said
    assert "it is a shape or kernel" not in said
    assert "CUDA_LAUNCH_BLOCKING" not in said


def test_a_kernel_fault_stays_a_kernel_fault():
    document = _triage("RuntimeError: CUDA error: an illegal memory access was encountered\n")
    (root,) = [f for f in document["findings"] if f["code"] == "PP802"]  # type: ignore[union-attr]
    assert root["extra"]["kind"] == "shape-kernel"


#: A native library's record of a driver call that failed (torch memory saver's), and the
#: forms a log puts it in: alone, behind sglang's prefix, torch's rank tag, Ray's worker.
_CURESULT = (
    "[torch_memory_saver.cpp] CUresult error  result={result} file=csrc/torch_memory_saver.cpp "
    "func=resume line=214"
)
_FORMS = ["{r}", "[2026-01-01 10:00:00 TP0] {r}", "[rank0]: {r}", "(RayWorkerWrapper pid=12) {r}"]


@given(
    result=st.sampled_from([1, 201, 700, 803, 999, 4242]),
    form=st.sampled_from(_FORMS),
    above=st.booleans(),
)
def test_a_failed_driver_call_is_the_driver_kind_in_triage_and_explain(result, form, above):
    line = form.format(r=_CURESULT.format(result=result))
    text = ("[2026-01-01 10:00:00 TP0] Decode batch. #running-req: 1\n" if above else "") + line
    document = _triage(text + "\n")
    (root,) = [f for f in document["findings"] if f["code"] == "PP802"]  # type: ignore[union-attr]
    assert root["extra"]["kind"] == "driver"
    argvs = [" ".join(step["argv"]) for step in document["steps"] if step["argv"]]
    assert "nvidia-smi" in argvs
    assert not any("CUDA_LAUNCH_BLOCKING" in argv for argv in argvs)
    # explain says the same of the line alone and of the paste of several lines
    for pasted in (line, text):
        said = " ".join(CliRunner().invoke(app, ["explain", "-"], input=pasted).output.split())
        assert "a CUDA driver API call that failed" in said
        assert "it is a shape or kernel" not in said and "reads it as a shape" not in said


@given(
    name=st.sampled_from(
        ["INVALID_VALUE", "ILLEGAL_ADDRESS", "NOT_SUPPORTED", "STUB_LIBRARY", "INVALID_CONTEXT"]
    ),
    said=st.sampled_from(["RuntimeError: CUDA driver error: ", "RuntimeError: cuMemMap failed: "]),
)
def test_a_driver_result_named_in_an_exception_is_the_driver_kind(name, said):
    line = f"{said}CUDA_ERROR_{name}"
    document = _triage(
        "Traceback (most recent call last):\n"
        '  File "/opt/env/lib/python3.11/site-packages/engine/model.py", line 12, in load\n'
        "    model.to(device)\n"
        f"{line}\n"
    )
    (root,) = [f for f in document["findings"] if f["code"] == "PP802"]  # type: ignore[union-attr]
    assert root["extra"]["kind"] == "driver"
    out = " ".join(CliRunner().invoke(app, ["explain", "--", line]).output.split())
    assert "it is a CUDA driver failure" in out and "it is a shape or kernel" not in out
    assert "CUDA_LAUNCH_BLOCKING" not in out


def test_a_driver_call_out_of_memory_named_in_an_exception_stays_memory():
    document = _triage("RuntimeError: cuMemCreate failed: CUDA_ERROR_OUT_OF_MEMORY\n")
    (root,) = [f for f in document["findings"] if f["code"] == "PP802"]  # type: ignore[union-attr]
    assert root["extra"]["kind"] == "memory"
