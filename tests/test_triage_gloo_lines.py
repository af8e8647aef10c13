"""gloo's one-line records of a failure, as torch's C++ logs them, are failures: ``Gloo
connectFullMesh failed`` (a process group's set-up: communication-init, a root where nothing
precedes it; two ranks at once fail first together) and a monitored barrier's ``Rank 1 ...
received errors while waiting for send/recv from rank 0`` (communication in flight: the cause is
another rank's, no root in this log). Words in a sentence are no record.

Expected values are written here by hand, never computed with triage's code.
"""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppaux.triage import triage_paths
from ppaux_cli.app import app

MESH = (
    "[rank{rank}]:[E421 02:05:38.764490322 ProcessGroupGloo.cpp:143] Gloo connectFullMesh failed "
    "with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error\n"
)
BARRIER = (
    "[E ProcessGroupGloo.cpp:138] Rank 1 successfully reached monitoredBarrier, but received "
    "errors while waiting for send/recv from rank 0. Please check rank 0 logs for faulty rank.\n"
)
CUT = (
    "[2025-04-21 02:05:39 TP4] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "/env/sglang/srt/managers/scheduler.py", line 2059, in run_scheduler_process\n'
    "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)\n"
    '  File "/env/sglang/srt/model_executor/model_runner.py", line 183, in __init__\n'
    "    min_per_gpu_memory = self.init_torch_distributed()\n"
)


def _report(text: str):
    return triage_paths(["run.log"], {"run.log": io.BytesIO(text.encode())})


def _roots(text: str):
    return [f for f in _report(text).findings if f.code in ("PP802", "PP809")]


def test_two_ranks_set_up_failures_fail_first_together_at_init():
    (root,) = _roots(MESH.format(rank=4) + MESH.format(rank=6))
    assert root.code == "PP802"
    assert root.extra["kind"] == "communication-init"
    assert root.extra["exception"] == "gloo error"
    assert "rank 4, rank 6 failed first" in " ".join(root.message.split())


def test_a_cut_traceback_after_them_follows_from_them():
    report = _report(MESH.format(rank=4) + MESH.format(rank=6) + CUT)
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert root.extra["kind"] == "communication-init"
    after = [f.key for f in report.findings if f.code == "PP803"]
    assert after == ["TP4"], after
    steps = " ".join(str(s["argv"]) + s["comment"] for s in report.data["steps"])
    assert "NCCL_DEBUG" in steps or "GLOO_SOCKET_IFNAME" in steps, steps


def test_a_monitored_barrier_names_another_rank_no_root_here():
    (root,) = _roots(BARRIER)
    assert root.code == "PP809"
    assert root.extra["no_root"] == "network-or-other-node"


@pytest.mark.parametrize(
    "line",
    [
        "why does Gloo connectFullMesh failed with no error happen on my cluster?\n",
        "we never reached monitoredBarrier, but received errors somewhere\n",
    ],
)
def test_words_in_a_sentence_are_no_record(line):
    assert _roots("[2026-12-03 14:56:01 TP0] Init torch distributed begin.\n" + line) == []


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(0, 4095), min_size=1, max_size=6, unique=True))
def test_any_ranks_are_named(ranks):
    text = "".join(MESH.format(rank=r) for r in ranks)
    (root,) = _roots(text)
    flat = " ".join(root.message.split())
    for rank in ranks:
        assert f"rank {rank}" in flat, flat


@pytest.mark.parametrize("log", [MESH.format(rank=4) + MESH.format(rank=6), BARRIER])
def test_the_command_line_exits_1(tmp_path, log):
    path = tmp_path / "run.log"
    path.write_text(log, encoding="utf-8")
    result = CliRunner().invoke(app, ["triage", str(path)])
    assert result.exit_code == 1, result.output
