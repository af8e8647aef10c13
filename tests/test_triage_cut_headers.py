"""A paste that starts inside a traceback's header: the failure is still its rank's, placed
on the cut header's line."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths
from ppaux.triage.tracelines import cut_header

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
AUX = LOGS / "sglang-aux-list.log"
HEADER = "Scheduler hit an exception: Traceback (most recent call last):"


def _root(path: Path):
    report = triage_paths([str(path)])
    return [
        (f.code, f.key, f.extra.get("exception"), f.location.line)
        for f in report.findings
        if f.code in ("PP801", "PP802", "PP809")
    ]


def _after_header() -> list[str]:
    lines = AUX.read_text(encoding="utf-8").splitlines()
    start = next(n for n, line in enumerate(lines) if "PP0] Scheduler hit" in line)
    return lines[start + 1 :]


def test_a_header_cut_before_traceback_is_its_rank_s_failure_on_its_line(tmp_path):
    rest = _after_header()
    for n, first in enumerate(
        (
            "[2026-12-03 14:56:07 PP0] Scheduler hit an exception: Trac",
            "[2026-12-03 14:56:07 PP0] Scheduler hit an exc",
            "6-12-03 14:56:07 PP0] Trac",
            "PP0] Scheduler hit an exception: Traceback (",
        )
    ):
        path = tmp_path / f"cut{n}.log"
        path.write_text("\n".join(["[2026-12-03 14:56:06 PP1] Decode batch", first, *rest]) + "\n")
        assert _root(path) == [("PP801", "PP0", "RuntimeError", 2)], first


def test_a_paste_that_starts_at_the_frames_is_a_failure_at_its_first_line(tmp_path):
    path = tmp_path / "frames.log"
    path.write_text("\n".join(_after_header()) + "\n")
    assert _root(path) == [("PP801", None, "RuntimeError", 1)]


def test_what_a_cut_header_is():
    assert cut_header("Scheduler hit an exception: Trac")
    assert cut_header("Trac")
    assert cut_header("Scheduler hit an")
    assert not cut_header("Sch")  # too short to tell
    assert not cut_header("Decode batch, #running-req: 3")
    assert not cut_header("the Tracker")  # a word that starts as the header does, then differs
    assert not cut_header("xTrac")  # inside a word


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rank=st.integers(0, 7),
    cut=st.integers(5, len(HEADER) - len("Traceback (most recent call last):") + 10),
)
def test_any_cut_of_the_header_keeps_the_rank(tmp_path, rank, cut):
    rest = _after_header()
    path = tmp_path / "log.txt"
    first = f"[2026-12-03 14:56:07 PP{rank}] {HEADER[:cut]}"
    path.write_text("\n".join(["[2026-12-03 14:56:06 PP9] Decode batch", first, *rest]) + "\n")
    assert _root(path) == [("PP801", f"PP{rank}", "RuntimeError", 2)]
