"""Logs far apart in time are separate runs: a failure more than an hour from every rank of an
incident did not follow from its root and is not chained to it as collateral ("55987200.0 s
before the root"); it keeps the root its own log gives it. A root's label names each rank and
process once. Expected values are written by hand from reading the logs (fixtures/logs/real/,
sources in its README; expected.json gives each log's own root).
"""

from __future__ import annotations

from pathlib import Path

from ppaux.triage import triage_paths

WRAPPED = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "real" / "wrapped"
#: 2026-06-17: an IndexError line (its frames lost) before TP1 PP0's cut traceback.
AREAL = WRAPPED / "areal-232-indented.loki-logcli.log"
#: 2028-03-26: rank 7's NCCL error, unhandled cuda error.
NCCL = WRAPPED / "nccl-1410-rank7-distbackend-unhandled-cuda-invalid-arg.loki-logcli.log"


def test_two_runs_two_years_apart_keep_each_its_own_root():
    report = triage_paths([str(NCCL), str(AREAL)])
    assert not report.problems
    roots = sorted(
        (Path(f.location.file).name, f.location.line, f.extra.get("exception"))
        for f in report.findings
        if f.code == "PP802"
    )
    assert roots == [
        (AREAL.name, 2, "IndexError"),
        (NCCL.name, 1, "torch.distributed.DistBackendError"),
    ]
    for f in report.findings:
        assert "s before the root" not in f.message, f.message


def test_a_roots_label_names_a_rank_once():
    # the same rank 7 in the envelopes that give it a pod, a service, a Ray actor, a task
    report = triage_paths(sorted(str(p) for p in WRAPPED.glob("nccl-1410-*")))
    for f in report.findings:
        if f.code == "PP802":
            label = f.message.split(" failed first at ")[0]
            parts = label.split(", ")
            assert len(parts) == len(set(parts)), label
