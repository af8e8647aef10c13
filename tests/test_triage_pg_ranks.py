"""torch's NCCL watchdog record whose tag names its process group before its rank
(``[PG ID 0 PG GUID 0(default_pg) Rank 3]``, torch 2.4 and later, where no ``[rankN]:`` prefix
stands before it) names that rank, as the older ``[Rank 3]`` tag does. Expected ranks written
by hand from the record."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths

_RECORD = (
    "[E1017 06:24:44.903881913 ProcessGroupNCCL.cpp:632] {tag} Watchdog caught collective "
    "operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=98, NumelOut=98, "
    "Timeout(ms)=1800000) ran for 1800086 milliseconds before timing out.\n"
)


def _ranks(tmp_path, text: str) -> list[str]:
    log = tmp_path / "watchdog.log"
    log.write_text(text)
    report = triage_paths([str(log)])
    assert not report.problems
    (found,) = [f for f in report.findings if f.code == "PP809"]
    assert found.extra is not None
    return list(found.extra["ranks"])


def test_the_process_group_s_tag_names_the_rank(tmp_path):
    tag = "[PG ID 0 PG GUID 0(default_pg) Rank 3]"
    assert _ranks(tmp_path, _RECORD.format(tag=tag)) == ["rank 3"]
    assert _ranks(tmp_path, _RECORD.format(tag="[Rank 3]")) == ["rank 3"]


@settings(max_examples=30, deadline=None)
@given(
    rank=st.integers(0, 99_999),
    group=st.from_regex(r"ID [0-9]{1,3} PG GUID [0-9]{1,3}\([a-z_]{1,12}\) ", fullmatch=True),
)
def test_any_process_group_s_tag_names_its_rank(tmp_path_factory, rank, group):
    tmp_path = tmp_path_factory.mktemp("pg")
    text = _RECORD.format(tag=f"[PG {group}Rank {rank}]")
    assert _ranks(tmp_path, text) == [f"rank {rank}"]
