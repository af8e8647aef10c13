"""A relay's words on an exception that carries its failure itself: in its own chain, or in
its own words before the relay's; and a relay quoting an error that holds quotes of its own."""

from __future__ import annotations

import pytest

from ppaux.triage import triage_paths

_AUX_FRAME = (
    '  File "/usr/local/lib/python3.11/site-packages/sglang/srt/managers/scheduler_pp_mixin.py", '
    "line 900, in pop_auxiliary_output_from_pp_tensors\n"
    "    raise RuntimeError(msg)\n"
)
_RELAY_FRAME = (
    '  File "/v/vllm/v1/executor/multiproc_executor.py", line 394, in get_response\n'
    "    raise RuntimeError(\n"
)
_CAUSE = "\nThe above exception was the direct cause of the following exception:\n\n"
_HEADER = (
    "[2026-12-03 14:56:07 PP0] Scheduler hit an exception: Traceback (most recent call last):\n"
)
_PLAIN = "Traceback (most recent call last):\n"
_RELAY_LINE = (
    "RuntimeError: WorkerProc initialization failed due to an exception in a background "
    "process. See stack trace for root cause.\n"
)


def _root(tmp_path, text):
    log = tmp_path / "x.log"
    log.write_text(text)
    report = triage_paths([str(log)])
    assert not report.problems
    (root,) = [f for f in report.findings if f.code in ("PP801", "PP802", "PP809")]
    return root


def test_a_relay_whose_chain_holds_one_of_the_nine_is_that_failure(tmp_path):
    text = (
        _HEADER
        + _AUX_FRAME
        + "RuntimeError: received a non-tensor auxiliary PP output\n"
        + _CAUSE
        + _PLAIN
        + _RELAY_FRAME
        + _RELAY_LINE
    )
    root = _root(tmp_path, text)
    assert root.code == "PP801"
    assert "received a non-tensor auxiliary PP output (in the chain of" in root.message


@pytest.mark.parametrize(
    ("cause", "kind"),
    [
        ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "memory"),
        ("RuntimeError: CUDA error: an illegal memory access was encountered", "shape-kernel"),
    ],
)
def test_a_relay_whose_chain_holds_a_failure_of_a_known_kind_is_that_failure(tmp_path, cause, kind):
    text = _PLAIN + '  File "/srv/w.py", line 3, in run\n    go()\n' + cause + "\n"
    text += _CAUSE + _PLAIN + _RELAY_FRAME + _RELAY_LINE
    root = _root(tmp_path, text)
    assert root.code == "PP802"
    assert root.extra["kind"] == kind


def test_a_relay_whose_chain_holds_a_failure_of_no_kind_stays_a_relay(tmp_path):
    # a pipe that closed while the relay waited says nothing of the worker's failure
    text = _PLAIN + '  File "/srv/w.py", line 3, in wait\n    recv()\n' + "EOFError\n"
    text += _CAUSE + _PLAIN + _RELAY_FRAME + _RELAY_LINE
    root = _root(tmp_path, text)
    assert root.code == "PP809"
    assert root.extra["no_root"] == "process-died"


def test_one_of_the_nine_followed_by_a_relays_words_is_that_message(tmp_path):
    text = (
        _HEADER
        + _AUX_FRAME
        + "RuntimeError: received a non-tensor auxiliary PP output; see the stack trace above "
        "for the root cause\n"
    )
    root = _root(tmp_path, text)
    assert root.code == "PP801"
    assert root.extra["ranks"] == ["PP0"]


def test_a_relays_words_after_words_of_no_kind_stay_a_relay(tmp_path):
    text = "[2026-12-03 14:56:07 PP0 TP0] RuntimeError: Engine core initialization failed. "
    text += "See root cause above. Failed core proc(s): {}\n"
    root = _root(tmp_path, text)
    assert root.code == "PP809"
    assert root.extra["no_root"] == "process-died"


def test_a_relay_quoting_a_message_with_quotes_of_its_own_is_that_message(tmp_path):
    prefix = "(EngineCore pid=100) ERROR 07-15 21:01:01 [core.py:1240] "
    lines = [
        "Traceback (most recent call last):",
        '  File "/v/vllm/v1/executor/multiproc_executor.py", line 394, in get_response',
        "    raise RuntimeError(",
        "RuntimeError: Worker failed with error 'auxiliary PP output 'logits' is not a tensor', "
        "please check the stack trace above for the root cause",
    ]
    root = _root(tmp_path, "".join(prefix + line + "\n" for line in lines))
    assert root.code == "PP801"
    assert root.message.count("auxiliary PP output 'logits' is not a tensor") == 2
    assert "(quoted by RuntimeError: Worker failed with error" in root.message
