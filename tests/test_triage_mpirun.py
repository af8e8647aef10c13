"""Open MPI's launcher's ``mpirun noticed that process rank N ... exited on signal S`` line,
alone in a log, is a rank's death that the log does not explain (PP809, ``process-died``),
not a log triage cannot read; ``explain`` says the same of the line."""

from __future__ import annotations

from pathlib import Path

from helpers import cli

from ppaux.triage import triage_paths

_KILLED = (
    "mpirun noticed that process rank 0 with PID 1234 on node host-a exited on signal 9 (Killed)."
)


def _roots(tmp_path: Path, text: str) -> list:
    path = tmp_path / "mpi.log"
    path.write_text(text, encoding="utf-8")
    report = triage_paths([str(path)])
    assert not report.problems
    return [f for f in report.findings if f.code in ("PP801", "PP802", "PP809")]


def test_a_rank_killed_by_sigkill_is_a_death_with_no_root(tmp_path):
    (root,) = _roots(tmp_path, _KILLED + "\n")
    assert root.code == "PP809"
    assert root.extra["no_root"] == "process-died"
    assert "rank 0 (pid 1234 on host-a) died: killed by SIGKILL (signal 9; mpirun)" in (
        root.message.replace("\n", " ")
    )
    assert "OOM killer" in root.message


def test_a_rank_killed_by_sigsegv_points_to_its_core_dump(tmp_path):
    line = (
        "prterun noticed that process rank 3 with PID 77 on node n2 exited on signal 11 "
        "(Segmentation fault).\n"
    )
    (root,) = _roots(tmp_path, line)
    assert root.code == "PP809"
    assert "killed by SIGSEGV (signal 11; prterun)" in root.message
    assert "core dump" in root.message


def test_explain_reads_the_line_as_a_death():
    result = cli("explain", _KILLED)
    assert result.exit_code == 2
    said = " ".join(result.output.split())
    assert "it reports that a process died: killed by SIGKILL (signal 9; mpirun)" in said
    assert "not an sglang log" not in said
