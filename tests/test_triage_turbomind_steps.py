"""lmdeploy TurboMind's out of memory gets lmdeploy's settings as its steps, never torch's
allocator's (PYTORCH_CUDA_ALLOC_CONF, torch.cuda.memory_summary), which do not govern the
engine's own allocator. Each expected answer is written by hand."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppaux_cli.app import app


def _steps(text: str) -> list[dict[str, object]]:
    with tempfile.TemporaryDirectory() as where:
        log = Path(where) / "tm.log"
        log.write_text(text)
        result = CliRunner().invoke(app, ["triage", "--format", "json", str(log)])
    assert result.exit_code == 1, result.output
    return json.loads(result.output)["steps"]


@given(
    shape=st.sampled_from(
        [
            "[TM][ERROR] CUDA runtime error: out of memory /lmdeploy/src/turbomind/utils/"
            "allocator.h:233\n",
            "terminate called after throwing an instance of 'std::runtime_error'\n"
            "  what():  [TM][ERROR] CUDA runtime error: out of memory /lmdeploy/src/turbomind/"
            "utils/allocator.h:233\n",
            "RuntimeError: [TM][ERROR] CUDA runtime error: out of memory /opt/lmdeploy/src/"
            "turbomind/core/allocator.cc:42\n",
        ]
    )
)
def test_turbomind_s_out_of_memory_gets_lmdeploy_s_settings(shape):
    steps = _steps(shape)
    said = " ".join(str(step["comment"]) for step in steps)
    argvs = [" ".join(step["argv"]) for step in steps if step["argv"]]  # type: ignore[arg-type]
    assert "--cache-max-entry-count" in said
    assert not any("PYTORCH_CUDA_ALLOC_CONF" in argv for argv in argvs)
    assert "memory_summary" not in said


def test_torch_s_own_out_of_memory_keeps_torch_s_steps():
    steps = _steps("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")
    argvs = [" ".join(step["argv"]) for step in steps if step["argv"]]  # type: ignore[arg-type]
    assert any("PYTORCH_CUDA_ALLOC_CONF" in argv for argv in argvs)
