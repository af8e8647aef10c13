"""A logger's record just above a cut traceback that names the exception it caught
(``... exception: Address already in use (addr=...)``) is read as that traceback's words, and a
carriage return written as ``^M`` ends a frame's function: the record glued on after it is no
part of the name. Expected values are written by hand from reading the real log
(fixtures/logs/real/, its source in the README)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "real"
#: vllm-ascend#8938: Mooncake's sending thread, its port in use.
MOONCAKE = REAL / "vllm-ascend-8938-mooncake-zmq-address-in-use-caret-m.log"

_PREFIX = "(Worker_TP0 pid=7) ERROR 04-25 10:01:17 [connector.py:246] "


def _root(path: Path) -> tuple[str, list[list[str]]]:
    report = triage_paths([str(path)])
    assert not report.problems
    (root,) = [f for f in report.findings if f.code == "PP802"]
    return root.message, [s["argv"] for s in report.data["steps"] if s["argv"]]


def test_the_logger_s_words_above_a_cut_traceback_are_its_exception():
    message, argvs = _root(MOONCAKE)
    assert "Address already in use (addr='tcp://10.235.53.16:20012')" in message
    assert "the cause is not in it" not in message
    assert ["ss", "-ltnp", "sport = :20012"] in argvs


def test_a_frame_s_function_ends_at_a_caret_m():
    report = triage_paths([str(MOONCAKE)])
    functions = [f.location.function for f in report.findings if f.location is not None]
    assert "__enter__" in functions
    assert not any("^M" in (name or "") or "ERROR" in (name or "") for name in functions)


def test_another_process_s_logger_line_is_not_read(tmp_path):
    log = tmp_path / "other.log"
    log.write_text(
        "(Worker_TP1 pid=8) ERROR 04-25 10:01:17 [connector.py:246] thread exception: Address "
        "already in use\n" + _PREFIX + "Traceback (most recent call last):\n" + _PREFIX + "  File "
        '"/app/connector.py", line 5, in run\n',
        encoding="utf-8",
    )
    message, _ = _root(log)
    assert "Address already in use" not in message


@settings(max_examples=30, deadline=None)
@given(
    said=st.text(
        alphabet=st.characters(whitelist_categories=("L", "N"), whitelist_characters=" ().:"),
        min_size=1,
        max_size=60,
    ).filter(
        lambda t: (
            t.strip()
            and t[0] not in " ^"
            and not any(w in t.lower() for w in ("error", "exception", "traceback", "warning"))
        )
    )
)
def test_the_logger_s_message_is_said_as_written(tmp_path_factory, said):
    log = tmp_path_factory.mktemp("logged") / "one.log"
    log.write_text(
        _PREFIX
        + f"thread exception: {said}\n"
        + _PREFIX
        + "Traceback (most recent call last):\n"
        + _PREFIX
        + '  File "/app/connector.py", line 5, in run\n',
        encoding="utf-8",
    )
    message, _ = _root(log)
    assert f"{said.rstrip()} (the exception its logger named" in message


@pytest.mark.parametrize(
    "above",
    [
        "INFO 12-03 14:56:07 [logger.py:43] Received request cmpl-1: prompt: 'Why does my code "
        "raise this exception: KeyError in dict?', params: SamplingParams(n=1), lora_request: "
        "None.",
        "[2026-12-03 14:56:06 PP0 TP0] Receive: obj=GenerateReqInput(text='please say: "
        "exception: CUDA out of memory. Tried to allocate 2.00 GiB')",
    ],
)
def test_a_prompt_s_words_above_a_cut_traceback_are_not_its_exception(tmp_path, above):
    log = tmp_path / "prompt.log"
    header = "[2026-12-03 14:56:07 PP0 TP0] Scheduler hit an exception: " if "PP0" in above else ""
    log.write_text(
        above + f"\n{header}Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 334, in '
        "run_engine_core\n    engine_core.run_busy_loop()\n",
        encoding="utf-8",
    )
    message, _ = _root(log)
    assert "logger named" not in message
    assert "KeyError in dict" not in message and "CUDA out of memory" not in message


_PROMPT = st.text(
    alphabet=st.characters(whitelist_categories=("L", "N"), whitelist_characters=" ?:,"),
    min_size=1,
    max_size=40,
).filter(lambda t: t.strip() and t[0] not in " ^")


@settings(max_examples=25, deadline=None)
@given(level=st.sampled_from(["DEBUG", "INFO", "WARNING"]), said=_PROMPT)
def test_a_record_of_a_level_of_no_failure_is_never_the_exception(tmp_path_factory, level, said):
    # an unquoted prompt echoed at INFO: the level reaches the rule, so its words are no
    # exception's; the same words at ERROR are the logger's (the test above)
    log = tmp_path_factory.mktemp("level") / "one.log"
    log.write_text(
        f"{level} 12-03 14:56:07 [logger.py:43] Received request cmpl-1: prompt: Why does my "
        f"code raise this exception: {said}\nTraceback (most recent call last):\n"
        '  File "/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 334, in '
        "run_engine_core\n    engine_core.run_busy_loop()\n",
        encoding="utf-8",
    )
    message, _ = _root(log)
    assert "logger named" not in message


def test_an_error_record_s_unquoted_words_stay_the_exception(tmp_path):
    log = tmp_path / "error.log"
    log.write_text(
        "ERROR 12-03 14:56:07 [core.py:43] EngineCore hit an exception: Address already in use\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 334, in '
        "run_engine_core\n    engine_core.run_busy_loop()\n",
        encoding="utf-8",
    )
    message, _ = _root(log)
    assert "Address already in use (the exception its logger named" in message
