"""A traceback cut before its exception follows the incident nearest to it in time, never one
a day or years away; one far from every incident is an incident of its own, and one with no
time joins the latest incident before it in its log. What each log must give is written by
hand."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import cli

_FRAME = (
    '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 2412, in '
    "run_scheduler_process\n"
    "    scheduler.event_loop_pp()\n"
)


def _failed(stamp: str, ranks: str, error: str) -> str:
    head = "Scheduler hit an exception: Traceback (most recent call last):\n"
    return f"[{stamp} {ranks}] {head}{_FRAME}{error}\n"


def _cut(stamp: str, ranks: str) -> str:
    # the header and a frame, then the next record: the exception line is lost
    head = "Scheduler hit an exception: Traceback (most recent call last):\n"
    return f"[{stamp} {ranks}] {head}{_FRAME}[{stamp} {ranks}] Load weight end.\n"


def _triage(path: Path, text: str) -> dict:
    path.write_text(text, encoding="utf-8")
    result = cli("triage", "--format", "json", str(path))
    assert result.exit_code == 1, result.output
    return json.loads(result.output)


def _shape(document: dict) -> list[tuple[str, str | None, int]]:
    return [(i["error"], i["time"], i["collateral"]) for i in document["incidents"]]


def test_two_incidents_a_day_apart_keep_each_its_own_cut_traceback(tmp_path):
    # the second day's cut traceback is written after the first day's root and two seconds
    # before the second day's: it is the second day's
    text = (
        _failed("2026-03-01 08:00:00", "PP0 TP0", "KeyError: 'output_ids'")
        + _cut("2026-03-01 08:00:03", "PP1 TP0")
        + _cut("2026-03-02 07:59:58", "PP1 TP0")
        + _failed("2026-03-02 08:00:00", "PP0 TP0", "ValueError: bad shape")
    )
    document = _triage(tmp_path / "node.log", text)
    assert _shape(document) == [
        ("KeyError: 'output_ids'", "2026-03-01 08:00:00", 1),
        ("ValueError: bad shape", "2026-03-02 08:00:00", 1),
    ]
    said = " ".join(cli("triage", str(tmp_path / "node.log")).output.split())
    # said against its own day's root, never against the day before's
    assert "failed 2.0 s before the root" in said
    assert "86397" not in said


def test_a_cut_traceback_years_from_every_incident_is_an_incident_of_its_own(tmp_path):
    text = _cut("2023-06-10 09:00:00", "PP1 TP0") + _failed(
        "2026-03-01 08:00:00", "PP0 TP0", "KeyError: 'output_ids'"
    )
    document = _triage(tmp_path / "node.log", text)
    assert [(i["time"], i["collateral"]) for i in document["incidents"]] == [
        ("2026-03-01 08:00:00", 0),
        ("2023-06-10 09:00:00", 0),
    ]
    assert document["incidents"][0]["error"] == "KeyError: 'output_ids'"


def test_a_cut_traceback_with_no_time_joins_the_latest_incident_before_it(tmp_path):
    untimed = (
        "Scheduler hit an exception: Traceback (most recent call last):\n"
        f"{_FRAME}Load weight end.\n"
    )
    text = (
        _failed("2026-03-01 08:00:00", "PP0 TP0", "KeyError: 'output_ids'")
        + _failed("2026-03-02 08:00:00", "PP0 TP0", "ValueError: bad shape")
        + untimed
    )
    document = _triage(tmp_path / "node.log", text)
    assert _shape(document) == [
        ("KeyError: 'output_ids'", "2026-03-01 08:00:00", 0),
        ("ValueError: bad shape", "2026-03-02 08:00:00", 1),
    ]
