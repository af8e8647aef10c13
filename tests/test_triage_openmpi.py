"""Open MPI's error block is that rank's failure (its set-up's where the call is MPI_Init);
and vLLM's words that a worker died are its engine's record only where they begin one."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths

_TAG = "[1,{rank}]<stderr>:"


def _report(tmp_path, text):
    log = tmp_path / "x.log"
    log.write_text(text)
    report = triage_paths([str(log)])
    assert not report.problems
    return report


def _root(report):
    (root,) = [f for f in report.findings if f.code in ("PP801", "PP802", "PP809")]
    return root


def _block(rank, lines):
    return "".join(_TAG.format(rank=rank) + line + "\n" for line in lines)


def test_open_mpis_block_for_mpi_init_thread_is_a_set_up_root(tmp_path):
    text = _block(
        0,
        [
            "*** An error occurred in MPI_Init_thread",
            "*** on a NULL communicator",
            "*** MPI_ERRORS_ARE_FATAL (processes in this communicator will now abort,",
            "***    and potentially your MPI job)",
        ],
    )
    text += _block(1, ["RuntimeError: [TensorRT-LLM][ERROR] MPI error: MPI_ERR_OTHER: known"])
    report = _report(tmp_path, text)
    root = _root(report)
    assert root.code == "PP802"
    assert root.extra["ranks"] == ["rank 0"]
    assert root.extra["kind"] == "communication-init"
    assert root.extra["exception"] == "Open MPI error"
    assert root.extra["message"] == "An error occurred in MPI_Init_thread"
    assert [f.code for f in report.findings if f.code == "PP803"] == ["PP803"]


def test_open_mpis_block_for_a_collective_says_its_error_and_is_in_flight(tmp_path):
    text = _block(
        2,
        [
            "*** An error occurred in MPI_Allreduce",
            "*** reported by process [3189309441,2]",
            "*** on communicator MPI_COMM_WORLD",
            "*** MPI_ERR_TRUNCATE: message truncated",
            "*** MPI_ERRORS_ARE_FATAL (processes in this communicator will now abort,",
        ],
    )
    report = _report(tmp_path, text)
    root = _root(report)
    assert root.code == "PP809"
    assert root.extra["no_root"] == "network-or-other-node"
    assert "rank 2" in root.message


def test_the_block_s_words_inside_a_sentence_are_no_failure(tmp_path):
    text = (
        "[2026-12-03 14:56:00 TP0] Load weight end. type=LlamaForCausalLM\n"
        "[2026-12-03 14:56:01 TP0] Prefill batch. text: *** An error occurred in MPI_Init_thread\n"
    )
    report = _report(tmp_path, text)
    assert [f for f in report.findings if f.code.startswith("PP80")] == []


def test_an_info_line_whose_text_says_a_worker_died_is_no_death(tmp_path):
    text = (
        "[2026-12-03 14:56:00 TP0] Load weight end. type=LlamaForCausalLM\n"
        "[2026-12-03 14:56:02 TP0] Prefill batch. text: Worker proc VllmWorker-0 died "
        "unexpectedly (exit code: -11) means what?\n"
    )
    report = _report(tmp_path, text)
    assert [f for f in report.findings if f.code.startswith("PP80")] == []


def test_vllms_engine_record_of_a_worker_that_died_is_a_death(tmp_path):
    text = (
        "(EngineCore pid=100) ERROR 07-15 21:01:01 [multiproc_executor.py:284] Worker proc "
        "VllmWorker-3 died unexpectedly (exit code: -9), shutting down executor.\n"
    )
    root = _root(_report(tmp_path, text))
    assert root.code == "PP809"
    assert root.message.startswith("no root in this log: VllmWorker-3 died: killed by SIGKILL")


def test_open_mpis_timestamped_tag_names_its_rank_and_keeps_its_time(tmp_path):
    # mpirun --timestamp-output --tag-output: ctime's time (the day padded to two places), no
    # zone, then the tag; the rank is the tag's, the time the host's wall clock
    stamp = "Fri Jan  3 11:55:50 2025[1,1]<stderr>:"
    lines = [
        "Traceback (most recent call last):",
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 489, in '
        "event_loop_overlap",
        "    self.process_batch_result(batch, result)",
        "ImportError: undefined symbol: cuModuleGetFunction",
    ]
    report = _report(tmp_path, "".join(stamp + line + "\n" for line in lines))
    root = _root(report)
    assert root.code == "PP802"
    assert root.extra["ranks"] == ["rank 1"]
    assert root.extra["exception"] == "ImportError"
    (incident,) = report.data["incidents"]
    assert (incident["time"], incident["time_zone"]) == ("2025-01-03 11:55:50", None)


def test_a_cut_fragment_behind_the_timestamped_tag_is_rank_1_s_failure(tmp_path):
    # sglang #3065's paste: frames only, behind the timestamped tag; without the tag's reading
    # the log held no failure
    real = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "real"
    report = triage_paths([str(real / "sglang-3065-mpirun-stderr-prefix-cut.log")])
    root = _root(report)
    assert (root.code, root.key, root.extra["exception"]) == ("PP802", "rank 1", None)
    assert root.message.startswith("rank 1 failed first at 2025-01-23 11:55:50")


@settings(max_examples=200, deadline=None)
@given(
    moment=st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9999, 12, 31)),
    rank=st.integers(0, 10**9 - 1),
    rest=st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=40),
)
def test_any_ctime_before_the_tag_is_read_as_its_wall_clock(moment, rank, rest):
    from ppaux.triage.forwarders import mpi_time

    tag = f"[1,{rank}]<stderr>:{rest}"
    line = moment.strftime("%a %b ") + f"{moment.day:2d}" + moment.strftime(" %H:%M:%S ")
    line += f"{moment.year:04d}{tag}"
    expected = f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d} "
    expected += f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}"
    assert mpi_time(line) == (expected, tag)
    assert mpi_time(rest) is None or rest[:3] in ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
