"""Python's fault handler (``Fatal Python error: Segmentation fault``) dumps each thread's stack;
the thread that faulted, ``Current thread ... (most recent call first):``, died in its first
frame: the root names it. Expected values are written by hand from the log below (trimmed from
Genesis-backflip#2, https://github.com/ziyanx02/Genesis-backflip/issues/2)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths

_OTHER = (
    "Thread 0x00007fa040e2b700 (most recent call first):\n"
    '  File "/env/lib/python3.10/threading.py", line 324 in wait\n'
    '  File "/env/lib/python3.10/queue.py", line 180 in get\n'
    "\n"
)


def _log(function: str, other_first: bool = True) -> str:
    current = (
        "Current thread 0x00007fa2972464c0 (most recent call first):\n"
        f'  File "/home/u/Genesis-backflip/reward_wrapper.py", line 88 in {function}\n'
        '  File "/home/u/Genesis-backflip/env.py", line 498 in compute_reward\n'
        '  File "/home/u/Genesis-backflip/env.py", line 754 in step\n'
    )
    threads = _OTHER + current if other_first else current + "\n" + _OTHER
    return "Fatal Python error: Segmentation fault\n\n" + threads


def _root(tmp_path, text: str):
    log = tmp_path / "fault.log"
    log.write_text(text, encoding="utf-8")
    report = triage_paths([str(log)])
    assert not report.problems
    (root,) = [f for f in report.findings if f.code == "PP802"]
    return root


def test_the_current_thread_s_innermost_frame_is_where_it_died(tmp_path):
    root = _root(tmp_path, _log("_reward_feet_air_time"))
    assert root.location is not None
    assert root.location.function == "_reward_feet_air_time"
    assert "died in _reward_feet_air_time, reward_wrapper.py:88" in root.message


def test_another_thread_s_frame_is_not_where_it_died(tmp_path):
    root = _root(tmp_path, _log("_reward_feet_air_time", other_first=False))
    assert root.location is not None
    assert root.location.function == "_reward_feet_air_time"
    assert "wait" not in root.message and "queue.py" not in root.message


@settings(max_examples=20, deadline=None)
@given(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,30}", fullmatch=True))
def test_any_function_name_is_named(tmp_path_factory, function):
    root = _root(tmp_path_factory.mktemp("fault"), _log(function))
    assert root.location is not None and root.location.function == function


def test_a_double_spaced_paste_keeps_where_it_died(tmp_path):
    # a paste that puts a blank line after each line of the dump (as in sglang#10350)
    double = "".join(line + "\n\n" for line in _log("transfer_worker").splitlines())
    root = _root(tmp_path, double)
    assert root.location is not None and root.location.function == "transfer_worker"
    assert "died in transfer_worker, reward_wrapper.py:88" in root.message


def test_the_current_thread_after_many_other_threads_is_where_it_died(tmp_path):
    # 40 other threads of 11 frames each (the handler dumps up to 100 of 100 frames) first
    other = "".join(
        f"Thread 0x00007fa040e2b7{n:02x} (most recent call first):\n"
        + '  File "/env/lib/python3.10/threading.py", line 324 in wait\n' * 11
        + "\n"
        for n in range(40)
    )
    text = _log("recv_loop").replace(_OTHER, other)
    assert text.count("\n") > 500
    root = _root(tmp_path, text)
    assert root.location is not None and root.location.function == "recv_loop"


def test_two_processes_dumps_are_two_failures_each_where_it_died(tmp_path):
    # two processes' dumps in one log, another process's line between them
    log = tmp_path / "two.log"
    log.write_text(
        _log("_reward_feet_air_time")
        + "[2026-12-03 14:56:09 PP1 TP0] Decode batch. #running-req: 1\n"
        + _log("recv_loop"),
        encoding="utf-8",
    )
    report = triage_paths([str(log)])
    roots = [f for f in report.findings if f.code in ("PP802", "PP803")]
    assert len(roots) == 2 and roots[0].code == "PP802"
    assert "died in _reward_feet_air_time" in roots[0].message
    assert "died in recv_loop" in roots[1].message
