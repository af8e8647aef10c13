"""JSON records longer than ``max_log_line``: the record's start is still read."""

from __future__ import annotations

import io
import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths
from ppaux.triage.envelopes import cut_record
from ppaux.triage.scanner import Scanner

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


def _docker(lines: list[str], long_at: int, extra: int) -> str:
    """A Docker json-file log of ``lines``, one record each, the record ``long_at`` holding
    ``extra`` more bytes in a frame's code line (a record longer than a line is read)."""
    records = []
    for n, line in enumerate(lines):
        if n == long_at:
            line = line.replace("\n    ", "\n    " + "x" * extra, 1)
        time = f"2026-12-03T14:56:07.{n:06d}Z"
        records.append(json.dumps({"log": line + "\n", "stream": "stderr", "time": time}))
    return "\n".join(records) + "\n"


def _aux_records() -> tuple[list[str], int]:
    """The fixture's lines, its root's traceback (header to exception line) in one record."""
    lines = AUX.read_text(encoding="utf-8").splitlines()
    start = next(n for n, line in enumerate(lines) if "PP0] Scheduler hit" in line)
    end = next(n for n, line in enumerate(lines) if line.startswith("RuntimeError")) + 1
    return [*lines[:start], "\n".join(lines[start:end]), *lines[end:]], start


def test_a_record_past_a_line_is_cut_at_its_own_end_and_the_next_are_read(tmp_path):
    lines, at = _aux_records()
    path = tmp_path / "docker.log"
    path.write_text(_docker(lines, at, 70 << 10), encoding="utf-8")
    report = triage_paths([str(path)])
    # the root's exception line and time stand past the first 64 KiB of its record
    assert _roots(report) == ROOT
    (root,) = (f for f in report.findings if f.code == "PP801")
    assert root.extra["line"] == at + 1
    assert "14:56:07." + f"{at:06d}" in root.message
    # the records after it are read: the other rank's communication failure and SIGQUIT
    codes = {f.code for f in report.findings}
    assert {"PP803", "PP804"} <= codes
    (log,) = report.data["logs"]
    assert log["long_lines"] == 1 and log["lines"] == len(lines)
    # the cut is said
    (cut,) = (f for f in report.findings if f.code == "PP810")
    assert cut.message == (
        f"1 line of {path} is longer than 65536 bytes (the first: line {at + 1}) and was read "
        "cut (a JSON record's start and end kept); what was read was triaged "
        "(limit max_log_line=65536 reached)"
    )


@settings(max_examples=60, deadline=None)
@given(
    start=st.text(max_size=40),
    middle=st.text(min_size=1, max_size=40),
    end=st.text(max_size=40),
    repeat=st.integers(1, 200),
    chunk=st.sampled_from([64, 300, 1 << 16]),
)
def test_a_long_record_keeps_its_start_and_its_end_as_one_record(start, middle, end, repeat, chunk):
    message = start + middle * repeat + end
    record = json.dumps({"log": message, "time": "2026-12-03T14:56:07Z"})  # \uXXXX escapes
    stream = io.BufferedReader(io.BytesIO(record.encode() + b"\n{}\n"))
    scanner = Scanner(stream, chunk=chunk, max_line=256)
    (_, line), (_, following) = scanner.next_line(), scanner.next_line()
    assert following == b"{}"
    if len(record) <= 256:
        assert line == record.encode()
        return
    assert scanner.long_lines == 1 and len(line) <= 256
    kept = json.loads(line)
    assert kept["time"] == "2026-12-03T14:56:07Z"
    text = kept["log"]
    # the text kept is a start of the message followed by an end of it
    assert any(
        message.startswith(text[:cut]) and message.endswith(text[cut:])
        for cut in range(len(text) + 1)
    )


def _healthy(lines: int) -> list[str]:
    return [
        f"[2026-12-03 14:56:0{n % 10} PP{n % 2}] Decode batch, #running-req: {n}"
        for n in range(lines)
    ]


def test_a_log_read_cut_with_no_failure_is_no_clean_pass(tmp_path):
    lines = _healthy(20)
    lines[7] += " " + "y" * (70 << 10)
    lines[12] += " " + "z" * (70 << 10)
    path = tmp_path / "sglang.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = triage_paths([str(path)])
    (cut,) = (f for f in report.findings if f.code == "PP813")
    assert cut.severity.value == "error"
    assert cut.message == (
        f"2 lines of {path} are longer than 65536 bytes (the first: line 8) and were read cut; "
        "the 20 lines read hold no failure (limit max_log_line=65536 reached)"
    )
    assert cut.location.line == 8


def test_a_log_read_whole_or_with_a_failure_gets_no_cut_finding(tmp_path):
    whole = tmp_path / "whole.log"
    whole.write_text("\n".join(_healthy(20)) + "\n", encoding="utf-8")
    assert not [f for f in triage_paths([str(whole)]).findings if f.code == "PP813"]
    lines = AUX.read_text(encoding="utf-8").splitlines()
    lines[0] += " " + "y" * (70 << 10)
    failed = tmp_path / "failed.log"
    failed.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = triage_paths([str(failed)])
    assert _roots(report) == ROOT
    assert not [f for f in report.findings if f.code == "PP813"]
