"""Next steps that fit the program and the failure: a training job's log is told nothing of
sglang's settings; a dump on a timeout is asked for with the buffer that fills it; a child
whose exit torchrun recorded is pointed at torch's @record. Expected words written by hand."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from ppaux.triage import triage_paths
from ppaux.triage.steps import Deployment, next_steps, render

_TIMEOUTS = (
    "[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=98, "
    "NumelOut=98, Timeout(ms)=1800000) ran for 1800086 milliseconds before timing out.\n"
    "[rank0]:[E626 06:24:44.159932949 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=98, "
    "NumelOut=98, Timeout(ms)=1800000) ran for 1800001 milliseconds before timing out.\n"
)


def _steps(tmp_path: Path, text: str) -> list[str]:
    log = tmp_path / "job.log"
    log.write_text(text)
    report = triage_paths([str(log)])
    assert not report.problems
    steps = report.data["steps"]
    assert isinstance(steps, list)
    return [str(step["comment"] or "") + " " + " ".join(step["argv"] or []) for step in steps]


def test_a_training_jobs_timeouts_name_no_sglang_setting(tmp_path):
    steps = _steps(tmp_path, _TIMEOUTS)
    assert steps, "a timeout has steps"
    assert not any("sglang" in s or "--dist-init-addr" in s for s in steps)
    assert any("MASTER_ADDR" in s for s in steps)
    assert any("restart the job" in s for s in steps)


def test_sglangs_timeouts_keep_its_settings(tmp_path):
    steps = _steps(
        tmp_path,
        "[2026-06-17 06:48:30 PP0 TP0] Decode batch. #running-req: 1, #token: 12\n" + _TIMEOUTS,
    )
    assert any("--dist-init-addr" in s for s in steps)
    assert any("restart sglang" in s for s in steps)


@given(
    kinds=st.lists(
        st.sampled_from(["communication", "communication-init", "memory", "other"]), max_size=3
    ),
    sglang=st.booleans(),
    no_root=st.sampled_from([None, "network-or-other-node", "signals-and-nccl-warnings"]),
)
def test_a_dump_on_timeout_always_comes_with_the_buffer_that_fills_it(kinds, sglang, no_root):
    steps = next_steps([(k, None) for k in kinds], Deployment(sglang=sglang), [], [], None, no_root)
    argvs = [step.argv for step in steps]
    if ("export", "TORCH_NCCL_DUMP_ON_TIMEOUT=1") in argvs:
        buffer = [a for a in argvs if a and a[1].startswith("TORCH_NCCL_TRACE_BUFFER_SIZE=")]
        assert buffer and int(buffer[0][1].split("=")[1]) > 0
        assert argvs.index(buffer[0]) < argvs.index(("export", "TORCH_NCCL_DUMP_ON_TIMEOUT=1"))


@given(
    kinds=st.lists(st.sampled_from(["communication", "communication-init"]), max_size=2),
    # (the parent's SIGQUIT lines, a no_root of signals, are sglang's own)
    no_root=st.sampled_from([None, "network-or-other-node"]),
)
def test_another_programs_communication_steps_name_no_sglang_setting(kinds, no_root):
    steps = next_steps([(k, None) for k in kinds], Deployment(sglang=False), [], [], None, no_root)
    for step in steps:
        assert "sglang" not in render(step)
        assert "--dist-init-addr" not in render(step)


def test_a_child_torchrun_recorded_points_at_record(tmp_path):
    steps = _steps(
        tmp_path,
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
        "============================================================\n"
        "train.py FAILED\n"
        "------------------------------------------------------------\n"
        "Root Cause (first observed failure):\n"
        "[0]:\n"
        "  time      : 2023-05-19_16:39:58\n"
        "  host      : host-a\n"
        "  rank      : 0 (local_rank: 0)\n"
        "  exitcode  : 1 (pid: 78970)\n"
        "  error_file: <N/A>\n"
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n"
        "============================================================\n",
    )
    assert any("@record" in s and "error_file" in s for s in steps)
    assert not any("traceback is cut" in s for s in steps)


_REAL = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "real"


def test_a_keyerror_on_the_pp_message_leads_to_comparing_the_stages():
    report = triage_paths([str(_REAL / "sglang-18366-pp-multinode-keyerror.log")])
    steps = report.data["steps"]
    assert isinstance(steps, list)
    said = [str(s["comment"] or "") + " " + " ".join(s["argv"] or []) for s in steps]
    assert any("'hidden_states'" in s and "pp_proxy_tensors" in s for s in said)
    assert any("check-skew" in s for s in said)
    assert not any("the logs show no pipeline stage" in s for s in said)


def test_explain_names_a_keyerror_on_the_pp_message_and_no_other():
    from helpers import cli

    said = cli("explain", "KeyError: 'hidden_states'").stderr
    assert "a key of the PP message" in said and "check-skew" in said
    other = cli("explain", "KeyError: 'temperature'").stderr
    assert "a key of the PP message" not in other and "pp_proxy_tensors" not in other
