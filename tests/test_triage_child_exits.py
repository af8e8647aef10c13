"""sglang's parent's ``Child process unexpectedly failed with exitcode=N. pid=P`` (and the
earlier ``... with an exit code N. pid=P``) is a death of that child: N is the wait status,
so 9 is SIGKILL, 11 SIGSEGV, 134 SIGABRT with a core dump, 256 exit code 1. Alone in a log it
is no root but a failure (PP809, process-died, exit 1); after a rank's traceback it is that
failure's consequence.

Expected values are written here by hand, never computed with triage's code.
"""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppaux.triage import triage_paths
from ppaux.triage.childexits import child_exit
from ppaux_cli.app import app

DECODE = (
    "[2026-12-03 14:56:06 PP0] Decode batch, #running-req: 3, #token: 96, token usage: 0.00, "
    "gen throughput (token/s): 41.52, #queue-req: 0\n"
)


def _report(text: str):
    return triage_paths(["run.log"], {"run.log": io.BytesIO(text.encode())})


@pytest.mark.parametrize(
    ("line", "how"),
    [
        (
            "Child process unexpectedly failed with exitcode=9. pid=4242",
            "died: killed by SIGKILL (signal 9; sglang's parent)",
        ),
        (
            "Child process unexpectedly failed with exitcode=11. pid=4242",
            "died: killed by SIGSEGV (signal 11; sglang's parent)",
        ),
        (
            "Child process unexpectedly failed with exitcode=134. pid=4242",
            "died: killed by SIGABRT (signal 6; core dumped; sglang's parent)",
        ),
        (
            "Child process unexpectedly failed with an exit code 256. pid=4242",
            "died: exited with status 1 (sglang's parent)",
        ),
        (
            "Child process unexpectedly failed with exitcode=512. pid=4242",
            "died: exited with status 2 (sglang's parent)",
        ),
    ],
)
def test_the_wait_status_is_read_as_a_signal_or_an_exit_code(line, how):
    assert child_exit(f"[2026-12-03 14:56:07] {line}") == ("child pid=4242", how)


def test_other_lines_are_no_child_s_end():
    assert child_exit("Child process pid=4242 frame=<frame at 0x7f>") is None
    assert child_exit("Received sigquit from a child process.") is None


@pytest.mark.parametrize("status", ["exitcode=9", "an exit code 256"])
def test_a_child_s_end_alone_is_a_death_and_no_root(status):
    text = (
        DECODE
        + f"[2026-12-03 14:56:07] Child process unexpectedly failed with {status}. pid=4242\n"
    )
    findings = [(f.code, f.extra.get("no_root")) for f in _report(text).findings]
    assert findings == [("PP809", "process-died")]


def test_a_log_of_children_s_ends_only_is_read_and_fails_the_gate(tmp_path):
    log = tmp_path / "run.log"
    log.write_text(
        "[memory_saver.cpp] CUresult error  result=1 file=csrc/memory_saver.cpp func=resume\n"
        "Child process unexpectedly failed with an exit code 256. pid=97721\n"
        "Child process unexpectedly failed with an exit code 256. pid=97719\n"
    )
    result = CliRunner().invoke(app, ["triage", str(log)])
    assert result.exit_code == 1, result.output
    assert "child pid=97721 died: exited with status 1" in result.output


def test_after_a_rank_s_traceback_the_child_s_end_is_no_root_of_its_own():
    text = (
        DECODE
        + "[2026-12-03 14:56:07 PP1] Scheduler hit an exception: Traceback (most recent call "
        "last):\n"
        '  File "/opt/sglang/srt/managers/scheduler.py", line 2950, in run_scheduler_process\n'
        "    scheduler.event_loop_pp()\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
        "[2026-12-03 14:56:08] Child process unexpectedly failed with exitcode=256. pid=4242\n"
    )
    roots = [
        (f.code, f.key, f.extra.get("kind"))
        for f in _report(text).findings
        if f.code in ("PP801", "PP802", "PP809")
    ]
    assert roots == [("PP802", "PP1", "memory")]


@settings(max_examples=40, deadline=None)
@given(signal_number=st.sampled_from([1, 2, 6, 9, 11, 15]), pid=st.integers(1, 10**9 - 1))
def test_a_status_of_a_signal_names_that_signal(signal_number, pid):
    names = {1: "SIGHUP", 2: "SIGINT", 6: "SIGABRT", 9: "SIGKILL", 11: "SIGSEGV", 15: "SIGTERM"}
    line = f"Child process unexpectedly failed with exitcode={signal_number}. pid={pid}"
    assert child_exit(line) == (
        f"child pid={pid}",
        f"died: killed by {names[signal_number]} (signal {signal_number}; sglang's parent)",
    )


_CUT_SCHEDULER = (
    "[2026-12-03 14:56:07 DP1 TP3] Scheduler hit an exception: Traceback (most recent call "
    "last):\n"
    '  File "/opt/sglang/srt/managers/scheduler.py", line 2950, in run_scheduler_process\n'
    "    scheduler.event_loop_normal()\n"
    '  File "/opt/sglang/srt/m\n'
)


@pytest.mark.parametrize("status", [131, 3, 256, 139])
def test_a_child_s_end_written_above_its_cut_scheduler_traceback_is_its_fallout(status):
    # sglang's parent writes the child's end when the scheduler that failed has signalled it;
    # the two lines reach the log in either order
    text = (
        f"[2026-12-03 14:56:07] Child process unexpectedly failed with exitcode={status}. "
        "pid=4242\n" + _CUT_SCHEDULER
    )
    found = [(f.code, f.key) for f in _report(text).findings if f.code in ("PP802", "PP803")]
    assert found == [("PP802", "DP1 TP3"), ("PP803", "child pid=4242")]


def test_a_child_killed_by_sigkill_before_a_cut_traceback_stays_the_first_death():
    # SIGKILL is what the kernel's OOM killer sends: that child wrote nothing; the cut
    # traceback of another process followed from its end
    text = "[2026-12-03 14:56:07] Child process unexpectedly failed with exitcode=9. pid=4242\n"
    findings = [(f.code, f.extra.get("no_root")) for f in _report(text + _CUT_SCHEDULER).findings]
    assert findings[0] == ("PP809", "process-died")
