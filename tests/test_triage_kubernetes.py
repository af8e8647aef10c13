"""Kubernetes advice comes from an envelope's labels only, never from a message's text."""

from __future__ import annotations

import json
from pathlib import Path

from ppaux.triage import triage_paths

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
AUX = LOGS / "sglang-aux-list.log"


def _kubectl_steps(path: Path) -> list[list[str]]:
    steps = triage_paths([str(path)]).data["steps"]
    return [s["argv"] for s in steps if (s["argv"] or [""])[0] == "kubectl"]


def test_pod_text_inside_a_message_gives_no_kubernetes_advice(tmp_path):
    lines = AUX.read_text(encoding="utf-8").splitlines()
    said = [
        '[2026-12-03 14:56:05] request meta: {"pod": "evil-pod", "pod_name": "x"}',
        '[2026-12-03 14:56:05] labels pod="evil-pod", namespace="llm", pod',
        '[2026-12-03 14:56:05] {namespace="llm", pod="evil-pod"} said by the server',
    ]
    path = tmp_path / "plain.log"
    path.write_text("\n".join(said + lines) + "\n", encoding="utf-8")
    assert triage_paths([str(path)]).findings  # the root is found
    assert _kubectl_steps(path) == []


def test_a_loki_row_s_labels_and_a_loki_document_s_stream_give_kubernetes_advice(tmp_path):
    lines = AUX.read_text(encoding="utf-8").splitlines()
    rows = [
        f'2026-12-03T14:56:07.{n:06d}Z\t{{namespace="llm", pod="sglang-pp-0", '
        f'container="sglang"}}\t{line}'
        for n, line in enumerate(lines)
    ]
    table = tmp_path / "table.log"
    table.write_text("\n".join(rows) + "\n", encoding="utf-8")
    steps = _kubectl_steps(table)
    assert steps and all("sglang-pp-0" in " ".join(argv) for argv in steps if "logs" in argv)
    values = [[str(1764773767000000000 + n * 1000), line] for n, line in enumerate(lines)]
    stream = {"namespace": "llm", "pod": "sglang-pp-0", "container": "sglang"}
    document = {
        "status": "success",
        "data": {"resultType": "streams", "result": [{"stream": stream, "values": values}]},
    }
    loki = tmp_path / "loki.json"
    loki.write_text(json.dumps(document), encoding="utf-8")
    assert _kubectl_steps(loki)
