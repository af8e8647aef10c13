"""A flattened traceback pasted as inline code (a comment's backtick opens the span before its
header): the span's closing backtick ends it, and the comment's words after it are never the
exception's message."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths
from ppaux.triage.flattened import unflatten

_LINE = (
    "> `2025-11-03 11:53:19 TP1 PP0] Scheduler hit an exception: Traceback (most recent call "
    'last): File "/srv/sglang/python/sglang/srt/managers/scheduler.py", line 2795, in '
    "run_scheduler_process scheduler.event_loop_pp_disagg_prefill() AttributeError: "
    "'Scheduler' object has no attribute 'get_rids'`{after}"
)


def test_the_comment_after_the_span_is_not_the_message(tmp_path):
    log = tmp_path / "comment.log"
    log.write_text(_LINE.format(after=" @someone the new code has this bug?") + "\n")
    (root,) = [f for f in triage_paths([str(log)]).findings if f.code == "PP802"]
    assert root.extra["exception"] == "AttributeError"
    assert root.extra["message"] == "'Scheduler' object has no attribute 'get_rids'"


@settings(max_examples=50, deadline=None)
@given(words=st.text(st.characters(blacklist_characters="`\n\r"), max_size=60))
def test_any_words_after_the_span_stay_out_of_the_traceback(words):
    lines = unflatten(_LINE.format(after=words))
    assert lines is not None
    assert lines[-1] == "AttributeError: 'Scheduler' object has no attribute 'get_rids'"


@given(
    message=st.sampled_from(
        ["'NoneType' object has no attribute 'size'", "expected `x` to be set", "bad value"]
    )
)
def test_the_close_of_an_inline_code_span_opened_lines_above_is_no_part_of_the_message(
    message,
):
    # a paste as inline code: the span opens before the first frame and closes after the
    # exception line; a message's own code spans stay
    with tempfile.TemporaryDirectory() as where:
        log = Path(where) / "span.log"
        log.write_text(
            '`File "/workspace/model.py", line 219, in forward\n'
            "    rotary_seq_len = transformer_input.size(0)\n"
            f"AttributeError: {message}`\n"
        )
        (root,) = [f for f in triage_paths([str(log)]).findings if f.code == "PP802"]
    assert root.extra is not None and root.extra["message"] == message
