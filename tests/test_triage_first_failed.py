"""What failed first is never collateral of what failed later: a stage's failure that the log's
own times put before the root's (a paste that gives the later stage's lines first) did not
follow from it. Expected values are written by hand from the log below."""

from __future__ import annotations

from pathlib import Path

from hypothesis import example, given, settings
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
@example(first=5, second=3)
def test_collateral_before_its_root_only_within_the_skew(tmp_path_factory, first, second):
    path = tmp_path_factory.mktemp("first") / "m.log"
    path.write_text(_log(first, second), encoding="utf-8")
    found = _codes(path)
    # the aborted communicator is collateral unless stamped more than 3 s before the OOM
    collateral = second >= first - 3
    assert [(code, line) for code, line, _ in found] == (
        [("PP802", 2), ("PP803", 6)] if collateral else [("PP802", 2), ("PP802", 6)]
    )
    assert any("before the root" in m for _, _, m in found) == (first - 3 <= second < first)


_HEAD = (
    "[2026-12-03 14:56:07 PP{pp} TP0] Scheduler hit an exception: "
    "Traceback (most recent call last):"
)
_FRAME = (
    '  File "/usr/lib/python3.11/site-packages/sglang/srt/managers/scheduler.py", '
    "line 3076, in run_scheduler_process"
)
_RECV = (
    '  File "/usr/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", '
    "line 3076, in recv_object_list"
)
_PEER = (
    "RuntimeError: [../gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:13718"
)


def _stamped(stamp: str, lines: list[str]) -> str:
    """``lines`` behind a collector's ingest time ``stamp`` (seconds past 14:56:00Z)."""
    return "".join(f"2026-12-03T14:56:{stamp}Z {line}\n" for line in lines)


def _root(stamp: str) -> str:
    return _stamped(
        stamp, [_HEAD.format(pp=0), _FRAME, "    scheduler.event_loop_pp()", "ValueError: y"]
    )


def _peer_closed(stamp: str) -> str:
    return _stamped(stamp, [_HEAD.format(pp=1), _FRAME, _RECV, "    work.wait()", _PEER])


def _roots_and_collateral(paths: list[Path]) -> tuple[list[str], list[str]]:
    report = triage_paths([str(p) for p in paths])
    assert not report.problems
    roots = [f.message for f in report.findings if f.code == "PP802"]
    collateral = [f.message for f in report.findings if f.code == "PP803"]
    return roots, collateral


def test_a_peer_closed_a_moment_before_the_root_stays_its_collateral(tmp_path):
    # a collector's ingest times put PP1's closed connection 0.2 s before PP0's ValueError
    path = tmp_path / "skew.log"
    path.write_text(_root("07.000") + _peer_closed("06.800"), encoding="utf-8")
    roots, collateral = _roots_and_collateral([path])
    assert len(roots) == 1 and "ValueError: y" in roots[0]
    assert len(collateral) == 1 and "0.2 s before the root" in collateral[0]


def test_a_peer_closed_in_another_log_a_moment_before_stays_collateral(tmp_path):
    (tmp_path / "a.log").write_text(_root("07.000"), encoding="utf-8")
    (tmp_path / "b.log").write_text(_peer_closed("05.000"), encoding="utf-8")
    roots, collateral = _roots_and_collateral([tmp_path / "a.log", tmp_path / "b.log"])
    assert len(roots) == 1 and "ValueError: y" in roots[0]
    assert len(collateral) == 1 and "2.0 s before the root" in collateral[0]


def test_a_peer_closed_long_before_the_root_is_not_its_collateral(tmp_path):
    # 10 s is no clock's drift: the connection closed before PP0 failed
    path = tmp_path / "early.log"
    path.write_text(_root("17.000") + _peer_closed("07.000"), encoding="utf-8")
    roots, collateral = _roots_and_collateral([path])
    assert len(roots) == 2 and not collateral
