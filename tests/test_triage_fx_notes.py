"""torch.fx's ``Original traceback:`` notes the frames after it as where the failure just
before it came from; without that failure, or in a sentence of another process's, the frames
after it are a failure's own."""

from __future__ import annotations

import pytest

from ppaux.triage import triage_paths

_FRAME = (
    '  File "/usr/local/lib/python3.11/site-packages/sglang/srt/managers/scheduler_pp_mixin.py", '
    "line 900, in pop_auxiliary_output_from_pp_tensors\n"
    "    raise RuntimeError(msg)\n"
    "RuntimeError: received a non-tensor auxiliary PP output\n"
)


def _findings(tmp_path, text):
    log = tmp_path / "x.log"
    log.write_text(text)
    report = triage_paths([str(log)])
    assert not report.problems
    return report.findings


@pytest.mark.parametrize(
    "original",
    [
        "[2026-12-03 14:56:07 PP0] Scheduler step failed; re-raising. Original traceback:\n",
        "[2026-12-03 14:56:07 PP0] Original traceback:\n",
        "Original traceback:\n",
    ],
)
def test_frames_after_original_traceback_with_no_failure_before_are_the_fragments(
    tmp_path, original
):
    text = "[2026-12-03 14:56:00 PP0] Load weight end. type=LlamaForCausalLM\n" + original + _FRAME
    findings = _findings(tmp_path, text)
    (root,) = [f for f in findings if f.code in ("PP801", "PP802", "PP809")]
    assert root.code == "PP801"
    assert root.location is not None
    assert root.location.function == "pop_auxiliary_output_from_pp_tensors"
    assert root.location.line == 3
    assert "PP806" in [f.code for f in findings]


def test_original_traceback_inside_a_sentence_after_a_failure_notes_nothing(tmp_path):
    text = (
        "[rank0]: RuntimeError: Expected positional argument for parameter x\n"
        "[rank0]: step failed; Original traceback:\n"
        '[rank0]:   File "/env/model.py", line 474, in forward\n'
        "[rank0]:     outputs = self.model(\n"
    )
    findings = _findings(tmp_path, text)
    assert "PP803" in [f.code for f in findings]


def test_fx_notes_after_a_one_line_failure_stay_notes(tmp_path):
    text = (
        "[rank0]: RuntimeError: Expected positional argument for parameter x\n"
        "[rank0]: Original traceback:\n"
        '[rank0]: File "/env/model.py", line 474, in forward\n'
        "[rank0]:     outputs = self.model(\n"
        '[rank0]: File "/env/model.py", line 90, in model\n'
        "[rank0]:     return f(x)\n"
    )
    findings = _findings(tmp_path, text)
    assert [f.code for f in findings if f.code.startswith("PP80")] == ["PP802"]
