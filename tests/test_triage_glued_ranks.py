"""torch's ``[rankN]:`` tag with no space after it (a paste that lost it): the line is that
rank's, as ``explain`` reads it too; torch's C++ lines (``[rankN]:[E... ]``) stay C++."""

from __future__ import annotations

from helpers import cli, triage_roots

from ppaux.triage import triage_paths


def test_a_one_line_record_glued_to_its_rank_is_that_ranks_failure(tmp_path):
    text = "[rank1]:RuntimeError: CUDA error: an illegal memory access was encountered\n"
    assert triage_roots(tmp_path, text) == [("PP802", "rank 1", "shape-kernel")]
    explained = cli("explain", text.strip())
    assert "a shape or kernel failure" in explained.output.replace("\n", " ")


def test_a_traceback_glued_to_its_rank_is_that_ranks(tmp_path):
    text = (
        "[rank3]:Traceback (most recent call last):\n"
        '[rank3]:  File "/srv/train.py", line 3, in step\n'
        "[rank3]:    schedule.step()\n"
        "[rank3]:KeyError: 6\n"
    )
    assert triage_roots(tmp_path, text) == [("PP802", "rank 3", "other")]


def test_a_watchdog_record_run_into_another_processs_line_keeps_its_rank(tmp_path):
    # a fault handler's module list, written with no line end, then rank 5's watchdog record
    modules = ", ".join(f"pkg{n}._mod" for n in range(40))
    text = (
        f"Extension modules: {modules}, PIL._imaging[rank5]:[E226 11:16:37.121617583 "
        "ProcessGroupNCCL.cpp:616] [Rank 5] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=5653, OpType=ALLREDUCE, NumelIn=58720256, NumelOut=58720256, "
        "Timeout(ms)=600000) ran for 600028 milliseconds before timing out.\n"
    )
    path = tmp_path / "x.log"
    path.write_text(text, encoding="utf-8")
    (root,) = [f for f in triage_paths([str(path)]).findings if f.code == "PP809"]
    assert root.extra["no_root"] == "network-or-other-node"
    assert "1 communication failure (rank 5 at " in " ".join(root.message.split())


def test_ranks_tracebacks_glued_line_by_line_start_on_their_own_lines(tmp_path):
    # each rank's header is on the file's first line, glued after the other rank's
    log = tmp_path / "glued.log"
    log.write_text(
        "[rank0]: Traceback (most recent call last):[rank1]: Traceback (most recent call last):\n"
        '[rank0]:   File "/app/t.py", line 3, in <module>[rank1]:   File "/app/t.py", line 3, '
        "in <module>\n"
        "[rank0]:     f()[rank1]:     f()\n"
        "[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered"
        "[rank1]: ValueError: bad shape 3\n"
    )
    report = triage_paths([str(log)])
    roots = [(f.key, f.extra["exception"], f.extra["line"]) for f in report.findings]
    assert sorted(roots) == [("rank 0", "RuntimeError", 1), ("rank 1", "ValueError", 1)]
