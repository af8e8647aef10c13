"""A relay that quotes a worker's error (vLLM's ``Worker failed with error '...', please check
the stack trace above for the root cause``) and the death that names the worker after it: the
worker's failure and its end, never collateral of itself; ``explain`` words vLLM's older relay
and its newer one alike."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from ppaux.triage import triage_paths
from ppaux_cli.app import app

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "real"
_OLDER = (
    "Exception: WorkerProc initialization failed due to an exception in a background process. "
    "See stack trace for root cause."
)
_NEWER = (
    "RuntimeError: Worker failed with error 'AssertionError: auto_functionalized was not "
    "removed', please check the stack trace above for the root cause"
)


@pytest.mark.parametrize(
    "stem",
    [
        "vllm-40778-enginecore-worker-failed-assertion-terminated",
        "vllm-windows-72-enginecore-worker-failed-quoted",
    ],
)
def test_the_relayed_worker_is_never_collateral_of_itself(stem):
    report = triage_paths([str(REAL / f"{stem}.log")])
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert root.extra["ranks"][0].endswith("VllmWorker-0")
    after = [f.key for f in report.findings if f.code == "PP803"]
    assert "VllmWorker-0" not in after


def _explained(line: str) -> list[str]:
    result = CliRunner().invoke(app, ["explain", line])
    assert result.exit_code == 2, result.output
    return result.output.splitlines()


def test_explain_words_both_relays_alike():
    older, newer = _explained(_OLDER), _explained(_NEWER)
    assert older[0] == newer[0]
    assert "relays another process's failure" in older[0]
    # the lines under the headline are wrapped at the text's width: read them as one
    newer_text, older_text = (
        " ".join(line.strip() for line in lines[1:]) for lines in (newer, older)
    )
    assert "'AssertionError: auto_functionalized was not removed'" in newer_text
    assert "AssertionError" not in older_text
