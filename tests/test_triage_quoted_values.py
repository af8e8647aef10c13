"""A phrase a message quotes as the value it names (a config value, a key) is not its
failure: its kernel or shape words do not make the failure a kernel's. A quoted phrase that an
error's words lead (NCCL's ``Cuda failure 'out of memory'``, ``CUDA error: '...'``) is the
error's text and still counts."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import cli
from hypothesis import given
from hypothesis import strategies as st

from ppaux.triage import triage_paths
from ppaux.triage.quotedvalues import unquoted_values

_HEAD = [
    "[2026-12-03 14:56:07 PP1] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/srv/sglang/srt/managers/scheduler.py", line 2944, in run_scheduler_process',
    "    scheduler.event_loop_pp()",
]


def _kind(tmp_path: Path, last: str) -> str:
    path = tmp_path / "x.log"
    path.write_text("\n".join([*_HEAD, last]) + "\n", encoding="utf-8")
    (root,) = [f for f in triage_paths([str(path)]).findings if f.code == "PP802"]
    return str(root.extra["kind"])


@pytest.mark.parametrize(
    "last",
    [
        "ValueError: bad config value 'device-side assert triggered' for key 'on_error'",
        'KeyError: "illegal memory access" is not a known option',
        "ValueError: unknown mode \u2018size mismatch\u2019",
    ],
)
def test_a_quoted_value_is_no_kernel_failure(tmp_path, last):
    assert _kind(tmp_path, last) == "other"


@pytest.mark.parametrize(
    "last",
    [
        "RuntimeError: CUDA error: 'an illegal memory access was encountered'",
        "RuntimeError: CUDA error: an illegal memory access was encountered (while running "
        "kernel 'fused_moe')",
        "RuntimeError: Worker failed with error 'CUDA error: device-side assert triggered', "
        "please check the stack trace above for the root cause",
        "RuntimeError: shape '[2, 3]' is invalid for input of size 5",
    ],
)
def test_a_kernel_or_shape_error_in_its_own_or_an_errors_words_stays_one(tmp_path, last):
    assert _kind(tmp_path, last) == "shape-kernel"


def test_explain_says_a_quoted_value_is_a_failure_of_another_kind():
    result = cli(
        "explain", "ValueError: bad config value 'device-side assert triggered' for key 'x'"
    )
    assert result.exit_code == 2
    assert "a failure of another kind" in result.output
    assert "shape or kernel failure" not in result.output.replace("\n", " ")


def test_the_blanked_values_keep_the_length_and_every_word_outside_them():
    text = "ValueError: bad value 'device-side assert' for key 'k'; Cuda failure 'oom'"
    assert unquoted_values(text) == (
        "ValueError: bad value '"
        + " " * len("device-side assert")
        + "' for key ' '; Cuda failure 'oom'"
    )


@given(st.text(alphabet="ab '\"\u2018\u2019:error", max_size=60))
def test_only_characters_inside_quotes_are_blanked(text):
    blanked = unquoted_values(text)
    assert len(blanked) == len(text)
    assert all(b == t or b == " " for b, t in zip(blanked, text, strict=True))
    for quote in "'\"\u2018\u2019":
        assert blanked.count(quote) == text.count(quote)
