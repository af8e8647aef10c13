"""Log stores' exports: rows written newest first, and JSON documents told by their structure."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppaux.limits import Limits
from ppaux.suggestions import RaiseLimit
from ppaux.triage import triage_paths
from ppaux.triage.documents import is_document

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
AUX = LOGS / "sglang-aux-list.log"
#: 2025-12-03T14:56:07Z in nanoseconds; rows a microsecond apart.
BASE = 1764773767_000000000


def _roots(report):
    return [
        (f.code, f.key, f.extra.get("kind"), f.extra.get("exception"))
        for f in report.findings
        if f.code in ("PP801", "PP802", "PP809")
    ]


def _iso(n: int) -> str:
    moment = datetime.fromtimestamp((BASE + n * 1000) / 1e9, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"


def _table(lines: list[str]) -> list[str]:
    """Grafana's table download: time, labels, line."""
    return [
        f'{_iso(n)}\t{{namespace="llm", pod="sglang-pp-0"}}\t{line}' for n, line in enumerate(lines)
    ]


def _csv(lines: list[str]) -> list[str]:
    return [f'"{_iso(n)}","{line.replace(chr(34), chr(34) * 2)}"' for n, line in enumerate(lines)]


def _stamped(lines: list[str]) -> list[str]:
    return [f"{_iso(n)} {line}" for n, line in enumerate(lines)]


def _write(path: Path, rows: list[str]) -> Path:
    path.write_text("".join(row + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("envelope", [_table, _csv, _stamped])
def test_a_newest_first_export_has_the_oldest_first_export_s_root(tmp_path, envelope):
    lines = AUX.read_text(encoding="utf-8").splitlines()
    expected = _roots(triage_paths([str(AUX)]))
    assert expected[0][:2] == ("PP801", "PP0")
    rows = envelope(lines)
    oldest = _write(tmp_path / "oldest.log", rows)
    newest = _write(tmp_path / "newest.log", rows[::-1])
    assert _roots(triage_paths([str(oldest)])) == expected
    report = triage_paths([str(newest)])
    assert _roots(report) == expected
    # the root's place is its header's row in the file as written, newest first
    header = next(n for n, row in enumerate(rows[::-1], 1) if "PP0] Scheduler hit" in row)
    (root,) = (f for f in report.findings if f.code == "PP801")
    assert root.extra["line"] == header
    (log,) = report.data["logs"]
    assert log["lines"] == len(rows)


def _loki_values(lines: list[str]) -> list[list[str]]:
    return [[str(BASE + n * 1000), line] for n, line in enumerate(lines)]


def test_loki_s_backward_response_and_its_keys_sorted_have_the_plain_log_s_root(tmp_path):
    lines = AUX.read_text(encoding="utf-8").splitlines()
    expected = _roots(triage_paths([str(AUX)]))
    stream = {"namespace": "llm", "pod": "sglang-pp-0", "container": "sglang"}
    for direction in ("forward", "backward"):
        values = _loki_values(lines)
        if direction == "backward":  # Loki's default: newest first
            values.reverse()
        document = {
            "status": "success",
            "data": {"resultType": "streams", "result": [{"stream": stream, "values": values}]},
        }
        for name, text in (
            ("as-sent", json.dumps(document)),
            ("jq-S", json.dumps(document, sort_keys=True, separators=(",", ":"))),
            ("jq-S-pretty", json.dumps(document, sort_keys=True, indent=2)),
        ):
            path = tmp_path / f"{direction}-{name}.json"
            path.write_text(text, encoding="utf-8")
            assert _roots(triage_paths([str(path)])) == expected, (direction, name)


def _cloudwatch(lines: list[str], streams: tuple[str, ...] = ("sglang/pp-0",)) -> list[dict]:
    first = BASE // 1_000_000
    return [
        {
            "logStreamName": streams[n % len(streams)],
            "timestamp": first + n,
            "message": line,
            "ingestionTime": first + n + 40,
            "eventId": str(37000000 + n),
        }
        for n, line in enumerate(lines)
    ]


def test_cloudwatch_s_get_and_filter_log_events_are_read_as_their_messages(tmp_path):
    lines = AUX.read_text(encoding="utf-8").splitlines()
    expected = _roots(triage_paths([str(AUX)]))
    events = _cloudwatch(lines)
    documents = {
        "filter": {"events": events, "searchedLogStreams": [], "nextToken": "Bxkq6"},
        "get": {"events": events, "nextForwardToken": "f/3", "nextBackwardToken": "b/3"},
        "get-tokens-first": {
            "nextBackwardToken": "b/3",
            "nextForwardToken": "f/3",
            "events": events,
        },
    }
    for name, document in documents.items():
        for form, text in (
            ("compact", json.dumps(document)),
            ("sorted", json.dumps(document, sort_keys=True)),
            ("pretty", json.dumps(document, indent=4)),
        ):
            path = tmp_path / f"{name}-{form}.json"
            path.write_text(text, encoding="utf-8")
            assert _roots(triage_paths([str(path)])) == expected, (name, form)


def test_what_is_a_document_whatever_its_keys_order():
    assert is_document(b'{"data":{"result":[{"stream":{},"values":[["1","x"]]}]},"status":"s"}')
    assert is_document(b'{"events":[{"message":"x","timestamp":1}],"nextToken":"t"}\n')
    assert is_document(b'{"nextForwardToken":"f","events":[{"message":"x"}]}')
    assert is_document(b'{"preview":false,"results":[{"_raw":"x"}]}')
    assert is_document(b'{"took":5,"hits":{"hits":[{"_source":{"message":"x"}}]}}')
    assert is_document(b'{"data":[{"attributes":{"message":"x"}}]}')
    # JSON lines: a record on each line, even one that holds a list
    assert not is_document(b'{"log":"a","events":[{"x":1}]}\n{"log":"b"}\n')
    assert not is_document(b'{"log":"[2026-12-03 14:56:07 PP0] x\\n","stream":"stderr"}\n')


def test_logs_of_several_pods_one_after_the_other_are_not_read_backwards(tmp_path):
    lines = AUX.read_text(encoding="utf-8").splitlines()
    expected = _roots(triage_paths([str(AUX)]))
    half = len(lines) // 2
    # a second pod's earlier start-up lines after the first pod's: one step down in time
    rows = _stamped(lines) + _stamped(["[2025-12-03 14:56:00 PP1] Load weight begin."] * half)
    path = _write(tmp_path / "two-pods.log", rows)
    assert _roots(triage_paths([str(path)])) == expected


def test_a_newest_first_export_too_large_to_hold_is_one_problem(tmp_path):
    lines = AUX.read_text(encoding="utf-8").splitlines()
    path = _write(tmp_path / "newest.log", _table(lines)[::-1])
    report = triage_paths([str(path)], limits=Limits(max_log_document=1024))
    [problem] = report.problems
    assert problem.message == (
        "a log written newest first larger than 1024 bytes (it is read whole to put its rows "
        "back in order); export it oldest first (limit max_log_document=1024 reached)"
    )
    assert problem.suggestions == (RaiseLimit("max_log_document", 1024),)
    assert not _roots(report)


_EXCEPTIONS = st.sampled_from(["RuntimeError", "ValueError", "torch.OutOfMemoryError", "KeyError"])


_SRT = "/usr/local/lib/python3.11/site-packages/sglang/srt/managers"


def _one_failure(rank: int, exception: str, noise: int) -> list[str]:
    other = 1 - rank if rank < 2 else 0
    lines = [
        f"[2026-12-03 14:56:0{n % 6} PP{other}] Decode batch, #running-req: {n}"
        for n in range(noise)
    ]
    lines += [
        f"[2026-12-03 14:56:07 PP{rank}] Scheduler hit an exception: "
        "Traceback (most recent call last):",
        f'  File "{_SRT}/scheduler.py", line 3076, in run_scheduler_process',
        "    scheduler.event_loop_pp()",
        f'  File "{_SRT}/scheduler_pp_mixin.py", line 120, in event_loop_pp',
        "    self.forward()",
        f"{exception}: stage {rank} failed",
        "",
        "[2026-12-03 14:56:08] Received sigquit from a child process. "
        "It usually means the child failed.",
    ]
    return lines


_ENVELOPES = {"table": _table, "csv": _csv, "stamped": _stamped}


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rank=st.integers(0, 7),
    exception=_EXCEPTIONS,
    noise=st.integers(0, 30),
    envelope=st.sampled_from(sorted(_ENVELOPES)),
    newest=st.booleans(),
)
def test_any_envelope_and_its_newest_first_export_keep_the_root(
    tmp_path, rank, exception, noise, envelope, newest
):
    lines = _one_failure(rank, exception, noise)
    rows = _ENVELOPES[envelope](lines)
    path = _write(tmp_path / "log.txt", rows[::-1] if newest else rows)
    roots = _roots(triage_paths([str(path)]))
    assert [(code, key, exc) for code, key, _, exc in roots] == [("PP802", f"PP{rank}", exception)]


def test_journald_short_iso_lines_give_the_server_arguments_oldest_or_newest_first(tmp_path):
    lines = AUX.read_text(encoding="utf-8").splitlines()
    args = (
        "[2026-12-03 14:56:00] server_args=ServerArgs(model_path='/models/llama', "
        "tp_size=1, pp_size=4, nnodes=2, node_rank=0)"
    )
    rows = [
        f"2025-12-03T14:{n // 60 % 60:02d}:{n % 60:02d}+0000 gpu-node-1 python3[4242]: {line}"
        for n, line in enumerate([args, *lines])
    ]
    for name, ordered in (("oldest", rows), ("newest", rows[::-1])):  # journalctl -r
        path = _write(tmp_path / f"{name}.log", ordered)
        report = triage_paths([str(path)])
        assert report.data["pp_size"] == {"value": 4, "from": "server arguments"}, name
        assert _roots(report)[0][:2] == ("PP801", "PP0")


def test_a_loki_response_a_nanosecond_apart_newest_first_keeps_the_root(tmp_path):
    lines = AUX.read_text(encoding="utf-8").splitlines()
    expected = _roots(triage_paths([str(AUX)]))
    values = [[str(BASE + n), line] for n, line in enumerate(lines)][::-1]
    stream = {"pod": "sglang-pp-0"}
    document = {
        "status": "success",
        "data": {"resultType": "streams", "result": [{"stream": stream, "values": values}]},
    }
    path = tmp_path / "loki.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    assert _roots(triage_paths([str(path)])) == expected


def _splunk(rows: list[tuple[int, str]]) -> dict:
    results = [{"_raw": line, "_time": _iso(n), "host": "node1"} for n, line in rows]
    return {"preview": False, "messages": [], "fields": [{"name": "_raw"}], "results": results}


def _elasticsearch(rows: list[tuple[int, str]]) -> dict:
    hits = [
        {"_index": "logs", "_id": str(n), "_source": {"@timestamp": _iso(n), "message": line}}
        for n, line in rows
    ]
    return {"took": 5, "timed_out": False, "hits": {"total": {"value": len(hits)}, "hits": hits}}


def _datadog(rows: list[tuple[int, str]]) -> dict:
    data = [
        {"id": f"AQ{n}", "type": "log", "attributes": {"timestamp": _iso(n), "message": line}}
        for n, line in rows
    ]
    return {"data": data, "meta": {"page": {"after": "x"}}, "links": {"next": "y"}}


_APIS = {"splunk": _splunk, "elasticsearch": _elasticsearch, "datadog": _datadog}


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rank=st.integers(0, 7),
    exception=_EXCEPTIONS,
    noise=st.integers(0, 20),
    api=st.sampled_from(sorted(_APIS)),
    form=st.sampled_from(["compact", "sorted", "pretty"]),
    newest=st.booleans(),
)
def test_a_search_api_s_response_is_read_as_its_records(
    tmp_path, rank, exception, noise, api, form, newest
):
    """Records under any member (Splunk's results, Elasticsearch's hits.hits[]._source,
    Datadog's data[].attributes) are read as the log they hold: never one record whose first
    rank stands for the failure."""
    rows = list(enumerate(_one_failure(rank, exception, noise)))
    document = _APIS[api](rows[::-1] if newest else rows)
    text = {
        "compact": json.dumps(document),
        "sorted": json.dumps(document, sort_keys=True),
        "pretty": json.dumps(document, indent=2),
    }[form]
    path = tmp_path / "export.json"
    path.write_text(text, encoding="utf-8")
    roots = _roots(triage_paths([str(path)]))
    assert [(code, key, exc) for code, key, _, exc in roots] == [("PP802", f"PP{rank}", exception)]


@pytest.mark.parametrize(
    "document",
    [
        {"took": 5, "hits": {"hits": [{"_id": "0", "_source": {"host": "n1", "bytes": 3}}]}},
        {"data": [{"id": "AQ0", "attributes": {"status": "error"}}], "meta": {}},
    ],
)
def test_a_response_whose_records_hold_no_log_line_is_refused(tmp_path, document):
    path = tmp_path / "export.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    report = triage_paths([str(path)])
    assert not [f for f in report.findings if f.code in ("PP801", "PP802")]
    (problem,) = report.problems
    assert "none of whose records holds a log line" in problem.message
