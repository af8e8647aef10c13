"""torchrun's failure summary in a console's table rows: its ``Root Cause (first observed
failure)`` row is the first failure, whatever rows of its ``Failures:`` list come before it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths

_COLUMNS = "  | 2024-08-23T22:22:58.880Z | "


def _row(rank: int, code: int) -> str:
    return (
        f"[{rank}]: time : 2024-08-23_22:22:58 host : algo-1 rank : {rank} (local_rank: {rank}) "
        f"exitcode : {code} (pid: {188 + rank}) error_file: <N/A> traceback : To enable traceback"
    )


def _findings(tmp_path, text):
    log = tmp_path / "x.log"
    log.write_text(text)
    report = triage_paths([str(log)])
    assert not report.problems
    return report.findings


def _table(lines):
    return "".join(_COLUMNS + line + "\n" for line in lines)


def test_the_root_cause_row_beats_the_failures_rows_listed_before_it(tmp_path):
    text = _table(
        [
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
            "train.py FAILED",
            "Failures:",
            _row(1, -9),
            "Root Cause (first observed failure):",
            _row(0, 1),
        ]
    )
    findings = _findings(tmp_path, text)
    (root,) = [f for f in findings if f.code in ("PP801", "PP802", "PP809")]
    assert root.code == "PP802"
    assert root.extra["ranks"] == ["rank 0"]
    assert "rank 0 exited with code 1 (torchrun's first observed failure)" in root.message
    (other,) = [f for f in findings if f.code == "PP803"]
    assert "rank 1 failed after the root (torchrun's summary lists it before)" in other.message


def test_a_root_cause_row_of_a_signal_is_the_death_named(tmp_path):
    text = _table(["Failures:", _row(1, 1), "Root Cause (first observed failure):", _row(0, -9)])
    findings = _findings(tmp_path, text)
    (root,) = [f for f in findings if f.code in ("PP801", "PP802", "PP809")]
    assert root.code == "PP809"
    assert root.extra["no_root"] == "process-died"
    assert "no root in this log: rank 0 was killed by SIGKILL (signal 9)" in root.message


@pytest.mark.parametrize("before", ["", "Failures: " + _row(2, -6) + " "])
def test_a_summary_flattened_on_one_line_names_its_root_cause_row(tmp_path, before):
    text = "train.py FAILED " + before + "Root Cause (first observed failure): " + _row(0, 1)
    findings = _findings(tmp_path, text + "\n")
    (root,) = [f for f in findings if f.code in ("PP801", "PP802", "PP809")]
    assert root.code == "PP802"
    assert root.extra["ranks"] == ["rank 0"]


def test_rows_without_a_root_cause_heading_stay_deaths_in_their_order(tmp_path):
    findings = _findings(tmp_path, _table([_row(3, -9), _row(0, -6)]))
    (root,) = [f for f in findings if f.code in ("PP801", "PP802", "PP809")]
    assert root.code == "PP809"
    assert "no root in this log: rank 3 was killed by SIGKILL" in root.message


def test_a_summary_whose_text_lost_characters_still_names_the_killed_rank(tmp_path):
    # a copy read back from a screenshot: a space before the heading's colon, the columns
    # gone, 'local rank' with a space, the exit code run into the rank's line
    text = (
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
        "train.py FAILED\n"
        "Failures:\n"
        "<NO OTHER FAILURES>\n"
        "Root Cause (first observed failure) :\n"
        "[0]:\n"
        "time\n"
        "host\n"
        "2023-09-14 01:45:50\n"
        "node-a\n"
        "rank2 (local rank: 2)exitcode: -9 (pid: 36071)error file: <N/A>\n"
        "traceback : signal 9 (SIGKILL) received by PID 36071\n"
    )
    path = tmp_path / "ocr.log"
    path.write_text(text, encoding="utf-8")
    report = triage_paths([str(path)])
    (root,) = [f for f in report.findings if f.code in ("PP801", "PP802", "PP809")]
    assert root.code == "PP809"
    assert root.extra["no_root"] == "process-died"
    said = " ".join(root.message.split())
    assert said.startswith("no root in this log: rank 2 was killed by SIGKILL (signal 9)")


def _failures_on_lines(rows):
    """torchrun's summary as it prints it, each failure on lines of its own, cut after its
    ``Failures:`` rows (before its root cause): ``rows`` of (rank, exit code)."""
    lines = [
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
        "============================================================",
        "train.py FAILED",
        "------------------------------------------------------------",
        "Failures:",
    ]
    for rank, code in rows:
        lines += [
            f"[{rank}]:",
            "  time      : 2023-08-26_23:22:05",
            "  host      : node-a",
            f"  rank      : {rank} (local_rank: {rank})",
            f"  exitcode  : {code} (pid: {8834 + rank})",
            "  error_file: <N/A>",
            "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
        ]
    return "".join(line + "\n" for line in lines)


def _commands(report):
    return [" ".join(step["argv"]) for step in report.data["steps"] if step["argv"]]


def test_failures_rows_on_lines_of_their_own_name_their_ranks_exit_code_1_is_no_kill(tmp_path):
    # LlamaFactory #701's paste: ranks 1 and 2 exited with code 1, the root cause cut off.
    # Exit code 1 is each rank's own error, its traceback in that rank's stderr: not a kill.
    log = tmp_path / "x.log"
    log.write_text(_failures_on_lines([(1, 1), (2, 1)]))
    report = triage_paths([str(log)])
    (root,) = [f for f in report.findings if f.code in ("PP801", "PP802", "PP809")]
    assert (root.code, root.key, root.extra["exception"]) == ("PP802", "rank 1", None)
    assert report.data["incidents"][0]["ranks"] == ["rank 1", "rank 2"]
    assert not any(c.startswith(("journalctl", "dmesg", "free")) for c in _commands(report))
    assert any("rank's own stderr" in step["comment"] for step in report.data["steps"])


def test_a_failures_row_killed_by_sigkill_gets_the_kill_steps(tmp_path):
    log = tmp_path / "x.log"
    log.write_text(_failures_on_lines([(1, -9)]))
    report = triage_paths([str(log)])
    (root,) = [f for f in report.findings if f.code in ("PP801", "PP802", "PP809")]
    assert (root.code, root.extra["no_root"]) == ("PP809", "process-died")
    assert "journalctl -k -g Killed process|Out of memory" in _commands(report)


def test_the_real_failures_rows_of_llamafactory_701_are_ranks_1_and_2(tmp_path):
    real = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "real"
    report = triage_paths([str(real / "llamafactory-701-stderr-childfailed-summary.log")])
    (root,) = [f for f in report.findings if f.code in ("PP801", "PP802", "PP809")]
    assert (root.code, root.key) == ("PP802", "rank 1")
    assert report.data["incidents"][0]["ranks"] == ["rank 1", "rank 2"]
    assert not any(c.startswith(("journalctl", "dmesg", "free")) for c in _commands(report))


@settings(max_examples=40, deadline=None)
@given(
    codes=st.lists(
        st.one_of(st.integers(1, 255), st.sampled_from([-6, -9, -11, -15])), min_size=1, max_size=4
    )
)
def test_kill_steps_come_only_for_a_row_that_a_signal_ended(codes):
    import io

    text = _failures_on_lines(list(enumerate(codes, 1)))
    report = triage_paths(["x.log"], {"x.log": io.BytesIO(text.encode())})
    killed = "journalctl -k -g Killed process|Out of memory" in _commands(report)
    (root,) = [f for f in report.findings if f.code in ("PP801", "PP802", "PP809")]
    if all(code > 0 for code in codes):
        assert (root.code, root.key, killed) == ("PP802", "rank 1", False)
    if all(code == -9 for code in codes):
        assert (root.code, killed) == ("PP809", True)
