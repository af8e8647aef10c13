"""The jq command suggested for a JSON document too large to read whole writes its records one
per line, as triage reads them."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from ppaux.limits import Limits
from ppaux.triage import triage_paths
from ppaux.triage.documents import per_line

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
AUX = LOGS / "sglang-aux-list.log"
BASE = 1764773767_000000000


def _roots(report):
    return [
        (f.code, f.key, f.extra.get("exception"))
        for f in report.findings
        if f.code in ("PP801", "PP802", "PP809")
    ]


def _documents() -> dict[str, str]:
    lines = AUX.read_text(encoding="utf-8").splitlines()
    values = [[str(BASE + n * 1000), line] for n, line in enumerate(lines)]
    loki = {
        "status": "success",
        "data": {
            "resultType": "streams",
            "result": [{"stream": {"pod": "sglang-pp-0", "container": "c"}, "values": values}],
        },
    }
    events = [
        {"timestamp": BASE // 1_000_000 + n, "message": line, "logStreamName": "s/pp0"}
        for n, line in enumerate(lines)
    ]
    array = [
        {"textPayload": line, "timestamp": f"2026-12-03T14:56:07.{n:06d}Z"}
        for n, line in enumerate(lines)
    ]
    return {
        "loki": json.dumps(loki),
        "loki-sorted": json.dumps(loki, sort_keys=True),
        "loki-pretty": json.dumps(loki, indent=2),
        "cloudwatch": json.dumps({"events": events, "nextToken": "t"}),
        "cloudwatch-sorted": json.dumps({"nextToken": "t", "events": events}, sort_keys=True),
        "array": json.dumps(array),
    }


def test_the_filter_suggested_fits_each_document():
    filters = {name: per_line(text.encode()[:4096]) for name, text in _documents().items()}
    loki = ".data.result[] | .stream as $s | .values[] | {ts: .[0], line: .[1], labels: $s}"
    assert filters == {
        "loki": loki,
        "loki-sorted": loki,
        "loki-pretty": loki,
        "cloudwatch": ".events[]",
        "cloudwatch-sorted": ".events[]",
        "array": ".[]",
    }


@pytest.mark.skipif(shutil.which("jq") is None, reason="jq is not installed")
def test_the_suggested_jq_command_gives_lines_with_the_document_s_root(tmp_path):
    expected = _roots(triage_paths([str(AUX)]))
    for name, text in _documents().items():
        path = tmp_path / f"{name}.json"
        path.write_text(text, encoding="utf-8")
        report = triage_paths([str(path)], limits=Limits(max_log_document=1024))
        [problem] = report.problems
        command = problem.message.split("give it one record per line (", 1)[1].split(") (limit")[0]
        argv = shlex.split(command)
        assert argv[:2] == ["jq", "-c"]
        out = subprocess.run([*argv, str(path)], capture_output=True, check=True, timeout=60)
        lines_path = tmp_path / f"{name}.jsonl"
        lines_path.write_bytes(out.stdout)
        assert out.stdout.count(b"\n") >= 40
        assert _roots(triage_paths([str(lines_path)])) == expected, name
