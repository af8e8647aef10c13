"""Watchdog timeouts in torch's older record (``[E ProcessGroupNCCL.cpp:737] [Rank N] ...``,
no ``[rankN]:`` tag, no world size anywhere in the log): PP809 lists the ranks the records name,
in rank order, and says that the world size is unknown, so the ranks that did not report
cannot be named. Expected words are written by hand."""

from __future__ import annotations

import io

from ppaux.triage import triage_paths


def _record(rank: int) -> str:
    return (
        f"[E ProcessGroupNCCL.cpp:737] [Rank {rank}] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=469508, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for "
        "1802212 milliseconds before timing out.\n"
    )


def _pp809(text: str):
    report = triage_paths(["old.log"], {"old.log": io.BytesIO(text.encode())})
    (found,) = [f for f in report.findings if f.code == "PP809"]
    return found


def test_the_ranks_seen_are_listed_and_the_world_size_said_unknown():
    found = _pp809("".join(_record(r) for r in (1, 3, 2, 10, 7)))
    assert found.message.endswith(
        "; the ranks its records name: rank 1, rank 2, rank 3, rank 7, rank 10; the log does "
        "not say the world size, so which ranks did not report (the one that failed first "
        "may be among them) cannot be told"
    )
    assert found.extra["no_root"] == "network-or-other-node"


def test_one_rank_is_named_once():
    found = _pp809(_record(4))
    assert "the ranks its records name" not in found.message
    assert "(rank 4 at old.log:1)" in found.message
