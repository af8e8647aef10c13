"""A traceback raised in sglang's own code outside its scheduler files (a layer, a kernel's
wrapper, a worker thread) is a failure: counted, classified, and never a pass."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppaux.triage import triage_paths
from ppaux_cli.app import app

SITE = "/usr/local/lib/python3.11/site-packages/sglang/srt"
THREAD = (
    "Exception in thread Thread-3 (forward_thread_func):\n"
    "Traceback (most recent call last):\n"
    f'  File "{SITE}/layers/moe/fused_moe_triton/fused_moe.py", line 120, in fused_experts\n'
    "    x()\n"
    "AssertionError: Hidden size mismatch\n"
)


def test_a_thread_s_traceback_in_sglang_s_layers_fails_the_gate(tmp_path):
    log = tmp_path / "thread.log"
    log.write_text(THREAD)
    result = CliRunner().invoke(app, ["triage", str(log)])
    assert result.exit_code == 1, result.output
    (root,) = [f for f in triage_paths([str(log)]).findings if f.code == "PP802"]
    assert root.extra["exception"] == "AssertionError"
    assert root.extra["kind"] == "shape-kernel"
    assert root.location.line == 2


@settings(max_examples=30, deadline=None)
@given(
    place=st.sampled_from(
        [
            "layers/attention/flashinfer_backend.py",
            "layers/quantization/fp8.py",
            "mem_cache/radix_cache.py",
            "speculative/eagle_worker.py",
            "models/llama.py",
        ]
    ),
    thread=st.booleans(),
    exception=st.sampled_from(["AssertionError", "ValueError", "IndexError", "RuntimeError"]),
)
def test_any_traceback_through_sglang_s_own_code_is_a_root(place, thread, exception):
    text = (
        ("Exception in thread Thread-1 (run):\n" if thread else "")
        + "Traceback (most recent call last):\n"
        + f'  File "{SITE}/{place}", line 12, in f\n'
        + "    g()\n"
        + f"{exception}: it broke\n"
    )
    report = triage_paths(["x.log"], {"x.log": io.BytesIO(text.encode())})
    roots = [f for f in report.findings if f.code in ("PP801", "PP802")]
    assert [r.extra["exception"] for r in roots] == [exception]
