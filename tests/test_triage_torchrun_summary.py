"""torchrun's failure summary in a console's table rows: its ``Root Cause (first observed
failure)`` row is the first failure, whatever rows of its ``Failures:`` list come before it."""

from __future__ import annotations

import pytest

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
