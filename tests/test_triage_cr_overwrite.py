"""An exception line printed over another on one line (a carriage return between them) is read
as a terminal shows it: the later line, where it covers the first. A message a progress bar
overwrote is still kept.

Expected values are written here by hand, never computed with triage's code.
"""

from __future__ import annotations

import io

from ppaux.triage import triage_paths

HEAD = (
    "[2026-12-03 14:56:07 PP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "/env/sglang/srt/managers/scheduler_pp_mixin.py", line 991, in _pp_prep_batch_result\n'
    "    auxiliary_output = pop_auxiliary_output_from_pp_tensors(\n"
)
AUX = "RuntimeError: received a non-tensor auxiliary PP output"


def _root(text: str):
    report = triage_paths(["run.log"], {"run.log": io.BytesIO(text.encode())})
    (root,) = [f for f in report.findings if f.code in ("PP801", "PP802")]
    return root


def test_the_later_exception_line_is_the_one_read():
    root = _root(HEAD + "RuntimeError: all fine\r" + AUX + "\n")
    assert root.code == "PP801", root.message
    assert "all fine" not in root.message


def test_a_message_a_longer_bar_overwrote_is_kept():
    root = _root(
        HEAD + AUX + "\r 10%|#         | 1/10 [00:01<00:09,  1.00it/s] and more text here\n"
    )
    assert root.code == "PP801", root.message
