"""torch's watchdog record wrapped over three lines (its ``[PG ... Rank N]`` tag, its words, its
work) is one record, read as the one-line record is; its words alone, with no tag on the line
before them, stay prose. Logs written here; expectations by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from ppaux.triage import triage_paths

TAG = "[PG ID 6 ... PIPELINE_MODEL_PARALLEL_GROUP Rank 1]"
WORDS = "Watchdog caught collective operation timeout:"
WORK = "WorkNCCL(SeqNum=1, OpType=COALESCED, Timeout(ms)=1800000)"


def _codes(tmp_path: Path, text: str) -> list[tuple[str, bool]]:
    """Each finding's code, and whether it names the watchdog's record as one communication
    failure at the line its words stand on."""
    log = tmp_path / "train.log"
    log.write_text(text)
    at = next((n for n, s in enumerate(text.splitlines(), 1) if s.startswith(WORDS)), 0)
    said = f"1 communication failure (a process at {log}:{at}) and nothing else"
    return [(f.code, said in f.message) for f in triage_paths([str(log)]).findings]


@pytest.mark.parametrize(
    "text",
    [
        f"{TAG}\n{WORDS}\n{WORK}\n",
        f"  {TAG}  \n{WORDS} \n{WORK}\n",
        f"some output\n{TAG}\n{WORDS}\n{WORK}\nmore output\n",
    ],
)
def test_a_watchdog_record_wrapped_over_three_lines_is_one_record(
    tmp_path: Path, text: str
) -> None:
    assert _codes(tmp_path, text) == [("PP809", True)]


def test_the_same_record_on_one_line_reads_the_same(tmp_path: Path) -> None:
    text = f"{TAG} {WORDS} {WORK}\n"
    log = tmp_path / "train.log"
    log.write_text(text)
    (finding,) = triage_paths([str(log)]).findings
    assert finding.code == "PP809"
    assert f"1 communication failure (a process at {log}:1) and nothing else" in finding.message


@pytest.mark.parametrize(
    "text",
    [
        f"{WORDS}\n{WORK}\n",  # no tag before the words
        f"Notes\n{WORDS}\nthat is what we usually see here.\n",
        f"{TAG} this rank was slow\n{WORDS}\n",  # the line before is no tag alone
        f"{TAG}\nWe saw: {WORDS}\n",  # the words inside a sentence
    ],
)
def test_the_words_without_the_tag_alone_before_them_are_no_record(
    tmp_path: Path, text: str
) -> None:
    assert _codes(tmp_path, text) == []
