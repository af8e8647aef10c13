"""``ppaux explain`` and ``ppaux triage`` read an exception line alike, whatever its shape: no
space after the colon, the message inside quotes, a line of a Python 3.11 exception group
behind its ``  | `` margin."""

from __future__ import annotations

import json
import traceback
from pathlib import Path

import pytest
from helpers import cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppaux.sglang import MESSAGES
from ppaux.triage import triage_paths

#: How the exception line writes ``RuntimeError`` and its message.
_SHAPES = {
    "plain": "RuntimeError: {}",
    "no-space": "RuntimeError:{}",
    "two-spaces": "RuntimeError:  {}",
    "double-quoted": 'RuntimeError: "{}"',
    "single-quoted": "RuntimeError: '{}'",
}
_PREFIX = "[2026-12-01 10:00:01 PP1 TP0] "
_SCHEDULER = '  File "/opt/sglang/srt/managers/scheduler.py", line 2412, in run_scheduler_process'
_TRANSPORT = (
    '  File "/opt/sglang/srt/sampling/sampling_observer_pp.py", line 88, in '
    "add_auxiliary_output_to_pp_tensors"
)


def _traceback(exception_line: str) -> list[str]:
    """A scheduler's traceback, as sglang logs it, that ends with ``exception_line``."""
    return [
        f"{_PREFIX}Scheduler hit an exception: Traceback (most recent call last):",
        _SCHEDULER,
        "    scheduler.event_loop_pp()",
        _TRANSPORT,
        "    raise RuntimeError(message)",
        exception_line,
        "",
    ]


def _group(exception_line: str) -> list[str]:
    """The same failure inside an exception group (a TaskGroup's, one sub-exception), as
    Python 3.11's traceback module writes it: the sub-exception's lines behind ``    | ``."""
    return [
        f"{_PREFIX}Scheduler hit an exception:   + Exception Group Traceback (most recent "
        "call last):",
        f"  | {_SCHEDULER}",
        "  |     scheduler.event_loop_pp()",
        "  | ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)",
        "  +-+---------------- 1 ----------------",
        "    | Traceback (most recent call last):",
        f"    | {_TRANSPORT}",
        "    |     raise RuntimeError(message)",
        f"    | {exception_line}",
        "    +------------------------------------",
        "",
    ]


def _log(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "server.log"
    body = ["[2026-12-01 10:00:00 PP1 TP0] Load weight end.", *lines]
    body.append("[2026-12-01 10:00:02 PP0 TP0] Decode batch. #running-req: 1")
    path.write_text("\n".join(body) + "\n", encoding="utf-8")
    return path


def _triage_message(path: Path) -> str | None:
    """The id of the nine messages triage names as the root (PP801), or None."""
    findings = triage_paths([str(path)]).findings
    roots = [f for f in findings if f.code in ("PP801", "PP802")]
    assert roots, [f.code for f in findings]
    for found in roots:
        if found.code == "PP801":
            return str(found.extra["sglang_message"])
    return None


def _explain_message(line: str) -> str | None:
    result = cli("explain", "-f", "json", line)
    if result.exit_code == 2:
        return None
    assert result.exit_code == 0, result.output
    return str(json.loads(result.output)["message_id"])


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    index=st.integers(0, len(MESSAGES) - 1),
    name=st.sampled_from(["scores", "it's", "logits_0"]),
    shape=st.sampled_from(sorted(_SHAPES)),
    grouped=st.booleans(),
)
def test_explain_and_triage_name_the_same_message_whatever_the_line_s_shape(
    tmp_path, index, name, shape, grouped
):
    message = MESSAGES[index]
    text = message.format(name) if message.takes_name else message.text
    line = _SHAPES[shape].format(text)
    pasted = f"    | {line}" if grouped else line
    assert _explain_message(pasted) == message.id, pasted
    lines = _group(line) if grouped else _traceback(line)
    assert _triage_message(_log(tmp_path, lines)) == message.id, lines


@pytest.mark.parametrize("shape", sorted(_SHAPES))
def test_the_words_under_another_type_are_no_one_s_in_any_shape(tmp_path, shape):
    line = _SHAPES[shape].replace("RuntimeError", "ValueError").format(MESSAGES[7].text)
    assert _explain_message(line) is None
    assert _triage_message(_log(tmp_path, _traceback(line))) is None


@pytest.mark.parametrize(
    "line",
    [
        'RuntimeError: "received a non-tensor auxiliary PP output from stage 3"',
        "RuntimeError: 'received a non-tensor auxiliary PP output\"",
        "RuntimeError: x 'received a non-tensor auxiliary PP output'",
    ],
)
def test_quotes_count_only_around_the_whole_message(tmp_path, line):
    """A quote closed after more words than the message, quotes that do not pair, a message
    after other words: not sglang's message, for explain and triage alike."""
    assert _explain_message(line) is None
    assert _triage_message(_log(tmp_path, _traceback(line))) is None


def test_a_one_line_record_without_a_space_after_the_colon_is_that_rank_s_failure(tmp_path):
    path = _log(tmp_path, [f"{_PREFIX}RuntimeError:{MESSAGES[4].format('scores')}"])
    findings = triage_paths([str(path)]).findings
    root = next(f for f in findings if f.code == "PP801")
    assert root.extra["ranks"] == ["PP1 TP0"]
    assert root.extra["sglang_message"] == "add-duplicate"


def _real_group(messages: list[str]) -> str:
    """Python's own text of an exception group holding a RuntimeError per message."""
    errors = []
    for message in messages:
        try:
            raise RuntimeError(message)
        except RuntimeError as error:
            errors.append(error)
    try:
        raise ExceptionGroup("unhandled errors in a TaskGroup", errors)
    except ExceptionGroup as group:
        return "".join(traceback.format_exception(group))


def test_a_group_from_python_s_traceback_module_is_read_to_its_sub_exception(tmp_path):
    text = _real_group([MESSAGES[7].text])
    assert "  | RuntimeError: received a non-tensor" in text  # the shape under test
    path = _log(tmp_path, [f"{_PREFIX}Scheduler hit an exception: {text}"])
    findings = triage_paths([str(path)]).findings
    root = next(f for f in findings if f.code == "PP801")
    assert root.extra["sglang_message"] == "pop-non-tensor"
    assert root.extra["ranks"] == ["PP1 TP0"]
    assert root.extra["line"] == 2
    assert root.extra["exception"] == "RuntimeError"
    assert "PP810" not in {f.code for f in findings}  # not taken for a cut traceback


def test_each_sub_exception_is_read_and_the_group_ends_at_its_closing_rule(tmp_path):
    text = _real_group(["the first stage could not start", MESSAGES[0].text])
    assert "+---------------- 2 ----------------" in text
    lines = [f"{_PREFIX}Scheduler hit an exception: {text}"]
    lines.append("message line that is no part of the group")
    path = _log(tmp_path, lines)
    findings = triage_paths([str(path)]).findings
    root = next(f for f in findings if f.code == "PP801")
    assert root.extra["sglang_message"] == "add-unsupported"
    assert root.extra["message"] == MESSAGES[0].text  # the line after the group is not its


def test_a_nested_group_s_leaf_is_read(tmp_path):
    lines = [
        f"{_PREFIX}Scheduler hit an exception:   + Exception Group Traceback (most recent "
        "call last):",
        f"  | {_SCHEDULER}",
        "  | ExceptionGroup: outer (1 sub-exception)",
        "  +-+---------------- 1 ----------------",
        "    | ExceptionGroup: inner (1 sub-exception)",
        "    +-+---------------- 1 ----------------",
        "      | Traceback (most recent call last):",
        f"      | {_TRANSPORT}",
        f"      | RuntimeError: {MESSAGES[1].text}",
        "      +------------------------------------",
        "    +------------------------------------",
    ]
    assert _triage_message(_log(tmp_path, lines)) == MESSAGES[1].id


@pytest.mark.parametrize("line", ["Exception:boom", "Exception: boom", "Exception:  boom"])
def test_a_bare_exception_without_a_space_is_read_as_any_other(tmp_path, line):
    path = _log(tmp_path, _traceback(line))
    roots = [f for f in triage_paths([str(path)]).findings if f.code == "PP802"]
    assert [(f.extra["exception"], "cut off" in f.message) for f in roots] == [("Exception", False)]


def _raised(error: BaseException) -> BaseException:
    try:
        raise error
    except BaseException as caught:
        return caught


def _two(first: str, second: str, form: str) -> str:
    """Python's own text of a group or a chain holding ``first`` then ``second`` (in the text's
    order) as sglang's RuntimeErrors."""
    one, two = RuntimeError(first), RuntimeError(second)
    if form == "group":
        built = _raised(ExceptionGroup("unhandled errors in a TaskGroup", [one, two]))
    elif form == "cause":
        two.__cause__ = _raised(one)
        built = _raised(two)
    elif form == "context":
        two.__context__ = _raised(one)
        built = _raised(two)
    elif form == "cause-into-group":
        group = ExceptionGroup("stage tasks failed", [two])
        group.__cause__ = _raised(one)
        built = _raised(group)
    elif form == "cause-out-of-group":
        two.__cause__ = _raised(ExceptionGroup("stage tasks failed", [one]))
        built = _raised(two)
    elif form == "context-out-of-group":
        closed = ConnectionResetError("Connection closed by peer")
        two.__context__ = _raised(ExceptionGroup("stage tasks failed", [closed, one]))
        built = _raised(two)
    elif form == "cause-into-group-of-collateral":
        closed = RuntimeError("[gloo/transport/tcp/pair.cc:553] Connection closed by peer")
        group = ExceptionGroup("stage tasks failed", [closed, two])
        group.__cause__ = _raised(one)
        built = _raised(group)
    elif form == "nested-among-others":
        closed = ConnectionResetError("Connection closed by peer")
        inner = _raised(ExceptionGroup("inner", [closed, one]))
        built = _raised(ExceptionGroup("outer", [ValueError("x"), inner, two]))
    else:  # each in a group of its own, nested in one
        inner = [_raised(ExceptionGroup("inner", [e])) for e in (one, two)]
        built = _raised(ExceptionGroup("outer", inner))
    return "".join(traceback.format_exception(built))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    pair=st.lists(st.integers(0, len(MESSAGES) - 1), min_size=2, max_size=2, unique=True),
    form=st.sampled_from(
        [
            "group",
            "cause",
            "context",
            "cause-into-group",
            "nested-groups",
            "cause-out-of-group",
            "context-out-of-group",
            "cause-into-group-of-collateral",
            "nested-among-others",
        ]
    ),
)
def test_of_two_messages_explain_and_triage_name_the_first_the_text_shows(tmp_path, pair, form):
    """The rule, in both: the first of the nine the traceback shows (in a chain the innermost
    cause, which Python prints first; in a group the first sub-exception), whether the chain
    leads into a group or out of one, and in groups nested among other sub-exceptions; and
    triage's headline begins with that exception, the one its rule and kind are read from."""
    first, second = (MESSAGES[k] for k in pair)
    texts = [m.format("scores") if m.takes_name else m.text for m in (first, second)]
    text = _two(*texts, form)
    assert text.index(texts[0]) < text.index(texts[1])  # the text's order, as built
    result = cli("explain", "-", "-f", "json", input=text)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["message_id"] == first.id
    path = _log(tmp_path, [f"{_PREFIX}Scheduler hit an exception: {text}"])
    assert _triage_message(path) == first.id, text
    (root,) = [f for f in triage_paths([str(path)]).findings if f.code == "PP801"]
    headline = root.message.split(f"{path}:{root.extra['line']}): ", 1)[1]
    assert headline.startswith(f"RuntimeError: {texts[0]}"), headline
    assert root.extra["message"] == texts[0]


@pytest.mark.parametrize("form", ["cause", "context"])
def test_the_words_under_another_type_first_do_not_hide_sglang_s_message_after(tmp_path, form):
    """A chain whose cause holds the words of one message under ValueError (not sglang's) and
    whose last exception is sglang's RuntimeError with another: both name the latter."""
    cause = _raised(ValueError(MESSAGES[7].text))
    last = RuntimeError(MESSAGES[4].format("scores"))
    setattr(last, f"__{form}__", cause)
    text = "".join(traceback.format_exception(_raised(last)))
    result = cli("explain", "-", "-f", "json", input=text)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["message_id"] == "add-duplicate"
    path = _log(tmp_path, [f"{_PREFIX}Scheduler hit an exception: {text}"])
    assert _triage_message(path) == "add-duplicate"
