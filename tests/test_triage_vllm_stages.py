"""vLLM's multiprocess executor names each worker by its pipeline stage (``VllmWorker PP1``,
``Worker_PP3``): the stages a log shows, as sglang's ``PPn`` prefix does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppaux.triage.lineshapes import VLLM_STAGE
from ppaux_cli.app import app

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "real"
_NO_STAGE = "the logs show no pipeline stage"


def _document(path: Path) -> dict:
    result = CliRunner().invoke(app, ["triage", "--format", "json", str(path)])
    assert result.exit_code == 1, result.output
    return json.loads(result.output)


@pytest.mark.parametrize(
    ("stem", "stages"),
    # by hand: PP0 and PP1 load their weights in 23815; 27067's failing worker is PP3
    [
        ("vllm-23815-pp1-gptoss-workerproc-cut", 2),
        ("vllm-27067-nested-enginecore-worker-pp3-cut", 4),
    ],
)
def test_vllm_workers_named_by_stage_show_the_stages(stem, stages):
    document = _document(REAL / f"{stem}.log")
    assert document["pp_size"] == {"value": stages, "from": "lower bound"}
    assert not any(_NO_STAGE in step for step in document["next_steps"])


def test_a_worker_line_read_past_the_head_shows_its_stage(tmp_path):
    log = tmp_path / "late.log"
    filler = "".join(
        f"(VllmWorker pid=1) INFO 08-28 16:45:{i % 60:02d} [a.py:1] step {i}\n" for i in range(4000)
    )
    worker = "(VllmWorker TP0 PP2 pid=7) ERROR 08-28 16:46:00 [multiproc_executor.py:602] "
    lines = [
        "Traceback (most recent call last):",
        '  File "/srv/vllm/w.py", line 3, in run',
        "    f()",
        "ValueError: bad",
    ]
    log.write_text(filler + "".join(worker + line + "\n" for line in lines))
    assert _document(log)["pp_size"] == {"value": 3, "from": "lower bound"}


@settings(max_examples=60, deadline=None)
@given(
    stage=st.integers(min_value=0, max_value=999_999),
    before=st.lists(st.sampled_from(["DP", "TP", "EP"]), max_size=2),
    underscore=st.booleans(),
)
def test_any_stage_in_a_worker_name_is_read(stage, before, underscore):
    sep = "_" if underscore else " "
    name = sep.join(
        ["Worker" if underscore else "VllmWorker", *(f"{p}1" for p in before), f"PP{stage}"]
    )
    found = VLLM_STAGE.search(f"{name} pid=12")
    assert found is not None and int(found.group(1)) == stage
    assert VLLM_STAGE.search(f"{name.rsplit(sep, 1)[0]} pid=12") is None  # no stage named
