"""``ppaux triage`` on logs real users pasted into public issues (fixtures/logs/real/, sources in
its README), as they were pasted and wrapped in every envelope people copy logs from
(fixtures/logs/real/wrapped/, written by make_wrapped.py).

Each log's expected root is written here by hand from reading the log, never computed by
triage's code.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ppaux.triage import triage_paths

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "real"

#: log -> (code, ranks the root names or None, exception or None, kind or no_root cause)
EXPECTED = {
    # Frames of pynccl's ncclCommInitRank, then the RuntimeError: the only failure; its header
    # is not in the paste.
    "sglang-4289-nccl-init": ("PP802", None, "RuntimeError", "communication-init"),
    # One traceback and five one-line records, every one gloo's read error.
    "sglang-27944-gloo-every-rank": ("PP809", None, None, "network-or-other-node"),
    # The prefix lost its first character ('026-01-08 ... TP2]'); the paste ends in the frames.
    "sglang-16824-cut-prefix": ("PP802", "TP2", None, "unknown"),
    "sglang-26375-pp-cut": ("PP802", "PP1 ATTN_CP3 TP3", None, "unknown"),
    "sglang-3226-gloo-init": ("PP802", "TP10", None, "unknown"),
    # The paste is indented by two spaces; an IndexError line (the end of a traceback whose
    # frames the paste lost) comes before TP1 PP0's cut traceback.
    "areal-232-indented": ("PP802", None, "IndexError", "other"),
    # vLLM's logger before every line of a traceback whose header and exception line the
    # paste lost: a cut log, said so.
    "vllm-14093-ray-pp": ("PP802", None, None, "unknown"),
}

FORMS = sorted(p.name for p in (REAL / "wrapped").glob("*.log"))


def _check(path: Path, expected: tuple[str | None, ...]) -> None:
    code, ranks, exception, kind = expected
    report = triage_paths([str(path)])
    assert not report.problems
    roots = [f for f in report.findings if f.code in ("PP801", "PP802", "PP809")]
    assert [f.code for f in roots] == [code]
    root = roots[0]
    if code == "PP809":
        assert root.extra["no_root"] == kind
        assert root.message.startswith("no root in this log: the cause is on the network")
        return
    assert root.extra["root"] is True
    assert root.extra["kind"] == kind
    assert root.extra["exception"] == exception
    if ranks is not None:
        assert root.extra["ranks"][0].endswith(ranks)
    for found in report.findings:
        # never a frame read as the exception
        assert not str((found.extra or {}).get("message", "")).lstrip().startswith('File "')


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_each_real_log_as_pasted(stem):
    _check(REAL / f"{stem}.log", EXPECTED[stem])


@pytest.mark.parametrize("name", FORMS)
def test_each_real_log_in_every_envelope(name):
    _check(REAL / "wrapped" / name, EXPECTED[name.split(".", 1)[0]])


def test_every_real_log_has_every_envelope():
    stems = {n.split(".", 1)[0] for n in FORMS}
    assert stems == set(EXPECTED)
    assert len(FORMS) == len(EXPECTED) * 20


def test_one_line_records_are_their_ranks_failures(tmp_path):
    log = tmp_path / "oneline.log"
    log.write_text(
        "[2026-06-17 06:48:30 PP1 TP0] ValueError: bad weight shape for layer 40\n"
        "[2026-06-17 06:48:31 PP0 TP0] RuntimeError: Connection closed by peer [10.0.0.2]:1234\n"
    )
    report = triage_paths([str(log)])
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert root.key == "PP1 TP0"
    assert root.extra["exception"] == "ValueError"
    (after,) = [f for f in report.findings if f.code == "PP803"]
    assert after.key == "PP0 TP0"


def test_stripped_frames_are_never_the_exception(tmp_path):
    log = tmp_path / "stripped.log"
    log.write_text(
        "[2026-06-17 06:48:30 PP0 TP0] Scheduler hit an exception: Traceback (most recent call "
        "last):\n"
        'File "/srv/sglang/python/sglang/srt/managers/scheduler.py", line 3076, in '
        "run_scheduler_process\n"
        "scheduler.event_loop_pp()\n"
        'File "/srv/sglang/python/sglang/srt/managers/scheduler.py", line 1200, in '
        "event_loop_pp\n"
        "result = self.run_batch(batch)\n"
        "^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    )
    report = triage_paths([str(log)])
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert root.extra["exception"] == "torch.OutOfMemoryError"
    assert root.extra["kind"] == "memory"
    assert "line 1200" not in root.message


def test_a_communicator_init_failure_after_another_failure_is_collateral(tmp_path):
    log = tmp_path / "init-after.log"
    log.write_text(
        "[2026-06-17 06:48:30 PP1 TP0] KeyError: 'sampling_mask_token_ids'\n"
        "[2026-06-17 06:48:31 PP0 TP0] RuntimeError: NCCL error: ncclCommInitRank failed: "
        "remote process exited or there was a network error\n"
    )
    report = triage_paths([str(log)])
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert root.key == "PP1 TP0"
    assert [f.key for f in report.findings if f.code == "PP803"] == ["PP0 TP0"]


def test_a_healthy_log_with_error_words_holds_no_failure(tmp_path):
    log = tmp_path / "healthy.log"
    log.write_text(
        "[2026-06-17 06:48:30 TP0] Setup Custom allreduce failed with CUDART error: peer "
        "access is not supported between these two devices.\n"
        "[2026-06-17 06:48:31 TP0] Decode batch. #running-req: 1, #token: 12, gen throughput "
        "(token/s): 9.5\n"
    )
    report = triage_paths([str(log)])
    assert report.findings == []


def test_stripped_statements_on_several_lines_and_wrapped_types(tmp_path):
    log = tmp_path / "ray.log"
    log.write_text(
        "[2026-06-17 06:48:30 PP0 TP0] Scheduler hit an exception: Traceback (most recent call "
        "last):\n"
        'File "/srv/sglang/python/sglang/srt/managers/scheduler.py", line 10, in run\n'
        "result = self.call(\n"
        "batch, extra)\n"
        'File "/srv/sglang/python/sglang/srt/managers/scheduler.py", line 20, in call\n'
        "raise\n"
        "ray.exceptions.RayTaskError(OutOfMemoryError): ray::main_task() (pid=1, ip=x)\n"
    )
    report = triage_paths([str(log)])
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert root.extra["exception"] == "ray.exceptions.RayTaskError(OutOfMemoryError)"
    assert root.extra["kind"] == "memory"


def test_warnings_and_the_server_process_s_request_errors_are_no_failures(tmp_path):
    log = tmp_path / "requests.log"
    log.write_text(
        "[2026-06-17 06:48:30 TP0] Load weight end. type=LlamaForCausalLM\n"
        "FutureWarning: `torch.cuda.amp.autocast(args...)` is deprecated.\n"
        "[2026-06-17 06:48:31] ValueError: The input (9000 tokens) is longer than the model's "
        "context length (8192 tokens).\n"
    )
    report = triage_paths([str(log)])
    assert report.findings == []
