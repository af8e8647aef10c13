"""Logs given together are read as one deployment's, except where they say otherwise: failures
more than a day apart are never one moment (whatever the hosts' zones), and an incident whose
ranks come from logs that nothing ties together (no host, pod, address or ``dist_init_addr`` in
common) is said to have been read as one run. What each set of logs must give is written by
hand."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import cli


def _log(path: Path, stamp: str, ranks: str, args: str = "") -> str:
    head = f"[{stamp} {ranks}] server_args=ServerArgs({args})\n" if args else ""
    path.write_text(
        f"{head}[{stamp} {ranks}] Scheduler hit an exception: Traceback (most recent call "
        "last):\n"
        '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 2412, in '
        "run_scheduler_process\n"
        "    scheduler.event_loop_pp()\n"
        "KeyError: 'output_ids'\n",
        encoding="utf-8",
    )
    return str(path)


def _triage(*paths: str) -> dict:
    result = cli("triage", "--format", "json", *paths)
    assert result.exit_code == 1, result.output
    return json.loads(result.output)


def test_failures_a_year_apart_are_two_incidents_whatever_the_zones(tmp_path):
    first = _log(tmp_path / "a.log", "2025-01-05 10:00:00", "PP0 TP0")
    second = _log(tmp_path / "b.log", "2026-03-01 08:00:00", "PP0 TP0")
    document = _triage(first, second)
    assert [len(i["ranks"]) for i in document["incidents"]] == [1, 1]
    assert [i["one_run"] for i in document["incidents"]] == ["tied", "tied"]


def test_failures_an_hour_apart_in_two_hosts_local_times_may_be_one_moment(tmp_path):
    # two hosts' local times, zones unknown: an hour apart may be the same instant
    first = _log(tmp_path / "node0.log", "2026-03-01 08:00:00", "PP0 TP0")
    second = _log(tmp_path / "node1.log", "2026-03-01 09:00:00", "PP1 TP0")
    document = _triage(first, second)
    (incident,) = document["incidents"]
    assert incident["ranks"] == ["PP0 TP0", "PP1 TP0"]
    # nothing in the two logs ties them: the report says they were read as one run
    assert incident["one_run"] == "assumed"
    notes = " ".join(document["notes"])
    assert "incident 1: 2 processes in 2 logs" in notes
    assert "were read as one run" in notes
    assert "triage each run's logs on their own" in notes


def test_logs_of_one_deployment_s_dist_init_addr_are_tied(tmp_path):
    args = "model_path='/models/qwen', dist_init_addr='10.0.0.1:5000', pp_size=2"
    first = _log(tmp_path / "node0.log", "2026-03-01 08:00:00", "PP0 TP0", args)
    second = _log(tmp_path / "node1.log", "2026-03-01 09:00:00", "PP1 TP0", args)
    document = _triage(first, second)
    (incident,) = document["incidents"]
    assert incident["one_run"] == "tied"
    assert not any("were read as one run" in note for note in document["notes"])


def test_the_note_stands_in_text_and_markdown_too(tmp_path):
    first = _log(tmp_path / "node0.log", "2026-03-01 08:00:00", "PP0 TP0")
    second = _log(tmp_path / "node1.log", "2026-03-01 08:00:01", "PP1 TP0")
    for form in ("text", "markdown"):
        said = " ".join(cli("triage", "--format", form, first, second).output.split())
        assert "were read as one run" in said
