"""k9s' pod-only prefix (``<pod> ``) before exception groups: each pod's traceback is its own
process whether the groups come one after another or their lines interleave, and the bars of
the groups' margins never make the log docker compose's."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths

_GLOO = (
    "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by "
    "peer [127.0.0.1]:13718"
)
_AUX = "RuntimeError: received a non-tensor auxiliary PP output"


def _group(pp: int, second: str) -> list[str]:
    """A pod's lines: sglang's header, then a group of a gloo error and ``second``."""
    sub = [
        "  | Traceback (most recent call last):",
        '  |   File "/srv/app/tasks.py", line 8, in raised',
        "  |     try: raise exc",
    ]
    lines = [
        f"[2026-12-01 10:00:0{1 + pp} PP{pp} TP0] Scheduler hit an exception:   + Exception Group "
        "Traceback (most recent call last):",
        "| ExceptionGroup: g (2 sub-exceptions)",
        "+-+---------------- 1 ----------------",
        *sub,
        "  | " + _GLOO,
        "  +---------------- 2 ----------------",
        *sub,
        "  | " + second,
        "  +------------------------------------",
    ]
    return [f"sglang-pp-{pp} {line}" for line in lines]


def _report(tmp_path, lines):
    log = tmp_path / "x.log"
    log.write_text("".join(line + "\n" for line in lines))
    report = triage_paths([str(log)])
    assert not report.problems
    return report


@settings(max_examples=25, deadline=None)
@given(order=st.permutations([0] * 13 + [1] * 13))
def test_two_pods_groups_are_two_processes_and_the_aux_one_is_the_root(tmp_path_factory, order):
    # any merge of the two pods' lines that keeps each pod's own order
    pods = {1: iter(_group(1, _GLOO)), 0: iter(_group(0, _AUX))}
    lines = [next(pods[pp]) for pp in order]
    tmp_path = tmp_path_factory.mktemp("k9s")
    report = _report(tmp_path, lines)
    codes = [f.code for f in report.findings if f.code.startswith("PP80")]
    assert sorted(codes) == ["PP801", "PP803"]
    (root,) = [f for f in report.findings if f.code == "PP801"]
    assert root.extra["ranks"] == ["PP0 TP0"]
    (other,) = [f for f in report.findings if f.code == "PP803"]
    assert other.message.startswith("PP1 TP0 failed 1.0 s after the root")
    assert all("cut off" not in f.message for f in report.findings)
    data = json.loads(json.dumps(report.data))
    assert [log["launcher"] for log in data["logs"]] == ["pod"]
    argvs = [s["argv"] for s in data["steps"] if s["argv"]]
    assert ["export", "PPAUX_CAPTURE_DIR=/var/tmp/ppaux"] in argvs


def test_docker_compose_s_bars_in_one_column_stay_compose(tmp_path):
    lines = [
        "sglang-1  | [2026-12-01 10:00:01 PP0 TP0] Scheduler hit an exception: Traceback (most "
        "recent call last):",
        'sglang-1  |   File "/srv/app/tasks.py", line 8, in raised',
        "sglang-1  |     try: raise exc",
        "sglang-1  | " + _AUX,
    ]
    report = _report(tmp_path, lines)
    data = json.loads(json.dumps(report.data))
    assert [log["launcher"] for log in data["logs"]] == ["compose"]
    (root,) = [f for f in report.findings if f.code == "PP801"]
    assert root.extra["ranks"] == ["PP0 TP0"]
