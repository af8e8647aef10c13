"""``ppaux triage`` on the per-line labels launchers and trainers put before what a rank prints,
on ranks whose tracebacks are written into one another line by line, on a thread's traceback
with other lines between its ``Exception in thread`` line and its header, on Ray's colour codes
as a paste keeps them, and on the levels of the loggers whose prefix is taken off. Each log is
written in the shape those programs print (ParlAI's ``rank: {rank:2d} | ``, torch elastic's
``[rankN]:`` before glog's ``E1208 ...]``, Slurm's ``N: ``, torchrun's ``[defaultN]:``, Ray's
``(RayWorkerWrapper pid=N)`` coloured, Python logging's ``- lmdeploy - ERROR - ``); each expected
answer is written by hand."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppaux.triage import triage_paths
from ppaux.triage.envelopes import peel_envelope
from ppaux_cli.app import app

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "real"
ROOTS = ("PP801", "PP802", "PP809")

#: Rank 0 runs out of memory; rank 1's all-reduce then fails (what followed).
_OOM = [
    "Traceback (most recent call last):",
    '  File "/srv/app/train.py", line 40, in <module>',
    "    main()",
    '  File "/srv/app/train.py", line 30, in main',
    "    loss = model(x)",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total "
    "capacity of 79.10 GiB",
]
_PEER = [
    "Traceback (most recent call last):",
    '  File "/srv/app/train.py", line 40, in <module>',
    "    main()",
    '  File "/srv/app/train.py", line 33, in main',
    "    dist.all_reduce(t)",
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
    "ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error, NCCL "
    "version 2.20.5",
]


def _findings(text: str) -> list[tuple[str, str | None, dict[str, object]]]:
    report = triage_paths(["x.log"], {"x.log": io.BytesIO(text.encode())})
    assert not report.problems
    return [(f.code, f.key, dict(f.extra or {})) for f in report.findings]


def _roots(text: str) -> list[tuple[str, str | None, dict[str, object]]]:
    return [f for f in _findings(text) if f[0] in ROOTS]


def _cli(log: Path) -> tuple[int, dict[str, object]]:
    result = CliRunner().invoke(app, ["triage", "--format", "json", str(log)])
    return result.exit_code, json.loads(result.output)


# ParlAI's rank label -------------------------------------------------------------------------

_PARLAI = (
    "rank:  0 | 12:00:01 | Starting training\n"
    "rank:  3 | 12:00:05 | Traceback (most recent call last):\n"
    'rank:  3 |   File "/srv/sglang/python/sglang/srt/managers/scheduler.py", line 3076, in '
    "run_scheduler_process\n"
    "rank:  3 |     scheduler.event_loop_pp()\n"
    "rank:  3 | torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    "rank:  1 | 12:00:06 | RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] "
    "Connection closed by peer [10.0.0.3]:21034\n"
)


def test_a_trainer_s_rank_label_names_the_rank_and_never_is_the_exception(tmp_path):
    log = tmp_path / "parlai.log"
    log.write_text(_PARLAI)
    code, document = _cli(log)
    assert code == 1
    findings = document["findings"]
    assert isinstance(findings, list)
    (root,) = [f for f in findings if f["code"] in ROOTS]
    assert root["key"] == "rank 3"
    assert root["extra"]["exception"] == "torch.OutOfMemoryError"
    assert root["extra"]["kind"] == "memory"
    assert [f["key"] for f in findings if f["code"] == "PP803"] == ["rank 1"]


@settings(max_examples=40, deadline=None)
@given(
    lead=st.sampled_from(["", "`", "  ", "> ", ">> ", "* ", "- ", "\t", "x", "\x1b[2m", "12 "]),
    rank=st.integers(min_value=0, max_value=99999),
    pad=st.integers(min_value=0, max_value=3),
)
def test_a_rank_label_is_read_behind_any_few_characters_a_paste_put_before_it(lead, rank, pad):
    label = f"rank:{' ' * (1 + pad)}{rank:2d} | "
    text = "".join(f"{lead}{label}{line}\n" for line in _OOM)
    roots = _roots(text)
    assert [(code, key) for code, key, _ in roots] == [("PP802", f"rank {rank}")]
    assert roots[0][2]["exception"] == "torch.OutOfMemoryError"


# torch elastic's rank tag before glog's level ------------------------------------------------

_ELASTIC = (
    "[rank0]:W1208 12:00:00.123000 1234 torch/distributed/run.py:793] Setting OMP_NUM_THREADS "
    "environment variable for each process to be 1\n"
    "[rank3]:W1208 12:00:01.000000 1237 sglang/srt/model_loader/loader.py:120] RuntimeError: "
    "retrying the download of model-00001-of-00004.safetensors\n"
    "[rank2]:E1208 12:00:03.456000 1236 sglang/srt/managers/scheduler.py:2240] ValueError: "
    "shape mismatch: value tensor of shape [4, 4096] cannot be broadcast to indexing result "
    "of shape [4, 2048]\n"
    "[rank1]:E1208 12:00:05.000000 1235 torch/distributed/distributed_c10d.py:1200] "
    "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by "
    "peer [10.0.0.3]:21034\n"
)


def test_glog_s_level_behind_the_rank_tag_is_read():
    findings = _findings(_ELASTIC)
    roots = [f for f in findings if f[0] in ROOTS]
    assert [(code, key) for code, key, _ in roots] == [("PP802", "rank 2")]
    assert roots[0][2]["exception"] == "ValueError"
    assert roots[0][2]["kind"] == "shape-kernel"
    # rank 1's gloo error followed; rank 3's WARNING record is no failure
    assert [key for code, key, _ in findings if code == "PP803"] == ["rank 1"]
    assert "rank 3" not in [key for _, key, _ in findings]


@settings(max_examples=30, deadline=None)
@given(rank=st.integers(min_value=0, max_value=4095), severe=st.sampled_from("EF"))
def test_an_error_record_behind_any_rank_tag_is_that_rank_s_failure(rank, severe):
    text = (
        f"[rank{rank}]:{severe}1208 12:00:03.456000 77 sglang/srt/managers/scheduler.py:2240] "
        "KeyError: 'hidden_states'\n"
    )
    (root,) = _roots(text)
    assert root[:2] == ("PP802", f"rank {rank}")
    assert root[2]["exception"] == "KeyError"


# ranks' tracebacks written into one another ------------------------------------------------

_LABELS = {
    "torch": ("[rank0]: ", "[rank1]: ", "rank 0", "rank 1"),
    "parlai": ("rank:  0 | ", "rank:  1 | ", "rank 0", "rank 1"),
    "slurm": ("0: ", "1: ", "task 0", "task 1"),
    "torchrun": ("[default0]:", "[default1]:", "local rank 0", "local rank 1"),
}


@pytest.mark.parametrize("form", sorted(_LABELS))
@pytest.mark.parametrize("first", ["oom", "peer"])
def test_interleaved_tracebacks_are_each_their_rank_s(form, first):
    oom_label, peer_label, oom_rank, peer_rank = _LABELS[form]
    lines = []
    for oom, peer in zip(_OOM, _PEER, strict=True):
        pair = [oom_label + oom, peer_label + peer]
        lines += pair if first == "oom" else pair[::-1]
    findings = _findings("\n".join(lines) + "\n")
    roots = [f for f in findings if f[0] in ROOTS]
    assert [(code, key) for code, key, _ in roots] == [("PP802", oom_rank)]
    assert roots[0][2]["exception"] == "torch.OutOfMemoryError"
    assert [key for code, key, _ in findings if code == "PP803"] == [peer_rank]


# a thread's traceback with other lines before its header -----------------------------------

_THREAD = (REAL / "written-sglang-overlap-thread-then-scheduler-ima.log").read_text()
_BETWEEN = [
    "[2025-03-01 10:00:00 TP0] Decode batch. #running-req: 12, #token: 5121, token usage: 0.04, "
    "gen throughput (token/s): 811.02, #queue-req: 0",
    'INFO:     10.0.0.5:51234 - "POST /generate HTTP/1.1" 200 OK',
    "[2025-03-01 10:00:00 TP0] Prefill batch. #new-seq: 1, #new-token: 12, #cached-token: 0",
]


@pytest.mark.parametrize("count", [1, 2, 3])
def test_a_thread_s_traceback_is_its_process_s_with_lines_between_its_name_and_header(count):
    header = "Exception in thread Thread-4 (forward_thread_func):\n"
    assert header in _THREAD
    text = _THREAD.replace(header, header + "\n".join(_BETWEEN[:count]) + "\n", 1)
    findings = _findings(text)
    assert [code for code, _, _ in findings if code in ("PP802", "PP803")] == ["PP802"]
    root = next(extra for code, _, extra in findings if code == "PP802")
    assert [r["ranks"] for r in root["records"]] == ["TP0", "TP0"]  # type: ignore[attr-defined]


def test_a_thread_named_far_above_a_traceback_names_none():
    header = "Exception in thread Thread-4 (forward_thread_func):\n"
    filler = "\n".join(_BETWEEN[:1] * 12)
    text = _THREAD.replace(header, header + filler + "\n", 1)
    codes = [code for code, _, _ in _findings(text)]
    assert "PP803" in codes or codes.count("PP802") == 2  # two failures, as without the name


# Ray's colour codes --------------------------------------------------------------------------

_RAY_LINES = [
    "Traceback (most recent call last):",
    '  File "/srv/vllm/worker/worker_base.py", line 40, in execute_method',
    "    return executor(*args, **kwargs)",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
]


@pytest.mark.parametrize(
    ("opened", "closed"),
    [("\x1b[36m", "\x1b[0m"), ("ESC[36m", "ESC[0m"), ("[36m", "[0m"), ("^[[36m", "^[[0m")],
)
@pytest.mark.parametrize("service", ["", "llm-inference-2-1  | "])
def test_ray_s_tag_is_read_with_its_colours_as_a_paste_keeps_them(opened, closed, service):
    tag = f"{opened}(RayWorkerWrapper pid=14390){closed} "
    findings = _findings("".join(f"{service}{tag}{line}\n" for line in _RAY_LINES))
    roots = [f for f in findings if f[0] in ROOTS]
    assert [(code, key) for code, key, _ in roots] == [("PP802", "RayWorkerWrapper pid=14390")]
    message = str(roots[0][2]["message"])
    assert message.startswith("CUDA error: an illegal memory access")
    assert "[0m" not in message and "36m" not in message


@settings(max_examples=40, deadline=None)
@given(
    escape=st.sampled_from(["\x1b[", "ESC[", "[", "^[["]),
    colour=st.sampled_from(["36m", "33m", "1;36m", "0;32m"]),
    reset=st.sampled_from(["0m", "m"]),
    pid=st.integers(min_value=1, max_value=4_194_304),
    actor=st.sampled_from(["RayWorkerWrapper", "WorkerDict", "RayWorkerWrapper ip=10.0.0.2"]),
)
def test_any_colour_of_ray_s_tag_names_the_worker(escape, colour, reset, pid, actor):
    who = f"{actor.split(' ')[0]} pid={pid}" + (", ip=10.0.0.2" if " " in actor else "")
    tag = f"{escape}{colour}({who}){escape}{reset} "
    roots = _roots("".join(f"{tag}{line}\n" for line in _RAY_LINES))
    assert [(code, key) for code, key, _ in roots] == [("PP802", who)]


def test_a_bracketed_number_and_m_far_from_ray_s_tag_is_the_log_s_own_text():
    text = "ValueError: bad slice [36m(x)] of the tensor\n"
    (root,) = _roots(text)
    assert "[36m(x)]" in str(root[2]["message"])


def test_the_compose_log_with_ray_s_spelled_out_colours_names_the_ray_worker(tmp_path):
    log = REAL / "vllm-5537-compose-esc-rayworker-raylet-died-cut.log"
    (root,) = _roots(log.read_text())
    assert root[:2] == ("PP802", "RayWorkerWrapper pid=14390")


# the levels of the loggers whose prefix is taken off ---------------------------------------


@pytest.mark.parametrize(
    ("level", "severe", "mild"),
    [("ERROR", True, False), ("CRITICAL", True, False), ("INFO", False, True)],
)
def test_python_logging_s_level_is_kept(level, severe, mild):
    peeled = peel_envelope(f"2024-07-17 13:52:34,618 - lmdeploy - {level} - Rank[2] failed.")
    assert peeled.lines == ["Rank[2] failed."]
    assert (peeled.severe, peeled.mild) == (severe, mild)


@pytest.mark.parametrize(("level", "rank"), [("ERROR", "rank 2"), ("INFO", None)])
def test_only_an_error_record_names_the_rank_of_the_traceback_below_it(level, rank):
    log = (REAL / "lmdeploy-2055-rank2-failed-broadcast-cut.log").read_text()
    said = "- lmdeploy - ERROR - Rank[2] failed."
    assert said in log
    (root,) = _roots(log.replace(said, f"- lmdeploy - {level} - Rank[2] failed."))
    assert root[1] == rank


@pytest.mark.parametrize("place", ["", "engine.py:1122 - "])
def test_lmdeploy_s_logger_with_or_without_its_place_before_an_exception_line(place):
    text = (
        "2025-03-01 12:00:00,100 - lmdeploy - INFO - async_engine.py:260 - input backend=pytorch\n"
        f"2025-03-01 12:00:00,123 - lmdeploy - ERROR - {place}RuntimeError: CUDA out of memory. "
        "Tried to allocate 2.00 GiB\n"
    )
    (root,) = _roots(text)
    assert root[0] == "PP802"
    assert root[2]["exception"] == "RuntimeError" and root[2]["kind"] == "memory"
    assert str(root[2]["message"]).startswith("CUDA out of memory")
