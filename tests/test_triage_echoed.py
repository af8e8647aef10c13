"""A traceback's text that a request carried, echoed by sglang inside the request's repr on one
line (``Receive: obj=GenerateReqInput(text='... Traceback (most recent call last): ...')``), is
text someone sent: no failure. Lines are built with Python's own ``repr``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppaux.triage import triage_paths
from ppaux_cli.app import app

TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/srv/sglang/python/sglang/srt/managers/scheduler.py", line 10, in run\n'
    "    x()\n"
    "RuntimeError: received a non-tensor auxiliary PP output\n"
)
BEFORE = "[2026-12-03 14:56:06 TP0] Load weight end. type=Qwen2ForCausalLM\n"
AFTER = "[2026-12-03 14:56:08 TP0] Decode batch. #running-req: 1, #token: 12\n"


def _echo(prompt: str) -> str:
    """sglang's request log line for a request whose text is ``prompt``."""
    return (
        f"[2026-12-03 14:56:07 TP0] Receive: obj=GenerateReqInput(text={prompt!r}, "
        "input_ids=None, sampling_params={'max_new_tokens': 64}, rid='a1b2')\n"
    )


def _findings(path: Path, text: str) -> list[tuple[str, str | None]]:
    """Each failure found (its root's or another's finding): code and exception."""
    path.write_text(text, encoding="utf-8")
    return [
        (f.code, (f.extra or {}).get("exception"))
        for f in triage_paths([str(path)]).findings
        if f.code in ("PP801", "PP802", "PP803", "PP809", "PP810")
    ]


def test_a_prompt_holding_a_traceback_echoed_in_its_request_is_no_failure(tmp_path):
    prompt = "Why does my server fail?\n" + TRACEBACK
    assert "\\n" in _echo(prompt)  # repr wrote the newlines as escapes: one line
    assert _findings(tmp_path / "echo.log", BEFORE + _echo(prompt) + AFTER) == []


def test_a_prompt_with_a_flattened_traceback_echoed_is_no_failure(tmp_path):
    prompt = "Why? " + TRACEBACK.replace("\n", " ")
    assert _findings(tmp_path / "flat.log", BEFORE + _echo(prompt) + AFTER) == []


def test_a_real_traceback_after_an_echoed_one_is_still_the_root(tmp_path):
    real = "[2026-12-03 14:56:09 TP0] Scheduler hit an exception: " + TRACEBACK
    text = BEFORE + _echo("see:\n" + TRACEBACK) + AFTER + real
    assert _findings(tmp_path / "both.log", text) == [("PP801", "RuntimeError")]


def test_a_traceback_a_logger_wrote_with_repr_is_still_read(tmp_path):
    """A traceback given whole to ``%r`` (its quote right before its header) is the process's
    own, no request's field."""
    line = f"[2026-12-03 14:56:07 TP0] Scheduler hit an exception: {TRACEBACK!r}\n"
    assert _findings(tmp_path / "logged.log", BEFORE + line) == [("PP801", "RuntimeError")]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    before=st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), max_size=40),
    after=st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), max_size=40),
    flat=st.booleans(),
)
def test_any_prompt_around_a_traceback_echoed_is_no_failure(tmp_path, before, after, flat):
    body = TRACEBACK.replace("\n", " ") if flat else TRACEBACK
    prompt = before + "\n" + body + after
    assert _findings(tmp_path / "any.log", BEFORE + _echo(prompt) + AFTER) == []


#: Lines that, as a process's own, are failures or events (exit 1).
MARKERS = [
    "Detected mismatch between collectives on ranks. Rank 2 is running collective: "
    "CollectiveFingerPrint(SequenceNumber=5, OpType=ALLREDUCE)",
    "init.cc:1582 NCCL WARN Cuda failure 'CUDA driver version is insufficient'",
    "[rank0]:[E1203 14:56:07.000 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0 Rank 0] Process "
    "group watchdog thread terminated with exception: CUDA error: an illegal memory access was "
    "encountered",
    "Fatal Python error: Aborted",
    "terminate called after throwing an instance of 'c10::DistBackendError'\n  what():  NCCL "
    "error in: ProcessGroupNCCL.cpp:1970, unhandled cuda error",
    TRACEBACK.rstrip("\n"),
]
_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), max_size=30)


def _exit(path: Path, text: str) -> int:
    path.write_text(text, encoding="utf-8")
    return CliRunner().invoke(app, ["triage", str(path)]).exit_code


@pytest.mark.parametrize("marker", MARKERS)
def test_each_marker_is_a_failure_as_the_process_own_line(tmp_path, marker):
    """The markers below are failures when the line is the process's own (the echo tests
    could not pass by reading nothing)."""
    line = f"[2026-12-03 14:56:07 TP0] {marker}\n"
    assert _exit(tmp_path / "own.log", BEFORE + line + AFTER) == 1


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    marker=st.sampled_from(MARKERS),
    before=_TEXT,
    after=_TEXT,
    form=st.sampled_from(["repr", "json", "messages", "out"]),
)
def test_any_marker_quoted_in_an_echo_is_no_failure(tmp_path, marker, before, after, form):
    """A marker inside a string literal on the line (``repr()`` or ``json.dumps()``) of a
    request or output echo is text someone sent: exit 0."""
    text = before + marker + after
    echoes = {
        "repr": f"Receive: obj=GenerateReqInput(text={text!r}, rid='abc')",
        "json": f"Receive: {json.dumps({'text': text, 'rid': 'abc'})}",
        "messages": "Receive: obj=ChatCompletionRequest(messages="
        f"{[{'role': 'user', 'content': text}]!r})",
        "out": f"Finish: obj=GenerateReqInput(rid='abc'), out={ {'text': text, 'meta_info': {}}!r}",
    }
    line = f"[2026-12-03 14:56:07 TP0] {echoes[form]}\n"
    assert "\n" not in line[:-1]
    assert _exit(tmp_path / "echo.log", BEFORE + line + AFTER) == 0


@pytest.mark.parametrize(
    ("line", "size"),
    [
        ("[2026-12-03 14:56:00] launch: python -m sglang.launch_server --pp-size 4\n", 4),
        (_echo("How do I launch with --pp-size 12 on one node?"), None),
        (_echo("server_args=ServerArgs(model_path='m', pp_size=12)"), None),
    ],
)
def test_the_pipeline_size_is_never_read_from_quoted_text(tmp_path, line, size):
    """A prompt that names a pipeline size is text: the size comes from the server's own
    arguments or launch command only."""
    path = tmp_path / "size.log"
    path.write_text(BEFORE + line + AFTER, encoding="utf-8")
    assert triage_paths([str(path)]).data["pp_size"]["value"] == size
