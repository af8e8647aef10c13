"""JSON records longer than ``max_log_line``: the record's start is still read."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from ppaux.triage import triage_paths
from ppaux.triage.envelopes import cut_record

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
AUX = LOGS / "sglang-aux-list.log"
ROOT = [("PP801", "PP0", "auxiliary-output", "RuntimeError")]


def _roots(report):
    return [
        (f.code, f.key, f.extra.get("kind"), f.extra.get("exception"))
        for f in report.findings
        if f.code in ("PP801", "PP802", "PP809")
    ]


def test_a_docker_record_longer_than_a_line_keeps_the_root_s_exception(tmp_path):
    lines = AUX.read_text(encoding="utf-8").splitlines()
    records = []
    for n, line in enumerate(lines):
        if line.startswith("RuntimeError: received a non-tensor"):
            line += " " + "x" * (70 << 10)  # the exception's message is past 64 KiB
        time = f"2026-12-03T14:56:07.{n:06d}Z"
        records.append(json.dumps({"log": line + "\n", "stream": "stderr", "time": time}))
    path = tmp_path / "docker.log"
    path.write_text("\n".join(records) + "\n", encoding="utf-8")
    assert _roots(triage_paths([str(path)])) == ROOT


def test_a_record_holding_a_whole_traceback_past_a_line_keeps_its_rank_and_exception(tmp_path):
    lines = AUX.read_text(encoding="utf-8").splitlines()
    start = next(n for n, line in enumerate(lines) if "PP0] Scheduler hit" in line)
    end = next(n for n, line in enumerate(lines) if line.startswith("RuntimeError")) + 1
    traceback = "\n".join(lines[start:end]) + "\n" + "y" * (70 << 10)
    records = [
        json.dumps({"textPayload": line, "timestamp": "2026-12-03T14:56:06Z"})
        for line in lines[:start]
    ]
    records.append(json.dumps({"textPayload": traceback, "timestamp": "2026-12-03T14:56:07Z"}))
    records += [
        json.dumps({"textPayload": line, "timestamp": "2026-12-03T14:56:08Z"})
        for line in lines[end:]
    ]
    path = tmp_path / "cloud-logging.log"
    path.write_text("\n".join(records) + "\n", encoding="utf-8")
    assert _roots(triage_paths([str(path)])) == ROOT


def test_a_cut_record_gives_its_message_as_far_as_it_goes():
    record = json.dumps({"log": 'a\tb "quoted" \\ caf\u00e9\nsecond line', "time": "x"})
    assert record.startswith('{"log": "a\\tb \\"quoted\\" \\\\ caf')
    assert cut_record(record[:27]).lines == ['a\tb "quoted" \\']
    assert cut_record(record[:26]).lines == ['a\tb "quoted" ']  # an escape cut in two
    assert cut_record(record[:-16]).lines == ['a\tb "quoted" \\ caf\u00e9', "second lin"]
    assert cut_record('{"stream": "stderr", "other": "x') is None


@given(st.text(max_size=200), st.integers(0, 400), st.sampled_from(["log", "message", "MESSAGE"]))
def test_any_cut_record_s_message_is_a_start_of_the_whole(message, cut, key):
    record = json.dumps({key: message, "time": "2026-12-03T14:56:07Z"})[:cut]
    peeled = cut_record(record)
    if peeled is not None:
        assert "\n".join(peeled.lines) == message[: len("\n".join(peeled.lines))]
