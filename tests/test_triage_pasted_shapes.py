"""``ppaux triage`` on shapes of real pastes: a log view's ``[<service>]: `` before every line,
torch's C++ check of a CUDA call alone (its Python line not in the paste), an exception whose
type ends in neither Error nor Exception (Triton's ``OutOfResources``), a traceback whose
indentation the paste stripped, and the steps of a Triton kernel's resource limit.

The logs are in fixtures/logs/real/ (sources in its README, expectations in expected.json); the
cases built here from them change one thing a paste or a viewer changes and say what must
hold.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppaux.triage import triage_paths
from ppaux_cli.app import app

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "real"


def _roots(path: Path) -> list:
    report = triage_paths([str(path)])
    assert not report.problems
    return [f for f in report.findings if f.code in ("PP801", "PP802", "PP809")]


def _labelled(tmp_path: Path, stem: str, label: str) -> Path:
    """The real log ``stem`` with ``[<label>]: `` before each line, as a log view shows it."""
    lines = (REAL / f"{stem}.log").read_text().splitlines()
    out = tmp_path / f"{stem}.label.log"
    out.write_text("".join(f"[{label}]: {line}\n" for line in lines))
    return out


def test_a_service_label_before_every_line_is_taken_off(tmp_path):
    plain = _roots(REAL / "vllm-10626-pynccl-init-rank-cut.log")
    labelled = _roots(_labelled(tmp_path, "vllm-10626-pynccl-init-rank-cut", "vllm"))
    assert [f.code for f in labelled] == [f.code for f in plain] == ["PP802"]
    assert labelled[0].extra["kind"] == plain[0].extra["kind"]
    assert labelled[0].key == "VllmWorkerProcess pid=55933"


def test_a_one_line_exception_behind_a_service_label_is_a_failure(tmp_path):
    log = tmp_path / "app.log"
    log.write_text(
        "[app]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 74.16 GiB.\n"
        "[app]: [rank0]:[W914 04:53:45.615225908 ProcessGroupNCCL.cpp:1476] Warning: WARNING: "
        "destroy_process_group() was not called before program exit\n"
    )
    (root,) = _roots(log)
    assert root.code == "PP802"
    assert root.extra["exception"] == "torch.OutOfMemoryError"
    assert root.extra["kind"] == "memory"
    result = CliRunner().invoke(app, ["triage", str(log)])
    assert result.exit_code == 1, result.output


_LABELS = st.from_regex(r"[A-Za-z][A-Za-z0-9_.-]{0,20}", fullmatch=True).filter(
    lambda name: not name.startswith(("rank", "default"))
)
_RAISED = st.sampled_from(
    [
        ("torch.OutOfMemoryError", "CUDA out of memory. Tried to allocate 2.00 GiB", "memory"),
        ("ValueError", "Mesh 'tp' is not available", "other"),
        ("RuntimeError", "CUDA error: an illegal memory access was encountered", "shape-kernel"),
    ]
)


@settings(max_examples=30, deadline=None)
@given(label=_LABELS, raised=_RAISED, frames=st.booleans())
def test_any_service_label_reads_as_the_line_behind_it(tmp_path_factory, label, raised, frames):
    exception, message, kind = raised
    lines = ["Traceback (most recent call last):", '  File "/srv/app/run.py", line 3, in main']
    lines = [*(lines if frames else []), f"{exception}: {message}"]
    log = tmp_path_factory.mktemp("label") / "label.log"
    log.write_text("".join(f"[{label}]: {line}\n" for line in lines))
    (root,) = _roots(log)
    assert (root.extra["exception"], root.extra["kind"]) == (exception, kind)
    assert root.key == label


def test_a_worker_name_behind_torchs_rank_tag_names_the_process(tmp_path):
    lines = (REAL / "vllm-10626-pynccl-init-rank-cut.log").read_text().splitlines()
    log = tmp_path / "ranked.log"
    log.write_text("".join(f"[rank0]: {line}\n" for line in lines))
    (root,) = _roots(log)
    assert root.code == "PP802"
    assert root.key == "VllmWorkerProcess pid=55933"


def test_a_label_that_is_torchs_rank_tag_stays_a_rank(tmp_path):
    log = tmp_path / "rank.log"
    log.write_text("[rank3]: KeyError: 6\n")
    (root,) = _roots(log)
    assert root.key == "rank 3"


def test_a_cuda_checks_frames_alone_are_a_cuda_error():
    # torch's 'CUDA kernel errors might be asynchronously reported ...' and its C++ check's
    # frames (c10_cuda_check_implementation), the error's own line not in the paste
    log = REAL / "lmdeploy-3258-ima-watchdog-frames.log"
    (root,) = _roots(log)
    assert root.code == "PP802"
    assert root.extra["exception"] == "CUDA error"
    assert root.extra["kind"] == "shape-kernel"
    result = CliRunner().invoke(app, ["triage", "--format", "json", str(log)])
    assert result.exit_code == 1, result.output
    assert json.loads(result.output)["problems"] == []


def test_the_cuda_checks_words_after_its_error_line_are_the_same_failure(tmp_path):
    log = tmp_path / "whole.log"
    log.write_text(
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        + (REAL / "lmdeploy-3258-ima-watchdog-frames.log").read_text()
    )
    (root,) = _roots(log)
    assert root.extra["exception"] == "RuntimeError"
    assert f"{log}:1)" in root.message
    assert not [f for f in triage_paths([str(log)]).findings if f.code == "PP803"]


def test_tritons_out_of_resources_alone_is_a_kernels_failure(tmp_path):
    # the type ends in neither Error nor Exception; the message as pasted, over three lines
    for log in (REAL / "vllm-49778-outofresources-wrapped-lines.log", tmp_path / "one.log"):
        if log.parent == tmp_path:
            log.write_text("[rank0]: OutOfResources: out of resource: shared memory\n")
        (root,) = _roots(log)
        assert root.code == "PP802"
        assert root.extra["exception"].endswith("OutOfResources")
        assert root.extra["kind"] == "shape-kernel"


def test_explain_gives_tritons_out_of_resources_a_kind():
    line = (
        "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: "
        "165888, Hardware limit: 163840."
    )
    result = CliRunner().invoke(app, ["explain", line])
    assert "none of sglang's nine" in result.output
    assert "shape or kernel failure" in result.output
    assert "ppaux triage" in result.output


def test_a_calls_argument_line_is_never_the_exception_where_indentation_is_stripped():
    (root,) = _roots(REAL / "sglang-15571-pp1-disagg-prefill-stripped-cut.log")
    assert root.extra["exception"] is None
    assert "batch_or_worker_batch" not in root.message
    findings = triage_paths([str(REAL / "sglang-15571-pp1-disagg-prefill-stripped-cut.log")])
    assert not [f for f in findings.findings if f.code == "PP803"]


def test_an_exception_right_after_a_statements_first_line_is_read(tmp_path):
    # Python before 3.11 prints a statement's first line only: the exception may follow it
    log = tmp_path / "first-line.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        'File "/srv/app/run.py", line 10, in main\n'
        "result = self.call(\n"
        "ValueError: bad\n"
    )
    (root,) = _roots(log)
    assert root.extra["exception"] == "ValueError"


def _steps(log: Path) -> list[dict]:
    result = CliRunner().invoke(app, ["triage", "--format", "json", str(log)])
    assert result.exit_code == 1, result.output
    return json.loads(result.output)["steps"]


def test_a_triton_resource_limit_gets_the_kernels_configuration_not_a_rerun():
    # raised on the host before the launch: no asynchronous fault to make synchronous
    for name in ("helion-470-triton-outofresources", "vllm-49778-outofresources-wrapped-lines"):
        steps = _steps(REAL / f"{name}.log")
        argvs = [s["argv"] for s in steps if s["argv"]]
        words = " ".join(s["comment"] for s in steps)
        assert ["export", "CUDA_LAUNCH_BLOCKING=1"] not in argvs
        assert "compute-sanitizer" not in words
        assert "num_stages" in words and "shared memory" in words


def test_a_kernels_fault_keeps_the_synchronous_rerun():
    argvs = [s["argv"] for s in _steps(REAL / "lmdeploy-3258-ima-watchdog-frames.log")]
    assert ["export", "CUDA_LAUNCH_BLOCKING=1"] in argvs


def test_explain_of_a_triton_resource_limit_looks_at_the_kernels_configuration():
    line = "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 1"
    result = CliRunner().invoke(app, ["explain", line])
    assert "CUDA_LAUNCH_BLOCKING" not in result.output
    assert "num_stages" in result.output


def _cut(tmp_path: Path, frames: list[tuple[str, str, str]]) -> list:
    """The roots of a traceback cut after ``frames`` (file, function, source line)."""
    log = tmp_path / "cut.log"
    lines = ["Traceback (most recent call last):"]
    for file, function, code in frames:
        lines += [f'  File "{file}", line 10, in {function}', f"    {code}"]
    log.write_text("\n".join(lines) + "\n")
    return _roots(log)


def test_a_traceback_cut_in_a_communicators_set_up_is_of_that_kind():
    (root,) = _roots(REAL / "vllm-10626-pynccl-init-rank-cut.log")
    assert root.extra["exception"] is None
    assert root.extra["kind"] == "communication-init"
    assert "the cause is not in it" in root.message
    steps = _steps(REAL / "vllm-10626-pynccl-init-rank-cut.log")
    assert "whole log" in steps[0]["comment"]


def test_a_traceback_cut_in_tritons_launch_is_a_kernels(tmp_path):
    site = "/usr/lib/python3.12/site-packages/triton"
    (root,) = _cut(
        tmp_path,
        [
            ("/srv/app/ops.py", "matmul", "kernel[grid](a, b)"),
            (f"{site}/runtime/autotuner.py", "run", "return self.fn.run(*args, **kwargs)"),
            (f"{site}/compiler/compiler.py", "_init_handles", "self._init_handles()"),
        ],
    )
    assert root.extra["kind"] == "shape-kernel"


def test_a_traceback_cut_in_a_stages_receive_is_communication(tmp_path):
    p2p = "/srv/Megatron-LM/megatron/core/pipeline_parallel/p2p_communication.py"
    (root,) = _cut(
        tmp_path,
        [
            ("/srv/Megatron-LM/megatron/core/pipeline_parallel/schedules.py", "run", "go()"),
            (p2p, "recv_forward", "input_tensor, _, _ = _communicate("),
            (p2p, "_communicate", "reqs = p2p_func("),
        ],
    )
    assert root.extra["kind"] == "communication"


def test_a_traceback_cut_elsewhere_stays_unknown(tmp_path):
    (root,) = _cut(tmp_path, [("/srv/app/train.py", "step", "loss = model(batch)")])
    assert root.extra["kind"] == "unknown"
