"""An exception line a report wrapped in Markdown's emphasis (``**RuntimeError: ...**``,
``*RuntimeError: ...*``, around a code span or not: DeepSpeed issue 1852's paste) is that
exception, in ``triage`` and in ``explain``, as the bare line is; a line that only opens or
closes emphasis, or words emphasised in a sentence, are not changed. Expectations by hand."""

from __future__ import annotations

import json

from helpers import cli
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage.tracelines import raised

IMA = "RuntimeError: CUDA error: an illegal memory access was encountered"


def test_an_emphasised_exception_line_is_that_exception() -> None:
    for marks, ticks in (("**", ""), ("*", ""), ("***", ""), ("**", "`")):
        line = f"{marks}{ticks}{IMA}{ticks}{marks}"
        assert raised(line) == (
            "RuntimeError",
            "CUDA error: an illegal memory access was encountered",
        )
    assert raised(f"**{IMA}") is None  # bold opened, never closed: not the bare line
    assert raised("**Note**: RuntimeError: x") is None


def test_triage_and_explain_read_the_bold_line_of_a_real_paste(tmp_path) -> None:
    log = tmp_path / "issue.log"
    log.write_text(
        f"**{IMA}**\nTraceback (most recent call last):\n"
        '  File "../pretrain_gpt2.py", line 133, in <module>\n'
        "    pretrain(train_valid_test_datasets_provider, model_provider, forward_step,\n"
    )
    result = cli("triage", "--format", "json", str(log))
    assert result.exit_code == 1
    (root,) = [f for f in json.loads(result.output)["findings"] if f["code"] == "PP802"]
    assert root["extra"]["exception"] == "RuntimeError"
    assert root["extra"]["kind"] == "shape-kernel"
    said = cli("explain", f"**{IMA}**").output
    assert "shape or kernel failure" in said
    assert said == cli("explain", IMA).output


@settings(max_examples=40)
@given(st.sampled_from(["*", "**", "***"]), st.text(max_size=80))
def test_emphasis_is_peeled_only_where_it_closes_the_same_line(marks: str, text: str) -> None:
    line = f"{marks}{text}"
    if not text.endswith(marks) or raised(line) is None:
        return
    # what is read is what the marks enclose, never the marks
    exception, _ = raised(line) or ("", "")
    assert not exception.startswith("*")
