"""sglang's launcher's word that the server it waited for exited (``Server process exited with
code -9``, sglang's utils and test utils, 0.5.19 - 0.5.23): a report of another process's end,
never a root of its own; and a server's start-up out of memory, named by sglang's scheduler
record, gets sglang's settings as its steps. Each expected answer is written by hand."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppaux_cli.app import app

_OOM = (
    "Scheduler hit an exception during server startup\n"
    'File ".../model_runner_kv_cache_mixin.py", line 790, in _init_pools\n'
    "  self.token_to_kv_pool = pool_cls(...)\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 484.00 MiB.\n"
)


def _triage(text: str) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as where:
        log = Path(where) / "server.log"
        log.write_text(text)
        result = CliRunner().invoke(app, ["triage", "--format", "json", str(log)])
    assert result.exit_code == 1, result.output
    return json.loads(result.output)


@given(
    code=st.integers(-64, 255).filter(lambda c: c != 0),
    kind=st.sampled_from(["Exception", "RuntimeError"]),
)
def test_the_launchers_word_of_the_servers_exit_follows_the_root(code, kind):
    document = _triage(f"{_OOM}{kind}: Server process exited with code {code}.\n")
    findings = document["findings"]
    roots = [f for f in findings if f["code"] == "PP802"]  # type: ignore[union-attr]
    assert [r["extra"]["exception"] for r in roots] == ["torch.OutOfMemoryError"]
    assert [f["code"] for f in findings].count("PP803") == 1  # type: ignore[union-attr]


def test_the_launchers_word_alone_says_the_cause_is_elsewhere():
    document = _triage(
        "Traceback (most recent call last):\n"
        '  File "/opt/ci/test_server.py", line 9, in setUpClass\n'
        "    raise Exception(message)\n"
        "Exception: Server process exited with code -9.\n"
    )
    (found,) = document["findings"]  # type: ignore[misc]
    assert found["code"] == "PP809" and found["extra"]["no_root"] == "process-died"


def test_a_servers_start_up_out_of_memory_gets_sglangs_settings():
    document = _triage(_OOM)
    said = " ".join(str(step) for step in document["next_steps"])  # type: ignore[union-attr]
    assert "--mem-fraction-static" in said and "--max-total-tokens" in said
    assert "batch size" not in said and "PYTORCH_CUDA_ALLOC_CONF" not in said
