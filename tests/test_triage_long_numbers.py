"""A failure record whose number (mpirun's rank or pid, NCCL's source line, torchrun's exit
code) is longer than any real one is kept, with PP811 naming the line, and the number said too
long: never dropped, never cut into a number the log does not hold.

Expected values are written here by hand, never computed with triage's code.
"""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths

LOAD = "[2026-12-03 14:56:01 PP0] Load weight end. type=LlamaForCausalLM\n"


def _report(text: str):
    return triage_paths(["run.log"], {"run.log": io.BytesIO(text.encode())})


def _said(text: str) -> tuple[list[str], str]:
    report = _report(text)
    codes = [f.code for f in report.findings]
    root = next(f for f in report.findings if f.code in ("PP802", "PP809"))
    return codes, " ".join(root.message.split())


@settings(max_examples=20, deadline=None)
@given(digits=st.integers(7, 5000))
def test_mpirun_s_long_rank_is_kept_and_said_too_long(digits):
    rank = "9" * digits
    line = f"mpirun noticed that process rank {rank} with PID 12 on node host-a exited on signal 9"
    codes, said = _said(LOAD + line + " (Killed).\n")
    assert "PP809" in codes and "PP811" in codes, codes
    assert "too long to read" in said and "killed by SIGKILL" in said, said
    assert "rank 999999 " not in said


@settings(max_examples=20, deadline=None)
@given(digits=st.integers(7, 5000))
def test_nccl_s_long_source_line_keeps_its_failure(digits):
    line = f"host-a:1:2 [0] init.cc:{'1' * digits} NCCL WARN Cuda failure 'out of memory'\n"
    codes, said = _said(LOAD + line)
    assert "PP802" in codes and "PP811" in codes, codes
    assert "Cuda failure 'out of memory'" in said and "too long to read" in said, said


@settings(max_examples=20, deadline=None)
@given(digits=st.integers(10, 5000))
def test_torchrun_s_long_exit_code_is_never_cut(digits):
    code = "1" * digits
    line = (
        f"ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: {code}) "
        "local_rank: 0 (pid: 1622990) of binary: /usr/bin/python\n"
    )
    codes, said = _said(LOAD + line)
    assert "PP802" in codes and "PP811" in codes, codes
    assert f"({digits} digits, too long to read)" in said, said
    assert "111111111" not in said


def test_a_summary_s_long_exit_code_is_never_cut():
    log = (
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
        "============================================================\n"
        "train.py FAILED\n"
        "------------------------------------------------------------\n"
        "Root Cause (first observed failure):\n"
        "[0]:\n"
        "  time      : 2024-01-01_00:00:00\n"
        "  host      : host-a\n"
        "  rank      : 0 (local_rank: 0)\n"
        f"  exitcode  : -{'9' * 5000} (pid: 12)\n"
    )
    report = _report(log)
    words = " ".join(" ".join(f.message.split()) for f in report.findings)
    assert "-999999999" not in words, words
    assert "PP811" in [f.code for f in report.findings]
