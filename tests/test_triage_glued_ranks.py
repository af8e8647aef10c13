"""torch's ``[rankN]:`` tag with no space after it (a paste that lost it): the line is that
rank's, as ``explain`` reads it too; torch's C++ lines (``[rankN]:[E... ]``) stay C++."""

from __future__ import annotations

from pathlib import Path

from helpers import cli

from ppaux.triage import triage_paths


def _roots(tmp_path: Path, text: str) -> list[tuple[str, str, str]]:
    path = tmp_path / "x.log"
    path.write_text(text, encoding="utf-8")
    return [
        (f.code, f.key, str((f.extra or {}).get("kind")))
        for f in triage_paths([str(path)]).findings
        if f.code in ("PP801", "PP802", "PP809")
    ]


def test_a_one_line_record_glued_to_its_rank_is_that_ranks_failure(tmp_path):
    text = "[rank1]:RuntimeError: CUDA error: an illegal memory access was encountered\n"
    assert _roots(tmp_path, text) == [("PP802", "rank 1", "shape-kernel")]
    explained = cli("explain", text.strip())
    assert "a shape or kernel failure" in explained.output.replace("\n", " ")


def test_a_traceback_glued_to_its_rank_is_that_ranks(tmp_path):
    text = (
        "[rank3]:Traceback (most recent call last):\n"
        '[rank3]:  File "/srv/train.py", line 3, in step\n'
        "[rank3]:    schedule.step()\n"
        "[rank3]:KeyError: 6\n"
    )
    assert _roots(tmp_path, text) == [("PP802", "rank 3", "other")]
