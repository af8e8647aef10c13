"""``ppaux triage`` on logs real users pasted into public issues (fixtures/logs/real/, sources in
its README), as they were pasted and wrapped in every envelope people copy logs from
(fixtures/logs/real/wrapped/, derived: written by make_wrapped.py).

Each log's expected result is written by hand from reading the log, in
fixtures/logs/real/expected.json, never computed by triage's code. Both the library and the
CLI's JSON document are held to it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppaux.triage import triage_paths
from ppaux_cli.app import app

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "real"
_DOCUMENT = json.loads((REAL / "expected.json").read_text())
EXPECTED: dict[str, dict[str, Any]] = _DOCUMENT["logs"]
#: Logs tested as pasted only (not written into wrapped/).
UNWRAPPED: set[str] = set(_DOCUMENT["unwrapped"])
ROOTS = ("PP801", "PP802", "PP809")
#: What the corpus must cover, by hand: every log's stem is in the README's table.
FORMS = sorted(p.name for p in (REAL / "wrapped").glob("*.log"))
WRAPPED = sorted({n.split(".", 1)[0] for n in FORMS})


def _check(findings: list[dict[str, Any]], expected: dict[str, Any], keys: bool = True) -> None:
    """``findings``: code, message, key and extra of each finding, from the library or JSON;
    ``keys``: the log is as pasted, so what follows the root is named as the log names it (an
    envelope's launcher gives a process without ranks its own name)."""
    code = expected["code"]
    roots = [f for f in findings if f["code"] in ROOTS]
    if code is None:  # a healthy log: no failure at all
        assert findings == []
        return
    assert [f["code"] for f in roots] == [code]
    root = roots[0]
    extra = root["extra"]
    if code == "PP809":
        assert extra["no_root"] == expected["kind"]
        if expected["kind"] == "network-or-other-node":
            assert root["message"].startswith("no root in this log: the cause is on the network")
        if "ib_device" in expected:  # the InfiniBand device NCCL's warnings name
            assert extra["ib_device"] == expected["ib_device"]
        if "records" in expected:  # one event's records are one record
            assert len(extra["records"]) == expected["records"]
        return
    assert extra["root"] is True
    assert extra["kind"] == expected["kind"]
    assert extra["exception"] == expected["exception"]
    if expected["ranks"] is not None:
        assert extra["ranks"][0].endswith(expected["ranks"])
    if "collateral" in expected:
        after = [[f["code"], f["key"]] for f in findings if f["code"] in ("PP803", "PP804")]
        want = expected["collateral"]
        if not keys:
            after, want = [a[:1] for a in after], [w[:1] for w in want]
        assert sorted(after, key=str) == sorted(want, key=str)
    for found in findings:
        # never a frame read as the exception
        assert not str((found["extra"] or {}).get("message", "")).lstrip().startswith('File "')


def _library(path: Path) -> list[dict[str, Any]]:
    report = triage_paths([str(path)])
    assert not report.problems
    return [
        {"code": f.code, "message": f.message, "key": f.key, "extra": f.extra or {}}
        for f in report.findings
    ]


def _cli(path: Path) -> list[dict[str, Any]]:
    result = CliRunner().invoke(app, ["triage", "--format", "json", str(path)])
    code = EXPECTED[path.stem]["code"]
    if code is None:  # a healthy log passes a gate
        assert result.exit_code == 0, result.output
    elif code in ("PP801", "PP802"):  # a failure never does
        assert result.exit_code == 1, result.output
    elif "exit" in EXPECTED[path.stem]:  # 1 where ranks died, though of another's failure
        assert result.exit_code == EXPECTED[path.stem]["exit"], result.output
    else:
        assert result.exit_code in (0, 1), result.output
    document = json.loads(result.output)
    assert document["problems"] == []
    return [
        {"code": f["code"], "message": f["message"], "key": f["key"], "extra": f["extra"] or {}}
        for f in document["findings"]
    ]


def test_the_corpus_is_large_and_varied():
    assert len(EXPECTED) >= 20
    assert set(EXPECTED) == {p.stem for p in REAL.glob("*.log")}
    codes = [e["code"] for e in EXPECTED.values()]
    assert codes.count(None) >= 2 and codes.count("PP809") >= 3
    kinds = {e["kind"] for e in EXPECTED.values() if e["code"] == "PP802"}
    assert {"memory", "communication-init", "shape-kernel", "other", "unknown"} <= kinds
    readme = (REAL / "README.md").read_text()
    for stem in EXPECTED:
        assert f"`{stem}.log`" in readme


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_each_real_log_as_pasted(stem):
    _check(_library(REAL / f"{stem}.log"), EXPECTED[stem])


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_each_real_log_through_the_cli_json(stem):
    _check(_cli(REAL / f"{stem}.log"), EXPECTED[stem])


@pytest.mark.parametrize("stem", WRAPPED)
def test_each_real_log_in_every_envelope(stem):
    # One test per log, through each of its envelopes (a case per envelope costs pytest more
    # than triage); every envelope that fails is named.
    failed = {}
    for name in FORMS:
        if name.split(".", 1)[0] == stem:
            try:
                _check(_library(REAL / "wrapped" / name), EXPECTED[stem], keys=False)
            except AssertionError as error:
                failed[name] = str(error)[:400]
    assert failed == {}


def test_every_wrapped_log_has_every_envelope():
    assert set(WRAPPED) == set(EXPECTED) - UNWRAPPED
    assert set(EXPECTED) >= UNWRAPPED
    assert len(FORMS) == len(WRAPPED) * 27


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
    assert report.findings == ()


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
    assert report.findings == ()


_LEVELS = st.sampled_from(["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"])
_PLACES = st.from_regex(r"[a-z_]{1,20}\.py", fullmatch=True)


@settings(max_examples=40, deadline=None)
@given(level=_LEVELS, place=_PLACES, line=st.integers(1, 99_999), bracketed=st.booleans())
def test_vllm_s_logger_is_peeled_with_or_without_brackets(
    tmp_path_factory, level, place, line, bracketed
):
    # vLLM's logger writes 'ERROR 03-12 15:02:44 file.py:581] ' before 0.8 and
    # 'ERROR 08-06 22:23:09 [file.py:487] ' since: either way the traceback under it is read.
    where = f"[{place}:{line}]" if bracketed else f"{place}:{line}]"
    prefix = f"{level} 08-06 22:23:09 {where} "
    log = tmp_path_factory.mktemp("vllm") / "worker.log"
    log.write_text(
        f"{prefix}Traceback (most recent call last):\n"
        f'{prefix}  File "/srv/sglang/srt/managers/scheduler.py", line 10, in run_batch\n'
        f"{prefix}    scheduler.event_loop_pp()\n"
        f"{prefix}torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    )
    (root,) = [f for f in _library(log) if f["code"] == "PP802"]
    assert root["extra"]["exception"] == "torch.OutOfMemoryError"
    assert root["extra"]["kind"] == "memory"


@settings(max_examples=40, deadline=None)
@given(
    frames=st.integers(0, 30),
    remote=st.sampled_from(
        ["OutOfMemoryError", "torch.OutOfMemoryError", "torch.cuda.OutOfMemoryError"]
    ),
    wrapper=st.sampled_from(["ray.exceptions.RayTaskError", "RayTaskError", "RayActorError"]),
)
def test_the_remote_traceback_ray_s_error_carries_is_part_of_it(
    tmp_path_factory, frames, remote, wrapper
):
    # Ray's error heads the remote process's traceback: the frames after its line and the
    # remote exception line are the failure's, never a failure of their own whose header the
    # log lost.
    lines = [
        "Traceback (most recent call last):",
        '  File "/srv/app/main.py", line 71, in run',
        "    ray.get(task.remote(config))",
        f"{wrapper}({remote}): ray::main_task() (pid=508648, ip=10.0.0.6)",
    ]
    for n in range(frames):
        lines += [f'  File "/srv/app/trainer.py", line {n + 1}, in step_{n}', "    self.step()"]
    lines.append(f"{remote}: the remote process's error")
    log = tmp_path_factory.mktemp("ray") / "driver.log"
    log.write_text("\n".join(lines) + "\n")
    report = triage_paths([str(log)])
    assert not [f for f in report.findings if f.code == "PP810"]  # nothing read as cut
    (root,) = [f for f in report.findings if f.code == "PP802"]
    # With no remote frame, the remote exception line is the relay's message.
    assert root.extra["exception"] == (remote if frames else f"{wrapper}({remote})")
    assert root.extra["kind"] == "memory"


def test_a_bare_device_out_of_memory_is_a_root_and_a_refused_request_is_not(tmp_path):
    log = tmp_path / "bare.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "/srv/app/worker.py", line 12, in run\n'
        "    buffer = torch.empty(size)\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 32.00 MiB\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/app/http.py", line 40, in handle\n'
        "    validate(request)\n"
        "ValueError: The input (9000 tokens) is longer than the model's context length\n"
    )
    roots = [f for f in _library(log) if f["code"] in ROOTS]
    assert [(f["code"], f["extra"]["exception"]) for f in roots] == [
        ("PP802", "torch.OutOfMemoryError")
    ]


@settings(max_examples=40, deadline=None)
@given(
    indent=st.integers(0, 8),
    exception=st.one_of(
        st.from_regex(r"[A-Z][a-z]{1,10}Error", fullmatch=True),
        st.sampled_from(
            ["ray.exceptions.RayTaskError(OutOfMemoryError)", "RayActorError(KeyError)"]
        ),
    ),
    bare=st.booleans(),
)
def test_a_paste_indented_as_a_whole_keeps_its_exception_line(
    tmp_path_factory, indent, exception, bare
):
    # Frames sit two columns deeper than the header, the exception line at the header's own
    # indentation, whatever that is: never read as more of a frame's source.
    pad = " " * indent
    header = "Traceback (most recent call last):"
    if not bare:
        header = f"[2026-06-17 06:48:30 PP1 TP0] Scheduler hit an exception: {header}"
    lines = [
        header,
        '  File "/srv/sglang/srt/managers/scheduler.py", line 10, in run_scheduler_process',
        "    scheduler.event_loop_pp()",
        f"{exception}: layer 40 holds no weight",
    ]
    log = tmp_path_factory.mktemp("indented") / "pasted.log"
    log.write_text("".join(f"{pad}{t}\n" for t in lines))
    (root,) = [f for f in _library(log) if f["code"] == "PP802"]
    assert root["extra"]["exception"] == exception
    assert root["extra"]["message"] == "layer 40 holds no weight"


@settings(max_examples=40, deadline=None)
@given(stray=st.from_regex(r"[ `]{1,8}", fullmatch=True), ray=st.booleans())
def test_ray_s_and_compose_s_prefixes_behind_stray_characters(tmp_path_factory, stray, ray):
    prefix = "(WorkerDict pid=29239) " if ray else "sglang-1  | "
    lines = [
        "[2026-06-17 06:48:30 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/srv/sglang/srt/managers/scheduler.py", line 10, in run_scheduler_process',
        "    scheduler.event_loop_pp()",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    ]
    log = tmp_path_factory.mktemp("stray") / "pasted.log"
    log.write_text("".join(f"{stray}{prefix}{t}\n" for t in lines))
    (root,) = [f for f in _library(log) if f["code"] == "PP802"]
    assert root["extra"]["ranks"][0].endswith("TP0")
    assert root["extra"]["exception"] == "torch.OutOfMemoryError"


@pytest.mark.parametrize(
    ("record", "timed_out"),
    [
        (
            "[rank3]:[E227 16:30:43.526301625 ProcessGroupNCCL.cpp:1834] "
            "[PG ID 2 PG GUID 3 Rank 3] "
            "Timeout at NCCL work: 32, last enqueued NCCL work: 32, last completed NCCL work: 31.",
            True,
        ),
        (
            "[E ProcessGroupNCCL.cpp:630] [Rank 3] Some NCCL operations have failed or timed out.",
            True,
        ),
        (
            "[rank0]:[W227 16:30:43.526301625 ProcessGroupNCCL.cpp:4561] "
            "[PG ID 0 PG GUID 0 Rank 0] "
            "using GPU 0 as device used by this process is currently unknown; a timeout may follow",
            False,
        ),
        (
            "[rank0]:[E227 16:30:43.526301625 ProcessGroupNCCL.cpp:1589] "
            "[PG ID 0 PG GUID 0 Rank 0] "
            "ProcessGroupNCCL preparing to dump debug info. Include stack trace: 1",
            False,
        ),
    ],
)
def test_torch_s_records_of_a_timed_out_collective_are_communication_failures(
    tmp_path, record, timed_out
):
    # Not only the watchdog's own line: torch's other error records of a collective that timed
    # out say the same, and a log of nothing else holds no root. A warning, or an error record
    # that says nothing of a timeout, is no failure.
    log = tmp_path / "nccl.log"
    log.write_text(record + "\n")
    findings = _library(log)
    if timed_out:
        assert [(f["code"], f["extra"]["no_root"]) for f in findings] == [
            ("PP809", "network-or-other-node")
        ]
    else:
        assert findings == []


@pytest.mark.parametrize("stray", ["`", "  ", "```"])
def test_a_cri_log_with_a_stray_character_before_its_first_line(tmp_path, stray):
    # A paste that begins with a backtick (or an indentation) keeps its first line in the
    # same container stream as the rest: one traceback, not a header and a headerless fragment.
    stamp = "2025-07-25T07:53:08.217488644+08:00 stdout F "
    lines = [
        "[2025-07-25 07:53:08 TP2] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/srv/sglang/srt/managers/scheduler.py", line 10, in run_scheduler_process',
        "    scheduler.event_loop_normal()",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
    ]
    log = tmp_path / "cri.log"
    log.write_text(stray + "".join(f"{stamp}{t}\n" for t in lines))
    findings = [f for f in _library(log) if f["code"] in (*ROOTS, "PP803", "PP810")]
    assert [(f["code"], f["key"]) for f in findings] == [("PP802", "TP2")]
    assert findings[0]["extra"]["kind"] == "shape-kernel"


def test_torch_s_rank_is_read_behind_the_process_an_envelope_names():
    """Inside docker compose's envelope, torch's ``[rank3]:`` still names the rank; the
    service's name stays in front of it."""
    report = triage_paths([str(REAL / "wrapped" / "nccl-1928-ofi-remote-error.compose.log")])
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert root.extra["ranks"] == ["sglang-1, rank 3"]
    (after,) = [f for f in report.findings if f.code == "PP803"]
    assert after.key == "sglang-1, rank 2"


def test_a_rank_a_record_names_just_above_a_bare_traceback_is_its_rank(tmp_path):
    # lmdeploy's model agent logs 'Rank[N] failed.' at ERROR, then the traceback
    pasted = (REAL / "lmdeploy-2055-rank2-failed-broadcast-cut.log").read_text()
    root = _roots(triage_paths([str(REAL / "lmdeploy-2055-rank2-failed-broadcast-cut.log")]))
    assert root.key == "rank 2"
    assert "rank 2 failed first" in root.message
    # a record a line away from the header names no rank of it
    apart = tmp_path / "apart.log"
    apart.write_text(pasted.replace("Rank[2] failed.\n", "Rank[2] failed.\nretrying\n", 1))
    assert _roots(triage_paths([str(apart)])).key != "rank 2"
    # the words inside a longer sentence, not at its end, are no such record
    inside = tmp_path / "inside.log"
    inside.write_text(pasted.replace("Rank[2] failed.", "Rank[2] failed. Retrying once.", 1))
    assert _roots(triage_paths([str(inside)])).key != "rank 2"


@pytest.mark.parametrize(
    ("cut", "said"),
    [
        ("P1 TP4] ", "...P1 TP4"),
        ("TN_CP3 TP4] ", "...TN_CP3 TP4"),
        ("`E_DP0 TP1] ", "...E_DP0 TP1"),
    ],
)
def test_a_prefix_cut_inside_its_first_rank_keeps_what_was_read(tmp_path, cut, said):
    # the first characters of '[2025-05-27 04:36:06 DP1 TP4] ' lost: the part read is said,
    # marked cut, never a rank the prefix did not hold (TP4 alone) nor a stage (PP1)
    lines = (REAL / "sglang-6590-backtick-dp1tp4-synchronize-cut.log").read_text().splitlines()
    log = tmp_path / "cut.log"
    log.write_text("\n".join([cut + lines[1].split("] ", 1)[1], *lines[2:]]) + "\n")
    report = triage_paths([str(log)])
    root = _roots(report)
    assert root.key == said
    assert root.message.startswith(f"{said} failed first")
    assert "PP1" not in root.message and root.extra["ranks"] == [said]


def _roots(report: Any) -> Any:
    (root,) = [f for f in report.findings if f.code in ROOTS]
    return root


def test_a_worker_s_own_crash_dump_comes_before_the_oom_killer(tmp_path):
    # the end of Python's fault handler dump of a Ray worker, then the raylet's word that a
    # worker died: the worker crashed (its core, its dump), no kill by the OOM killer first
    log = REAL / "vllm-5537-compose-esc-rayworker-raylet-died-cut.log"
    report = triage_paths([str(log)])
    root = _roots(report)
    assert root.extra["exception"] == "Fatal Python error"
    assert "crashed of a fault of its own" in root.message
    steps = report.data["next_steps"]
    first = next(s for s in steps if not s.startswith("#"))
    assert first.startswith("coredumpctl")
    assert not any("Killed process" in s for s in steps)
    # the handler's words inside a sentence, not at a record's start, are no dump
    said = tmp_path / "said.log"
    said.write_text("INFO the docs say Extension modules: torch._C is printed on a crash\n")
    assert not [f for f in triage_paths([str(said)]).findings if f.code in ROOTS]
