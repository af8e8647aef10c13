"""Where the root's traceback is cut before its exception, the first step is to collect that
process's whole log, whether or not the logs show pipeline stages (then the stage comparison
follows). A log from a public report (fixtures/logs/real/README.md); expectations by hand."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import cli

from ppaux.triage import triage_paths

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "real"
COLLECT = (
    "the root's traceback is cut before its exception: collect that process's whole log (its "
    "stderr, every line) and run ppaux triage on it"
)


def test_a_cut_pp_root_says_to_collect_the_whole_log_first() -> None:
    report = triage_paths([str(REAL / "sglang-10272-backtick-sigquit-tp4-pp1-cut.log")])
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert root.key == "TP4 PP1" and root.extra["exception"] is None
    result = cli(
        "triage", "--format", "json", str(REAL / "sglang-10272-backtick-sigquit-tp4-pp1-cut.log")
    )
    steps = json.loads(result.stdout)["steps"]
    assert steps[0] == {"argv": None, "where": "any host", "comment": COLLECT}
    argvs = [s["argv"] for s in steps if s["argv"]]
    assert [
        "ppaux",
        "fingerprint",
        "--pp-rank",
        "1",
        "--pp-size",
        "2",
        "-o",
        "stage-1.json",
    ] in argvs


def test_a_complete_pp_root_has_no_such_step(tmp_path: Path) -> None:
    log = tmp_path / "pp.log"
    log.write_text(
        "[2026-01-01 00:00:01 PP1] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", '
        "line 10, in run_scheduler_process\n"
        "ValueError: a value\n"
    )
    document = json.loads(cli("triage", "--format", "json", str(log)).stdout)
    assert all(s["comment"] != COLLECT for s in document["steps"])
