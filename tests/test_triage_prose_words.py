"""A record is told by its shape (where its words stand in the line, what follows them), never by
its words anywhere in a sentence: prose that speaks of a watchdog's timeout, a TCPStore, a
traceback's header or the parent's SIGQUIT (a README, an on-call wiki, a prompt an sglang server
logs) holds no failure. The logs are written here, their expected results by hand."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppaux.triage import triage_paths
from ppaux_cli.app import app

HEALTHY = (
    "[2026-01-01 00:00:00 PP0] Load weight end.\n"
    "[2026-01-01 00:00:02 PP0] Decode batch, #running-req: 1\n"
)

PROSE = {
    "watchdog": "Notes from the on-call wiki\nWatchdog caught collective operation timeout "
    "messages are collateral, not the cause.\n",
    "tcpstore": "Notes from the on-call wiki\nTCPStore timeouts happen when the master is down.\n",
    "traceback": "Notes from the on-call wiki\nIf the log says Traceback (most recent call last): "
    "look at the last line.\n",
    "sigquit": "Notes from the on-call wiki\nWhen sglang logs Received sigquit from a child "
    "process the child failed first.\n",
    # a sentence that starts with the watchdog's own words and its colon, but no work after it
    "watchdog-colon": "Watchdog caught collective operation timeout: that is what we usually "
    "see here, but not today.\n",
}

_ASSERT = (
    "/pytorch/aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: "
    "block: [0,0,0], thread: [0,0,0] Assertion `t >= 0 && t < n_classes` failed."
)
_CUT = 'Traceback (most recent call last):\n  File "/app/train.py", line 10, in <module>\n'


@pytest.mark.parametrize("name", sorted(PROSE))
def test_a_note_that_names_a_record_holds_no_failure(tmp_path: Path, name: str) -> None:
    log = tmp_path / f"{name}.log"
    log.write_text(PROSE[name])
    assert triage_paths([str(log)]).findings == []
    # never exit 1: a note is no failed run (exit 2 where it is refused as no sglang log)
    result = CliRunner().invoke(app, ["triage", str(log)])
    assert result.exit_code in (0, 2), result.output


def test_a_prompt_an_sglang_server_logs_is_no_watchdog_record(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(
        HEALTHY + "[2026-01-01 00:00:01 PP1] Prompt was: how to fix Watchdog caught collective "
        "operation timeout in NCCL?\n"
    )
    assert triage_paths([str(log)]).findings == []
    assert CliRunner().invoke(app, ["triage", str(log)]).exit_code == 0


def test_the_records_themselves_are_still_read(tmp_path: Path) -> None:
    # the shapes torch and sglang write: each is one event of its kind
    log = tmp_path / "records.log"
    log.write_text(
        HEALTHY + "[rank1]:[E1203 10:00:00.1 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE) ran for 600000 "
        "milliseconds before timing out.\n"
        "[W1203 10:00:01.001000000 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl: "
        "Connection reset by peer\n"
        "[2026-01-01 00:00:03] Received sigquit from a child process. It usually means the child "
        "failed.\n"
    )
    (root,) = triage_paths([str(log)]).findings
    assert root.code == "PP809"
    assert "2 communication failures" in root.message
    assert "the parent's SIGQUIT (1 lines)" in root.message


#: The words that mark a record, as a sentence may hold them.
TRIGGERS = (
    "Watchdog caught collective operation timeout",
    "Watchdog caught collective",
    "TCPStore",
    "Traceback (most recent call last):",
    "Received sigquit from a child process",
    "SIGQUIT received",
)
WORD = st.from_regex(r"[a-z]{1,10}", fullmatch=True)


@settings(max_examples=40)
@given(
    before=st.lists(WORD, min_size=1, max_size=6),
    trigger=st.sampled_from(TRIGGERS),
    after=st.lists(WORD, min_size=1, max_size=6),
    in_server=st.booleans(),
)
def test_prose_that_embeds_a_record_s_words_mid_sentence_is_no_failure(
    tmp_path_factory: pytest.TempPathFactory,
    before: list[str],
    trigger: str,
    after: list[str],
    in_server: bool,
) -> None:
    sentence = f"{' '.join(before).capitalize()} {trigger} {' '.join(after)}."
    text = (
        HEALTHY + f"[2026-01-01 00:00:01 PP1] Prompt was: {sentence}\n"
        if in_server
        else f"Notes\n{sentence}\n"
    )
    log = tmp_path_factory.mktemp("prose") / "note.log"
    log.write_text(text)
    assert triage_paths([str(log)]).findings == []


@pytest.mark.parametrize(
    "line",
    [
        f"We saw lines like {_ASSERT} in the old release; now fixed.",
        f"- `{_ASSERT}` was in the old release; fixed.",
        f"We saw lines like {_ASSERT}",
    ],
)
def test_a_kernel_assertion_quoted_in_prose_is_no_cause(tmp_path: Path, line: str) -> None:
    # The cut traceback below is the failure, its cause unknown: the sentence above it
    # quotes an assertion of another time, no record of this run's device.
    log = tmp_path / "notes.log"
    log.write_text(f"{line}\n{_CUT}")
    (root,) = [f for f in triage_paths([str(log)]).findings if f.code == "PP802"]
    assert root.extra["exception"] is None
    assert root.extra["kind"] == "unknown" and root.location is not None and root.location.line == 2


@pytest.mark.parametrize("prefix", ["", "[rank0]: ", "14: ", "2024-05-01 01:00:00 ERROR "])
def test_a_kernel_assertion_on_a_line_of_its_own_is_the_cause(tmp_path: Path, prefix) -> None:
    log = tmp_path / "run.log"
    log.write_text(f"{prefix}{_ASSERT}\n{_CUT}")
    (root,) = [f for f in triage_paths([str(log)]).findings if f.code == "PP802"]
    assert root.extra["exception"] == "device-side assert"
    assert root.extra["kind"] == "shape-kernel"
