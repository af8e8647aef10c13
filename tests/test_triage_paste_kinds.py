"""Triage and explain on real (or real-shaped) pastes whose form or kind was misread: a
terminal copy that lost its newlines but kept each line's padding, a shape failure given a
kernel's steps, an extension module's undefined symbol said to be of no kind. Every expected
word is written by hand from reading the log (fixtures/logs/real/, sources in its README)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ppaux.triage import triage_paths
from ppaux_cli.app import app

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "real"
FLAT_KILL = REAL / "written-torchrun-flattened-padded-sigkill-local-rank-4.log"
SHAPE = REAL / "dsexamples-790-pp-backward-mismatch-in-shape-noheader.log"


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def _forms(path: Path) -> dict[str, tuple[int, str]]:
    """Each format's exit code and output, for one log."""
    found = {}
    for form in ("text", "json", "github"):
        result = CliRunner().invoke(app, ["triage", "--format", form, str(path)])
        found[form] = (result.exit_code, result.output)
    return found


@pytest.mark.parametrize(
    ("path", "code", "words"),
    [
        (FLAT_KILL, "PP809", "local_rank 4 was killed by SIGKILL"),
        (SHAPE, "PP802", "Mismatch in shape: grad_output[0]"),
    ],
)
def test_text_json_and_github_give_the_same_root_kind_and_exit(path, code, words):
    forms = _forms(path)
    exit_code, document = forms["json"]
    findings = json.loads(document)["findings"]
    roots = [f for f in findings if f["code"] in ("PP801", "PP802", "PP809")]
    assert [f["code"] for f in roots] == [code]
    assert exit_code == 1 and {c for c, _ in forms.values()} == {1}
    message = roots[0]["message"]
    assert words in message
    text, github = _flat(forms["text"][1]), forms["github"][1]
    assert f"{code} error" in text and _flat(message) in text
    assert f"title={code} " in github and words in github


def test_a_padded_flattened_torchrun_paste_keeps_the_killed_rank_and_its_oom_steps():
    # one line: each of the terminal's lines padded to its width, then joined
    assert FLAT_KILL.read_text().count("\n") == 1
    report = triage_paths([str(FLAT_KILL)])
    root = next(f for f in report.findings if f.code == "PP809")
    assert root.extra is not None and root.extra["no_root"] == "process-died"
    assert "local_rank 4 was killed by SIGKILL (signal 9)" in root.message
    argvs = [tuple(s["argv"]) for s in report.data["steps"] if s["argv"]]
    assert ("journalctl", "-k", "-g", "Killed process|Out of memory") in argvs


def test_the_same_paste_with_its_newlines_is_read_the_same(tmp_path):
    # the padding taken back out: the lines as the terminal showed them
    lines = [p for p in re.split(r"(?<=\S) {3,}(?=\S)", FLAT_KILL.read_text().strip())]
    assert len(lines) > 20
    (tmp_path / "lines.log").write_text("\n".join(lines) + "\n")
    flat = triage_paths([str(FLAT_KILL)])
    split = triage_paths([str(tmp_path / "lines.log")])
    said = [(f.code, f.message.split(" (", 1)[0]) for f in flat.findings]
    assert said == [(f.code, f.message.split(" (", 1)[0]) for f in split.findings]


def test_a_shape_failure_gets_the_shapes_steps_not_a_kernel_s():
    report = triage_paths([str(SHAPE)])
    words = " ".join(
        " ".join(s["argv"] or ()) + " " + str(s["comment"] or "") for s in report.data["steps"]
    )
    assert "shape" in words and "micro-batch" in words
    assert "CUDA_LAUNCH_BLOCKING" not in words and "compute-sanitizer" not in words


def test_a_kernel_fault_keeps_the_kernel_s_steps(tmp_path):
    log = tmp_path / "ima.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "/home/user/train.py", line 12, in <module>\n'
        "    loss.backward()\n"
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    )
    words = " ".join(
        " ".join(s["argv"] or ()) for s in triage_paths([str(log)]).data["steps"] if s["argv"]
    )
    assert "CUDA_LAUNCH_BLOCKING=1" in words


def _explain(text: str) -> str:
    result = CliRunner().invoke(app, ["explain", text])
    assert result.exit_code == 2
    return _flat(result.output)


def test_explain_says_an_undefined_symbol_is_a_build_of_other_versions():
    said = _explain(
        "ImportError: /opt/conda/lib/python3.10/site-packages/sgl_kernel/common_ops.abi3.so: "
        "undefined symbol: cuGreenCtxStreamCreate"
    )
    assert "a build for other versions than installed" in said
    assert "driver" in said and "nvidia-smi" in said
    assert "failure of another kind" not in said
    # the whole paste of a real report says the same
    whole = _explain((REAL / "sglang-8131-import-undefined-symbol.log").read_text())
    assert "a build for other versions than installed" in whole


def test_explain_on_a_shape_failure_points_at_the_shapes_not_at_cuda():
    said = _explain(
        "RuntimeError: Mismatch in shape: grad_output[0] has a shape of torch.Size([8, 4096]) "
        "and output[0] has a shape of torch.Size([8, 1024])"
    )
    assert "check the model's config and batch sizes" in said
    assert "CUDA_LAUNCH_BLOCKING" not in said


IMPORT_CUT = REAL / "written-sglang-import-warning-undefined-symbol-cut.log"


def test_an_import_failure_logged_above_a_cut_traceback_is_its_cause():
    report = triage_paths([str(IMPORT_CUT)])
    root = next(f for f in report.findings if f.code == "PP802")
    assert root.extra is not None and root.extra.get("nccl_setup") is None
    assert "_C.abi3.so: undefined symbol: _ZN5torch3jit11parseSchemaERKSs" in root.message
    assert f"{IMPORT_CUT}:1" in root.message  # where the cause was logged
    argvs = [tuple(s["argv"]) for s in report.data["steps"] if s["argv"]]
    assert ("python3", "-m", "pip", "show", "--", "vllm") in argvs
    words = " ".join(str(s["comment"] or "") for s in report.data["steps"])
    assert "another torch release" in words and "NCCL" not in words


def test_the_import_warning_alone_is_no_failure(tmp_path):
    # the program went on after it: a log that holds nothing else passes a gate
    log = tmp_path / "warned.log"
    log.write_text("".join(IMPORT_CUT.read_text().splitlines(keepends=True)[:5]))
    result = CliRunner().invoke(app, ["triage", str(log)])
    assert result.exit_code == 0, result.output
    assert "no failure found" in result.output


def test_an_import_warning_above_a_complete_failure_is_not_its_cause(tmp_path):
    lines = IMPORT_CUT.read_text().splitlines()
    log = tmp_path / "complete.log"
    log.write_text("\n".join([*lines, "RuntimeError: CUDA error: out of memory"]) + "\n")
    report = triage_paths([str(log)])
    root = next(f for f in report.findings if f.code == "PP802")
    assert "undefined symbol" not in root.message and "out of memory" in root.message


def test_deepspeed_s_killing_subprocess_lines_are_its_cleanup_not_a_death_before_the_root(
    tmp_path,
):
    # DeepSpeed's launcher's real cleanup lines (dsexamples-321), then a child's traceback that
    # reached the paste after them, cut in its frames (dsexamples-790's, without its exception)
    kills = [
        line
        for line in (REAL / "dsexamples-321-host-alloc-interleaved.log").read_text().splitlines()
        if "Killing subprocess" in line
    ]
    frames = SHAPE.read_text().splitlines()[:-1]
    assert len(kills) >= 2 and frames[0].startswith("  File ")
    log = tmp_path / "ds.log"
    log.write_text("\n".join([*kills, "Traceback (most recent call last):", *frames]) + "\n")
    findings = triage_paths([str(log)]).findings
    assert [f.code for f in findings if f.code in ("PP801", "PP802", "PP809")] == ["PP802"]
    collateral = [f for f in findings if f.code == "PP803"]
    assert len(collateral) == len(kills)
    assert all("killed by its launcher" in f.message for f in collateral)


@pytest.mark.parametrize("second", ["Aborted", "Segmentation fault"])
def test_a_second_fault_handler_dump_below_the_first_is_what_followed(tmp_path, second):
    # the real dump (sglang-4673), then another process's in the same shape below it
    real = (REAL / "sglang-4673-faulthandler-abort.log").read_text().rstrip("\n")
    other = real.replace("0x00007ee4", "0x00007fa1").replace("0x7f0626", "0x7f1b3a")
    other = other.replace("Fatal Python error: Aborted", f"Fatal Python error: {second}")
    log = tmp_path / "two.log"
    log.write_text(f"{real}\n\n{other}\n")
    report = triage_paths([str(log)])
    roots = [f for f in report.findings if f.code in ("PP801", "PP802", "PP809")]
    assert len(roots) == 1 and f"{log}:3" in roots[0].message
    assert "records of it at the same moment" not in roots[0].message
    after = [f for f in report.findings if f.code == "PP803"]
    assert len(after) == 1 and f"Fatal Python error: {second}" in after[0].message


THREAD = REAL / "written-sglang-overlap-thread-then-scheduler-ima.log"
_THREAD_THEN_SCHEDULER = THREAD.read_text()


def test_a_thread_s_traceback_next_to_its_process_s_is_that_process_not_another(tmp_path):
    log = tmp_path / "thread.log"
    log.write_text(_THREAD_THEN_SCHEDULER)
    report = triage_paths([str(log)])
    assert [f.code for f in report.findings if f.code in ("PP802", "PP803")] == ["PP802"]
    root = next(f for f in report.findings if f.code == "PP802")
    assert root.extra is not None
    assert [r["ranks"] for r in root.extra["records"]] == ["TP0", "TP0"]


def test_a_thread_s_traceback_with_another_error_stays_a_failure_of_its_own(tmp_path):
    log = tmp_path / "thread.log"
    other = _THREAD_THEN_SCHEDULER.replace(
        "RuntimeError: CUDA error: an illegal memory access was encountered\n[",
        "ValueError: bad batch\n[",
        1,
    )
    assert other != _THREAD_THEN_SCHEDULER
    log.write_text(other)
    codes = [f.code for f in triage_paths([str(log)]).findings]
    assert "PP803" in codes or codes.count("PP802") == 2
