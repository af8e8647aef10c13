"""What failed first is never collateral of what failed later: a stage's failure that the log's
own times put before the root's (a paste that gives the later stage's lines first) did not
follow from it. Expected values are written by hand from the log below."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths


def _log(first: int, second: int) -> str:
    """PP1 TP0's OOM at 10:00:``first``, written first; PP0 TP0's communicator aborted at
    10:00:``second``, written after it."""
    return (
        "[2026-03-01 10:00:00 PP1 TP0] Decode batch. #running-req: 1\n"
        f"[2026-03-01 10:00:{first:02d} PP1 TP0] Scheduler hit an exception: Traceback (most "
        "recent call last):\n"
        '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 900, in event_loop_pp\n'
        "    result = self.run_batch(batch)\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
        f"[2026-03-01 10:00:{second:02d} PP0 TP0] Scheduler hit an exception: Traceback (most "
        "recent call last):\n"
        '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 900, in event_loop_pp\n'
        "    result = self.run_batch(batch)\n"
        "RuntimeError: NCCL communicator was aborted on rank 0.\n"
    )


def _codes(path: Path) -> list[tuple[str, int, str]]:
    report = triage_paths([str(path)])
    assert not report.problems
    return sorted(
        (f.code, f.location.line, f.message)
        for f in report.findings
        if f.code in ("PP802", "PP803") and f.location is not None
    )


def test_a_stage_that_failed_before_the_root_is_not_its_collateral(tmp_path):
    path = tmp_path / "m.log"
    path.write_text(_log(5, 1), encoding="utf-8")
    found = _codes(path)
    # PP0 TP0 (line 6) failed at 10:00:01, 4 s before PP1 TP0's OOM (line 2): not its collateral
    assert [(code, line) for code, line, _ in found] == [("PP802", 2), ("PP802", 6)]
    assert all("before the root" not in message for _, _, message in found)


def test_a_stage_that_failed_after_the_root_stays_its_collateral(tmp_path):
    path = tmp_path / "m.log"
    path.write_text(_log(1, 5), encoding="utf-8")
    found = _codes(path)
    assert [(code, line) for code, line, _ in found] == [("PP802", 2), ("PP803", 6)]
    assert "4.0 s after the root" in found[1][2]


@settings(max_examples=25, deadline=None)
@given(first=st.integers(0, 59), second=st.integers(0, 59))
def test_collateral_never_failed_before_its_root(tmp_path_factory, first, second):
    path = tmp_path_factory.mktemp("first") / "m.log"
    path.write_text(_log(first, second), encoding="utf-8")
    for code, line, message in _codes(path):
        assert "before the root" not in message, message
        if code == "PP803":
            assert line == 6 and second >= first
