"""What a terminal writes around a log's text is taken off before the line is read: a
hyperlink (OSC 8, ``ESC ] 8 ;; URI ESC \\`` ... ``ESC ] 8 ;; ESC \\``, or BEL-ended) around a
frame's file or an exception's type, and colours written with the one-character CSI
(``\\x9b...m``). The root is the one the same log has without them.

Expected values are written here by hand, never computed with triage's code.
"""

from __future__ import annotations

import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths

SITE = "/usr/local/lib/python3.11/site-packages/sglang/srt/sampling/sampling_observer_pp.py"
NON_TENSOR = "received a non-tensor auxiliary PP output"


def _log(file_text: str, exception_text: str) -> str:
    return (
        "[2026-12-03 14:56:07 PP0] Scheduler hit an exception: Traceback (most recent call "
        "last):\n"
        f'  File "{file_text}", line 77, in pop_auxiliary_output_from_pp_tensors\n'
        f'    raise RuntimeError("{NON_TENSOR}")\n'
        f"{exception_text}\n"
    )


def _roots(text: str) -> list[tuple[str, str | None, str | None, str | None]]:
    report = triage_paths(["run.log"], {"run.log": io.BytesIO(text.encode())})
    return [
        (f.code, f.key, f.extra.get("exception"), f.extra.get("kind"))
        for f in report.findings
        if f.code in ("PP801", "PP802", "PP809")
    ]


EXPECTED = [("PP801", "PP0", "RuntimeError", "auxiliary-output")]


def _link(text: str, uri: str, end: str) -> str:
    return f"\x1b]8;;{uri}{end}{text}\x1b]8;;{end}"


def test_the_log_without_marks_has_its_root():
    assert _roots(_log(SITE, f"RuntimeError: {NON_TENSOR}")) == EXPECTED


@pytest.mark.parametrize("end", ["\x1b\\", "\x07"])
def test_hyperlinks_around_the_file_and_the_type_are_taken_off(end):
    text = _log(
        _link(SITE, f"file://{SITE}", end),
        _link("RuntimeError", "https://docs.example/errors", end) + f": {NON_TENSOR}",
    )
    assert _roots(text) == EXPECTED


def test_a_hyperlink_in_caret_notation_is_taken_off():
    text = _log(f"^[]8;;file://{SITE}^[\\{SITE}^[]8;;^[\\", f"RuntimeError: {NON_TENSOR}")
    assert _roots(text) == EXPECTED


@pytest.mark.parametrize("colour", ["31", "1;31", "38;5;196", ""])
def test_eight_bit_csi_colours_are_taken_off(colour):
    text = _log(SITE, f"\x9b{colour}mRuntimeError: {NON_TENSOR}\x9b0m")
    assert _roots(text) == EXPECTED


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    uri=st.text(
        alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters="^"),
        max_size=60,
    ),
    end=st.sampled_from(["\x1b\\", "\x07"]),
)
def test_any_link_target_leaves_the_root_as_it_is(uri, end):
    assert _roots(_log(_link(SITE, uri, end), f"RuntimeError: {NON_TENSOR}")) == EXPECTED


KEY_ERROR = [
    "Traceback (most recent call last):",
    '  File "/opt/train/pipelining/schedules.py", line 1210, in _step_microbatches',
    "    stage = stage_index_to_stage[stage_index]",
    "KeyError: 6",
]


@pytest.mark.parametrize("tag", ["[rank3]:", "[rank3]:[rank3]:"])
def test_torchrun_s_doubled_rank_tag_keeps_the_rank(tag):
    text = "".join(f"{tag} {line}\n" for line in KEY_ERROR)
    assert _roots(text) == [("PP802", "rank 3", "KeyError", "other")]


def test_two_different_rank_tags_are_not_read_as_one():
    text = "".join(f"[rank3]:[rank5]: {line}\n" for line in KEY_ERROR)
    assert ("PP802", "rank 3", "KeyError", "other") not in _roots(text)
