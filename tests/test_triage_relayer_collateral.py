"""A process that relayed the root (vLLM's EngineCore, whose RuntimeError quotes its worker's
error) and then failed again is what followed in that process, never collateral of itself: on
the real log vllm-40778 (fixtures/logs/real/), the words expected written by hand."""

from __future__ import annotations

from pathlib import Path

from ppaux.triage import triage_paths

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "real"


def test_the_relaying_process_s_later_failure_names_the_worker_it_relayed():
    log = REAL / "vllm-40778-enginecore-worker-failed-assertion-terminated.log"
    report = triage_paths([str(log)])
    (after,) = [f for f in report.findings if f.code == "PP803"]
    assert after.key == "EngineCore pid=273"
    assert "collateral of EngineCore pid=273" not in after.message
    assert "after it relayed VllmWorker-0's failure at" in after.message
    assert after.message.endswith(f"{log}:3)")
