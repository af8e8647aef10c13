"""``ppaux triage`` on the records neighbouring projects print without a Python traceback: torch's
C++ watchdog records whose words or lines a paste lost, a native crash handler's backtrace,
Ray's records of a dead node, syslog's spelling of colours, Open MPI's output tags. Each
expected answer is written by hand."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from ppaux.triage import triage_paths
from ppaux.triage.backtraces import backtrace_frame


def _roots(tmp_path: Path, text: str) -> list[tuple[str, dict[str, object]]]:
    log = tmp_path / "native.log"
    log.write_text(text)
    report = triage_paths([str(log)])
    assert not report.problems
    return [(f.code, f.extra or {}) for f in report.findings if f.code in ("PP802", "PP809")]


def test_a_check_timeout_place_alone_is_a_watchdog_timeout(tmp_path):
    roots = _roots(
        tmp_path,
        "Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:632 (most recent call first):\n"
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0xd4 (0x4000 in "
        "/opt/env/lib/libc10.so)\n"
        "\n"
        "terminate called after throwing an instance of 'terminate calle\n",
    )
    assert [(code, extra.get("no_root")) for code, extra in roots] == [
        ("PP809", "network-or-other-node")
    ]


def test_frames_of_the_watchdogs_error_check_alone_are_a_communication_failure(tmp_path):
    roots = _roots(
        tmp_path,
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f78 in "
        "/opt/env/lib/libc10.so)\n"
        "frame #1: c10d::ProcessGroupNCCL::checkForNCCLErrorsInternal(std::shared_ptr<c10d::"
        "NCCLComm>&) + 0x220 (0x7f78 in /opt/env/lib/libtorch_cuda.so)\n"
        "frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x213 (0x7f78 in "
        "/opt/env/lib/libtorch_cuda.so)\n",
    )
    assert [(code, extra.get("no_root")) for code, extra in roots] == [
        ("PP809", "network-or-other-node")
    ]


_TIMEOUT_FRAMES = (
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f78 in "
    "/opt/env/lib/libc10.so)\n"
    "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::"
    "duration<long, std::ratio<1l, 1000l> > >) + 0x1d2 (0x7f78 in /opt/env/lib/libtorch_cuda.so)\n"
    "frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x233 (0x7f78 in "
    "/opt/env/lib/libtorch_cuda.so)\n"
)


@given(place=st.sampled_from(["ncclCommWatchdog", "watchdogHandler", ""]))
def test_frames_of_the_watchdogs_timeout_check_alone_are_a_communication_failure(place):
    # whatever place the block names after them, or none: a collective timed out
    tail = (
        f"\nException raised from {place} at ../torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:1521 (most recent call first):\n"
        if place
        else ""
    )
    with tempfile.TemporaryDirectory() as where:
        roots = _roots(Path(where), _TIMEOUT_FRAMES + tail)
    assert [(code, extra.get("no_root")) for code, extra in roots] == [
        ("PP809", "network-or-other-node")
    ]
    assert len(roots[0][1]["records"]) == 1  # type: ignore[arg-type]


def test_the_timeout_frames_below_the_watchdogs_record_are_that_record(tmp_path):
    record = (
        "[rank3]:[E1207 10:00:00.000000000 ProcessGroupNCCL.cpp:1537] [PG ID 0 PG GUID "
        "0(default_pg) Rank 3] Process group watchdog thread terminated with exception: "
        "[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, "
        "OpType=ALLREDUCE, "
        "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 milliseconds before "
        "timing out.\n"
        "Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:565 (most recent call first):\n"
    )
    roots = _roots(tmp_path, record + _TIMEOUT_FRAMES)
    assert [(code, extra.get("no_root")) for code, extra in roots] == [
        ("PP809", "network-or-other-node")
    ]
    assert len(roots[0][1]["records"]) == 1  # type: ignore[arg-type]


def test_watchdog_words_with_their_start_lost_keep_the_nccl_error(tmp_path):
    log = tmp_path / "cut.log"
    log.write_text(
        "ith exception: NCCL error: remote process exited or there was a network error, "
        "NCCL version 2.20.5\n"
    )
    report = triage_paths([str(log)])
    (root,) = [f for f in report.findings if f.code == "PP809"]
    assert root.extra is not None and root.extra["no_root"] == "network-or-other-node"


def test_words_that_only_end_like_the_watchdogs_are_no_record(tmp_path):
    log = tmp_path / "prose.log"
    log.write_text(
        "[2026-06-17 06:48:30 TP0] Decode batch. #running-req: 1\n"
        "it failed with exception: NCCL error: something\n"
    )
    assert [f.code for f in triage_paths([str(log)]).findings] == []


def test_a_native_backtrace_is_a_crash_where_its_first_named_frame_says(tmp_path):
    roots = _roots(
        tmp_path,
        "[16] /opt/env/lib/libplugin.so(+0x13e183)[0x147118cbc183]\n"
        "[16] /opt/env/lib/libplugin.so(_ZN12tensorrt_llm7plugins18GPTAttentionPlugin7"
        "enqueueEPKvPv+0x3ea)[0x147118cb48e0]\n"
        "[17] /opt/env/lib/libnvinfer.so.10(+0x17ffe75)[0x147466034e75]\n",
    )
    ((code, extra),) = roots
    assert code == "PP802"
    assert extra["exception"] is None and extra["kind"] == "unknown"
    log = tmp_path / "native.log"
    (finding,) = [f for f in triage_paths([str(log)]).findings if f.code == "PP802"]
    assert "tensorrt_llm::plugins::GPTAttentionPlugin::enqueue" in finding.message


def test_backtrace_lines_read_back():
    assert backtrace_frame("[3] /lib/x.so(_ZN1a1b1cEv+0x10)[0x7f00]") == ("/lib/x.so", "a::b::c")
    assert backtrace_frame("  [0] /lib/x.so(+0x10)[0x7f00]") == ("/lib/x.so", "+0x10")
    assert backtrace_frame("[0] /lib/x.so(main+0x10)[0x7f00]") == ("/lib/x.so", "main")
    assert backtrace_frame("[0] lib/x.so(main+0x10)[0x7f00]") is None  # no absolute path
    assert backtrace_frame("see [0] /lib/x.so(main)[0x7f00]") is None


@given(st.text(max_size=300))
def test_any_backtrace_like_text_is_read_or_refused_without_error(text):
    found = backtrace_frame(f"[1] /lib/x.so({text})[0x1]")
    assert found is None or found[0] == "/lib/x.so"


def test_a_ray_node_marked_dead_is_a_death(tmp_path):
    roots = _roots(
        tmp_path,
        "2024-05-08 14:22:55,484\tINFO worker.py:1740 -- Connected to Ray cluster.\n"
        "(raylet) The node with node id: 0f2197 and address: 10.0.0.51 and node name: "
        "10.0.0.51 has been marked dead because the detector has missed too many heartbeats "
        "from it.\n",
    )
    assert [(code, extra.get("no_root")) for code, extra in roots] == [("PP809", "process-died")]


def test_syslog_escaped_colours_and_a_wrapped_count_read_as_rays_oom_kill(tmp_path):
    roots = _roots(
        tmp_path,
        "#033[2m#033[33m(raylet)#033[0m [DATE] (raylet) node_manager.cc:3007: 2 Workers "
        "(tasks /\n"
        " actors) killed due to memory pressure (OOM), 0 Workers crashed due to other reasons "
        "at node (ID: ab12, IP: 10.0.0.3) over the last time period.\n",
    )
    assert [(code, extra.get("no_root")) for code, extra in roots] == [("PP809", "process-died")]


def test_open_mpi_output_tags_and_mpiruns_signal_line(tmp_path):
    roots = _roots(
        tmp_path,
        "[1,0]<stdout>:[TensorRT-LLM] TensorRT-LLM version: 0.11.0\n"
        "[1,6]<stdout>:[TensorRT-LLM][INFO] Loaded engine size: 16000 MiB\n"
        "--------------------------------------------------------------------------\n"
        "mpirun noticed that process rank 6 with PID 0 on node host-a exited on signal 9 "
        "(Killed).\n",
    )
    assert [(code, extra.get("no_root")) for code, extra in roots] == [("PP809", "process-died")]


def test_a_watchdog_record_glued_after_other_output_names_its_rank(tmp_path):
    modules = ", ".join(f"module{n}._speedups" for n in range(30))
    roots = _roots(
        tmp_path,
        f"Extension modules: {modules}[rank5]:[E226 11:16:37.121617583 ProcessGroupNCCL.cpp:616] "
        "[Rank 5] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5653, "
        "OpType=ALLREDUCE, NumelIn=5, NumelOut=5, Timeout(ms)=600000) ran for 600028 "
        "milliseconds before timing out.\n",
    )
    ((code, extra),) = roots
    assert code == "PP809" and extra["no_root"] == "network-or-other-node"
    assert extra["ranks"] == ["rank 5"]


_CURESULT_NAMES = {1: "CUDA_ERROR_INVALID_VALUE", 2: "CUDA_ERROR_OUT_OF_MEMORY"}


@given(
    code=st.sampled_from([1, 2, 700, 4242]),
    function=st.from_regex(r"[a-z_]{1,20}", fullmatch=True),
    line=st.integers(1, 99999),
    tag=st.sampled_from(["[torch_memory_saver.cpp] ", "", "[2026-12-07 10:00:00 TP1] "]),
)
def test_a_failed_cuda_driver_call_is_the_root_its_processes_deaths_follow(
    code, function, line, tag
):
    record = f"{tag}CUresult error  result={code} file=csrc/saver.cpp func={function} line={line}"
    text = f"{record}\n{record}\nChild process unexpectedly failed with an exit code 256. pid=7\n"
    with tempfile.TemporaryDirectory() as where:
        log = Path(where) / "saver.log"
        log.write_text(text)
        findings = triage_paths([str(log)]).findings
    (root,) = [f for f in findings if f.code in ("PP802", "PP809")]
    assert root.code == "PP802" and root.extra is not None
    assert root.extra["exception"] == "CUresult error"
    assert f"CUDA error {code}, " in root.message
    assert f"in {function} (csrc/saver.cpp:{line})" in root.message
    if code in _CURESULT_NAMES:
        assert _CURESULT_NAMES[code] in root.message
    # out of memory is memory; any other failed call, the driver's (no kernel ran)
    assert root.extra["kind"] == ("memory" if code == 2 else "driver")
    assert [f.key for f in findings if f.code == "PP803"] == ["child pid=7"]


def test_a_sentence_about_a_failed_driver_call_is_no_record(tmp_path):
    log = tmp_path / "prose.log"
    log.write_text(
        "[2026-06-17 06:48:30 TP0] Decode batch. #running-req: 1\n"
        "we saw CUresult error result=1 in the old release\n"
    )
    assert [f.code for f in triage_paths([str(log)]).findings] == []


@given(
    model=st.from_regex(r"[a-z][a-z_]{0,15}", fullmatch=True),
    width=st.integers(0, 30),
    said=st.sampled_from(
        [
            ("[TensorRT-LLM][ERROR] Assertion failed:", "mpiSize == tp * pp (worldConfig.cpp:80)"),
            ("failed to load 'model.plan':", "file not found"),
        ]
    ),
)
def test_a_model_unavailable_in_tritons_status_table_is_the_root(model, width, said):
    # the status cell goes on over the next row (model and version cells empty), then the
    # backend's backtrace, cut
    name = model.ljust(width)
    blank = " " * len(name)
    text = (
        f"| {'Model'.ljust(len(name))} | Version | Status |\n"
        f"| {'ready_one'.ljust(len(name))} | 1       | READY |\n"
        f"| {name} | 1       | UNAVAILABLE: Internal: {said[0]}  |\n"
        f"| {blank} |         | {said[1]} |\n"
        f"| {blank} |         | 1       0x7f923a86a645 /opt/tritonserver/backends/lib\n"
    )
    with tempfile.TemporaryDirectory() as where:
        log = Path(where) / "triton.log"
        log.write_text(text)
        (root,) = triage_paths([str(log)]).findings
    assert root.code == "PP802" and root.extra is not None
    assert root.extra["exception"] == "Triton model UNAVAILABLE"
    assert (
        f"model {model} (version 1) is UNAVAILABLE: Internal: {said[0]} {said[1]}"
        in (root.extra["message"])
    )
    assert "0x7f923a86a645" not in root.extra["message"]
    # the backend's own check of the parallel sizes: the configuration
    assert root.extra["kind"] == ("configuration" if "mpiSize" in said[1] else "other")
