"""Next steps and causes that fit the program and the failure, on real logs (fixtures/logs/real/,
sources in its README) and over arbitrary input:

- a memory or kernel failure of a training job names none of sglang's server arguments or
  tools; sglang's own keep them;
- a kernel failure's steps begin with the rerun under ``CUDA_LAUNCH_BLOCKING=1`` in triage, and
  ``ppaux explain`` points at the same command;
- NCCL's warning that its set-up failed, the only error above a cut start-up traceback, is
  named as that root's cause, with the set-up's steps and fix;
- a log of NCCL's INFO lines alone is read, not refused;
- the watchdog's C++ frames after its own record are that one failure.

Every expected value is written by hand from reading the log.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppaux.report import RULES
from ppaux.triage import pasted_hint, triage_paths
from ppaux.triage.steps import Deployment, next_steps, render
from ppaux_cli.app import app

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "real"

#: sglang's server arguments and tools, which a step for another program never names.
SGLANG_WORDS = (
    "--mem-fraction-static",
    "--chunked-prefill-size",
    "--max-running-requests",
    "--cuda-graph-max-bs",
    "--max-total-tokens",
    "--pp-size",
    "--tp-size",
    "sglang.check_env",
    "server arguments",
)


def _report(path: Path) -> Any:
    report = triage_paths([str(path)])
    assert not report.problems
    return report


def _lines(report: Any) -> list[str]:
    """Each step as the text report prints it."""
    return [str(line) for line in report.data["next_steps"]]


def _argvs(report: Any) -> list[tuple[str, ...]]:
    return [tuple(step["argv"]) for step in report.data["steps"] if step["argv"]]


def test_a_training_jobs_illegal_memory_access_is_not_sent_to_sglang():
    # DDP training (torch's reducer), rank 0: 'CUDA error: an illegal memory access'
    report = _report(REAL / "pytorch-152780-ima-watchdog-ddp.log")
    text = "\n".join(_lines(report))
    for word in SGLANG_WORDS:
        assert word not in text
    argvs = _argvs(report)
    assert ("export", "CUDA_LAUNCH_BLOCKING=1") in argvs
    assert "compute-sanitizer --tool memcheck" in text


def test_a_training_jobs_out_of_memory_gets_the_jobs_own_settings():
    # NCCL's issue 1235: rank 3's 'CUDA error: out of memory' in a training job
    report = _report(REAL / "nccl-1235-socket-closed-and-rank3-cuda-calloc-oom.log")
    text = "\n".join(_lines(report))
    for word in SGLANG_WORDS:
        assert word not in text
    assert ("export", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True") in _argvs(report)
    assert "torch.cuda.memory_summary()" in text
    assert "batch size" in text


def test_a_deepspeed_launch_is_not_read_as_sglang():
    # DeepSpeed's launcher writes '[2023-04-16 21:36:09,031] [INFO] ...': a bracketed time, not
    # sglang's prefix
    report = _report(REAL / "dsexamples-321-host-alloc-interleaved.log")
    text = "\n".join(_lines(report))
    assert "--mem-fraction-static" not in text
    # its host ran out of memory: the host's steps, not a GPU's
    assert "fewer DataLoader workers" in text


def test_sglangs_own_failures_keep_its_arguments_and_tools():
    kernel = _report(REAL / "sglang-3713-illegal-memory.log")
    argvs = _argvs(kernel)
    assert ("python3", "-m", "sglang.check_env") in argvs
    assert argvs[0] == ("export", "CUDA_LAUNCH_BLOCKING=1")
    memory = _report(REAL / "sglang-5285-cuda-graph-oom.log")
    assert "--mem-fraction-static" in "\n".join(_lines(memory))


@given(
    kinds=st.lists(st.sampled_from(["memory", "shape-kernel"]), min_size=1, max_size=2),
    model=st.none() | st.text(max_size=20),
    release=st.none() | st.sampled_from(["0.5.22", "0.5.23"]),
)
def test_another_programs_memory_and_kernel_steps_name_nothing_of_sglang(kinds, model, release):
    deployment = Deployment(sglang=False, model=model)
    steps = next_steps([(k, None) for k in kinds], deployment, [], [], release)
    assert steps
    for step in steps:
        for word in SGLANG_WORDS:
            assert word not in render(step)


@given(sglang=st.booleans(), host=st.booleans(), first=st.sampled_from([[], ["memory"]]))
def test_every_kernel_failure_is_rerun_with_launch_blocking(sglang, host, first):
    kinds = [*first, "shape-kernel"]
    steps = next_steps(
        [(k, None) for k in kinds], Deployment(sglang=sglang), [], [], None, None, host
    )
    argvs = [step.argv for step in steps if step.argv]
    assert ("export", "CUDA_LAUNCH_BLOCKING=1") in argvs
    assert len(argvs) == len(set(argvs))  # no command given twice


def test_explain_and_triage_name_the_same_first_command_for_a_kernel_failure(tmp_path):
    line = "RuntimeError: CUDA error: an illegal memory access was encountered"
    hint = pasted_hint(line)
    assert hint is not None
    assert "set CUDA_LAUNCH_BLOCKING=1" in hint.look
    log = tmp_path / "kernel.log"
    log.write_text(f"[2026-06-17 06:48:30 PP1 TP0] {line}\n")
    assert ("export", "CUDA_LAUNCH_BLOCKING=1") in _argvs(_report(log))


def test_ncclS_set_up_warning_is_the_cause_of_the_cut_traceback_below_it():
    for name, ranks, address in (
        ("sglang-3820-nccl-warn-no-route-cut.log", "TP14", "10.0.0.4<56849>"),
        ("sglang-5594-nccl-warn-connect-abort-cut.log", "TP0", "10.0.0.82<38455>"),
    ):
        report = _report(REAL / name)
        (root,) = [f for f in report.findings if f.code == "PP802"]
        assert root.extra["ranks"] == [ranks]
        assert root.extra["kind"] == "communication-init"
        assert root.extra["nccl_setup"] == "bootstrap-connect"
        assert "the cause is not in it" not in root.message
        assert "NCCL's warning" in root.message and address in root.message
        assert f"{name}:1" in root.message
        assert root.hint == dict(RULES["PP802"].kind_fixes)["bootstrap-connect"]
        argvs = _argvs(report)
        assert ("export", "NCCL_SOCKET_IFNAME=IFACE") in argvs
        assert ("ip", "-brief", "address") in argvs


_HEADER = (
    "[2025-02-24 14:09:34 TP{rank}] Scheduler hit an exception: Traceback (most recent call "
    "last):\n"
    '  File "/srv/sglang/python/sglang/srt/managers/scheduler.py", line 1816, in '
    "run_scheduler_process\n"
)


@settings(max_examples=40, deadline=None)
@given(
    host=st.from_regex(r"[a-z][a-z0-9-]{0,12}", fullmatch=True),
    pid=st.integers(1, 10**6),
    octet=st.integers(1, 254),
    port=st.integers(1, 65535),
    rank=st.integers(0, 15),
    verb=st.sampled_from(
        [
            "misc/socket.cc:533 NCCL WARN socketPollConnect: Connect to 10.0.0.{o}<{p}> "
            "returned 113(No route to host) errno 115(Operation now in progress)",
            "socket.c:485 NCCL WARN socketStartConnect: Connect to 10.0.0.{o}<{p}> failed : "
            "Software caused connection abort",
        ]
    ),
    ended=st.booleans(),
)
def test_a_set_up_warning_above_a_cut_traceback_is_its_cause(
    tmp_path_factory, host, pid, octet, port, rank, verb, ended
):
    warning = f"{host}:{pid}:{pid} [{rank % 8}] " + verb.format(o=octet, p=port)
    text = f"{warning}\n{_HEADER.format(rank=rank)}"
    if ended:  # a traceback with its exception line says its own cause
        text += "KeyError: 'sampling_mask_token_ids'\n"
    log = tmp_path_factory.mktemp("warned") / "server.log"
    log.write_text(text)
    (root,) = [f for f in _report(log).findings if f.code == "PP802"]
    assert root.extra["ranks"] == [f"TP{rank}"]
    if ended:
        assert root.extra["exception"] == "KeyError"
        assert "nccl_setup" not in root.extra
    else:
        assert root.extra["kind"] == "communication-init"
        assert root.extra["nccl_setup"] == "bootstrap-connect"
        assert f"10.0.0.{octet}<{port}>" in root.message


@pytest.mark.parametrize(("later", "cause"), [("14:09:34", True), ("21:09:34", False)])
def test_a_set_up_warning_hours_before_the_traceback_is_not_its_cause(tmp_path, later, cause):
    # kubectl logs --timestamps gives each line its time: a set-up fails within minutes of its
    # warning, so a traceback seven hours on is another failure, its cause not in the log
    warning = (
        "host-a:240:240 [6] misc/socket.cc:533 NCCL WARN socketPollConnect: Connect to "
        "10.0.0.4<56849> returned 113(No route to host)"
    )
    lines = [f"2025-02-24T14:09:30.000000000Z {warning}"] + [
        f"2025-02-24T{later}.000000000Z {line}" for line in _HEADER.format(rank=0).splitlines()
    ]
    log = tmp_path / "server.log"
    log.write_text("\n".join(lines) + "\n")
    (root,) = [f for f in _report(log).findings if f.code == "PP802"]
    assert ("nccl_setup" in root.extra) is cause
    assert (root.extra["kind"] == "communication-init") is cause


_WARN = (
    "host1:123:456 [0] misc/socket.cc:540 NCCL WARN socketPollConnect: Connect to "
    "10.0.0.4<56849> returned 113(No route to host)"
)
_STEP = (
    "Traceback (most recent call last):\n"
    '  File "/app/train.py", line 300, in train_step\n'
    "    loss = model(batch)\n"
)


@pytest.mark.parametrize(
    "text",
    [
        # the warning carries the app's time, the traceback none: hours of steps lie between
        # (NCCL's Init COMPLETE among them), and the traceback is cut in a training step
        "2024-05-01 01:00:00,000 INFO start\n"
        f"2024-05-01 01:00:01,000 {_WARN}\n"
        "host1:123:456 [0] NCCL INFO comm 0x1 rank 0 nranks 2 - Init COMPLETE\n"
        + "".join(f"2024-05-01 0{h}:00:00,000 INFO step {h}000 loss 2.1\n" for h in range(2, 8))
        + f"2024-05-01 08:00:00,000 ERROR boom\n{_STEP}",
        # neither carries a time: another host's warning just above a rank's step
        f"host9:1:1 [3] {_WARN.split(' ', 2)[2]}\n"
        + "".join(f"[rank0]:{line}\n" for line in _STEP.splitlines()),
    ],
)
def test_a_set_up_warning_is_no_cause_of_a_traceback_cut_while_running(tmp_path, text):
    log = tmp_path / "train.log"
    log.write_text(text)
    (root,) = [f for f in _report(log).findings if f.code == "PP802"]
    assert root.extra["exception"] is None
    assert "nccl_setup" not in root.extra and root.extra["kind"] == "unknown"
    assert "NCCL's warning" not in root.message


def test_a_record_between_the_warning_and_the_cut_traceback_breaks_the_tie(tmp_path):
    # a watchdog's record of another rank between them: the warning is not the only error
    # above the traceback
    log = tmp_path / "server.log"
    log.write_text(
        f"{_WARN}\n"
        "[rank3]:[E1203 10:00:00.000000000 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, "
        "NumelOut=1, Timeout(ms)=600000) ran for 600001 milliseconds before timing out.\n"
        + _HEADER.format(rank=0)
    )
    (root,) = [f for f in _report(log).findings if f.code == "PP802"]
    assert "nccl_setup" not in root.extra


def test_a_set_up_warning_alone_gets_its_own_fix(tmp_path):
    # NCCL's bootstrap saw rank 1 twice (two processes given one rank): PP809, the fix of
    # duplicate ranks, not the generic one
    log = tmp_path / "job.log"
    log.write_text(
        "host-a:18569:18835 [0] bootstrap.cc:131 NCCL WARN Bootstrap Root : rank 1 of 8 ranks "
        "has already checked in\n"
    )
    (orphan,) = [f for f in _report(log).findings if f.code == "PP809"]
    assert orphan.extra["nccl_setup"] == "duplicate-rank"
    assert orphan.hint == dict(RULES["PP809"].kind_fixes)["duplicate-rank"]
    assert orphan.hint != RULES["PP809"].fix
    assert "MASTER_PORT" in orphan.hint


def test_a_log_of_ncclS_info_lines_is_read_and_holds_no_failure():
    path = REAL / "transformers-15618-nccl-info-only.log"
    report = _report(path)
    assert report.findings == []
    result = CliRunner().invoke(app, ["triage", str(path)])
    assert result.exit_code == 0, result.output
    assert "not an sglang log" not in result.output
    assert "transformers-15618-nccl-info-only.log" in result.output


@settings(max_examples=30, deadline=None)
@given(
    lines=st.lists(
        st.tuples(
            st.from_regex(r"[a-z][a-z0-9.-]{0,12}", fullmatch=True),
            st.integers(1, 10**6),
            st.integers(0, 7),
            st.sampled_from(
                [
                    "Bootstrap : Using eth0:10.0.0.3<0>",
                    "NET/Plugin : No plugin found (libnccl-net.so), using internal implementation",
                    "cudaDriverVersion 12080",
                    "Using network Socket",
                    "Connected all rings",
                ]
            ),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_ncclS_info_lines_alone_are_a_log_with_no_failure(tmp_path_factory, lines):
    log = tmp_path_factory.mktemp("info") / "job.log"
    log.write_text("".join(f"{h}:{p}:{p} [{d}] NCCL INFO {w}\n" for h, p, d, w in lines))
    report = triage_paths([str(log)])
    assert report.problems == []
    assert report.findings == []


def test_the_watchdogs_frames_after_its_record_are_one_failure():
    # DeepEP's issue 106: the watchdog's record ('... Exception raised from
    # checkForNCCLErrorsInternal ...') and, on the next line, its C++ frames
    name = "deepep-106-cut-watchdog-words-ib-completion-error.log"
    (orphan,) = [f for f in _report(REAL / name).findings if f.code == "PP809"]
    assert orphan.extra["records"] == [f"{REAL / name}:1"]
    assert "1 communication failure " in orphan.message


_TRAIN_OOM = (
    "Traceback (most recent call last):\n"
    '  File "/app/train.py", line 10, in <module>\n'
    "    main()\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
)


@pytest.mark.parametrize(
    ("first", "sglang"),
    [
        # the prefix with no rank's tag: a training script's logger writes it too
        ("[2024-05-01 01:00:00] INFO step 10 loss 2.1", False),
        # sglang's main process writes it, and its own words say so
        (
            "[2024-05-01 01:00:00] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16",
            True,
        ),
    ],
)
def test_the_prefix_without_a_rank_is_sglang_s_only_beside_its_words(tmp_path, first, sglang):
    log = tmp_path / "run.log"
    log.write_text(f"{first}\n{_TRAIN_OOM}")
    text = " ".join(_lines(_report(log)))
    assert ("--mem-fraction-static" in text) is sglang
    assert ("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in text) is not sglang


_HCCL = (
    "[rank1]:[E814 11:08:11.937234762 ProcessGroupHCCL.cpp:1869] [Rank 1] HCCL watchdog thread "
    "terminated with exception: \n"
    "[ERROR] 2026-08-14-11:08:11 (PID:3000, Device:1, RankID:-1) ERR02005 DIST internal error\n"
    "terminate called after throwing an instance of 'std::runtime_error'\n"
    "  what():  [Rank 1] HCCL watchdog thread terminated with exception: \n"
)


def test_an_ascend_hccl_log_gets_hccl_s_steps_and_none_of_nccl_s(tmp_path):
    log = tmp_path / "ascend.log"
    log.write_text(_HCCL)
    report = _report(log)
    argvs = _argvs(report)
    assert ("npu-smi", "info") in argvs
    assert ("export", "ASCEND_LAUNCH_BLOCKING=1") in argvs
    assert "HCCL_CONNECT_TIMEOUT" in " ".join(_lines(report))
    assert not any("NCCL_" in word or word == "nvidia-smi" for argv in argvs for word in argv)
    assert "NCCL_SOCKET_IFNAME" not in " ".join(_lines(report))


def test_an_ascend_log_without_a_root_gets_hccl_s_fix_and_none_of_nccl_s(tmp_path):
    log = tmp_path / "ascend.log"
    log.write_text(_HCCL)
    (no_root,) = [f for f in _report(log).findings if f.code == "PP809"]
    assert no_root.extra["collectives"] == "hccl"
    assert "HCCL_SOCKET_IFNAME" in no_root.hint and "~/ascend/log/" in no_root.hint
    assert "NCCL_" not in no_root.hint.replace("HCCL_", "")
    nccl = tmp_path / "nccl.log"
    lines = _HCCL.replace("HCCL", "NCCL").splitlines(keepends=True)
    nccl.write_text("".join(line for line in lines if "ERR02005" not in line))
    (no_root,) = [f for f in _report(nccl).findings if f.code == "PP809"]
    assert no_root.extra["collectives"] == "nccl"
    assert "NCCL_SOCKET_IFNAME" in no_root.hint and "HCCL" not in no_root.hint


@pytest.mark.parametrize(
    "name", ["dsexamples-321-host-alloc-interleaved.log", "dataloader-killed.log"]
)
def test_the_host_s_out_of_memory_gets_the_host_s_steps(tmp_path, name):
    path = REAL / name
    if name == "dataloader-killed.log":
        path = tmp_path / name
        path.write_text(
            "Traceback (most recent call last):\n"
            '  File "/app/train.py", line 50, in <module>\n'
            "    for batch in loader:\n"
            "RuntimeError: DataLoader worker (pid 4321) is killed by signal: Killed.\n"
        )
    report = _report(path)
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert root.extra["kind"] == "memory"
    argvs = _argvs(report)
    assert ("dmesg", "-T") in argvs and ("free", "-h") in argvs
    assert not any(argv[0] == "nvidia-smi" for argv in argvs)
    assert "PYTORCH_CUDA_ALLOC_CONF" not in " ".join(_lines(report))
    assert "num_workers" in " ".join(_lines(report))


@pytest.mark.parametrize(
    ("line", "command"),
    [
        (
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
            ("nvidia-smi", "--query-gpu=index,memory.used,memory.total", "--format=csv"),
        ),
        (
            "RuntimeError: DataLoader worker (pid 4321) is killed by signal: Killed.",
            ("dmesg", "-T"),
        ),
    ],
)
def test_explain_and_triage_give_one_first_step_for_out_of_memory(tmp_path, line, command):
    hint = pasted_hint(line)
    assert hint is not None and command[0] in hint.look
    assert "journalctl" not in hint.look
    log = tmp_path / "oom.log"
    log.write_text(f"{_TRAIN_OOM.rsplit(chr(10), 2)[0]}\n{line}\n")
    assert command in _argvs(_report(log))
