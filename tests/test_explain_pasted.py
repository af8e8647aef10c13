"""``ppaux explain`` finds one of the nine messages as pasted inside an envelope: a Loki row,
a kubectl prefix, a JSON record's escaped quotes, a message wrapped over two lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppaux.sglang import MESSAGES, search_pasted
from ppaux.triage import triage_paths

NON_TENSOR = "received a non-tensor auxiliary PP output"


@pytest.mark.parametrize(
    "pasted",
    [
        f'2026-12-03T14:56:07.000016Z\t{{namespace="llm", pod="p"}}\tRuntimeError: {NON_TENSOR}',
        f"[pod/sglang-0/sglang] [2026-12-03 14:56:07 PP1] RuntimeError: {NON_TENSOR}",
        json.dumps({"line": f"RuntimeError: {NON_TENSOR}", "ts": "1764773767000016000"}),
        "[2026-12-03 14:56:07 PP1] RuntimeError: received a non-tensor auxiliary P\nP output",
        "RuntimeError: received a non-tensor auxiliary PP \noutput",
    ],
)
def test_explain_finds_the_message_as_pasted(pasted):
    result = cli("explain", "-", input=pasted + "\n")
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"RuntimeError: {NON_TENSOR}")


def test_explain_finds_a_quoted_name_inside_a_json_record():
    record = json.dumps({"line": 'RuntimeError: auxiliary PP output "it\'s" is not a tensor'})
    result = cli("explain", record)
    assert result.exit_code == 0, result.output
    assert result.output.startswith('RuntimeError: auxiliary PP output "it\'s" is not a tensor')


@given(
    index=st.integers(0, len(MESSAGES) - 1),
    cut=st.integers(1, 60),
    space=st.booleans(),
)
def test_any_message_wrapped_once_is_found(index, cut, space):
    message = MESSAGES[index]
    text = message.template.replace("{name!r}", "'scores'")
    cut = min(cut, len(text) - 1)
    if space and text[cut - 1] != " ":
        return  # a cut at a space keeps the space at the end of the first row
    wrapped = f"RuntimeError: {text[:cut]}\n{text[cut:]}"
    found = search_pasted(wrapped)
    assert found is not None and found.message.id == message.id


_LOG = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "sglang-aux-list.log"
_ROOT_LINE = f"RuntimeError: {NON_TENSOR}"


def _go_json(text: str) -> str:
    """``text`` as Go's JSON encoder writes a string (Loki, Grafana): quotes and angle
    brackets as ``\\u`` escapes."""
    return json.dumps(text).replace("'", "\\u0027").replace("<", "\\u003c")


def _triage_says_sglang_s(tmp_path: Path, line: str, as_json: bool) -> bool:
    """Whether triage, on the fixture's log with its root's exception line replaced by
    ``line``, names one of the nine messages (PP801)."""
    lines = _LOG.read_text(encoding="utf-8").splitlines()
    assert _ROOT_LINE in lines
    lines = [line if text == _ROOT_LINE else text for text in lines]
    if as_json:
        lines = [
            f'{{"ts": "{1764773767000000000 + n}", "line": {_go_json(text)}}}'
            for n, text in enumerate(lines)
        ]
    path = tmp_path / "sglang.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    codes = {f.code for f in triage_paths([str(path)]).findings}
    assert codes & {"PP801", "PP802", "PP809"}, codes
    return "PP801" in codes


def _explain_says_sglang_s(line: str, as_json: bool) -> bool:
    pasted = f'{{"line": {_go_json(line)}}}' if as_json else line
    result = cli("explain", pasted)
    assert result.exit_code in (0, 2), result.output
    return result.exit_code == 0


@pytest.mark.parametrize("as_json", [False, True])
@pytest.mark.parametrize(
    "line",
    [
        "ValueError: auxiliary PP output 'scores' is not a tensor",
        "RuntimeError: auxiliary PP output 'scores' is not a tensor",
        f"TypeError: {NON_TENSOR}",
        f"torch.distributed.DistBackendError: {NON_TENSOR}",
    ],
)
def test_explain_and_triage_agree_on_whether_a_line_is_sglang_s(tmp_path, line, as_json):
    sglang_s = line.startswith("RuntimeError")
    assert _explain_says_sglang_s(line, as_json) is sglang_s
    assert _triage_says_sglang_s(tmp_path, line, as_json) is sglang_s


def test_explain_says_what_the_words_of_a_message_under_another_type_are():
    result = cli("explain", "ValueError: auxiliary PP output 'scores' is not a tensor")
    assert result.exit_code == 2
    assert "'ValueError' raised the words of 'add-not-tensor'" in result.output
    assert "sglang's RuntimeError: none of its nine PP messages" in result.output
    assert "'ppaux triage'" in result.output


def test_explain_decodes_the_escapes_of_a_pasted_json_record():
    record = '{"line":"RuntimeError: auxiliary PP output \\u0027scores\\u0027 is not a tensor"}'
    result = cli("explain", record)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("RuntimeError: auxiliary PP output 'scores' is not a tensor")


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    index=st.integers(0, len(MESSAGES) - 1),
    raiser=st.sampled_from(
        ["RuntimeError", "ValueError", "TypeError", "AssertionError", "torch.OutOfMemoryError"]
    ),
    as_json=st.booleans(),
)
def test_explain_and_triage_agree_on_any_message_under_any_type(tmp_path, index, raiser, as_json):
    text = MESSAGES[index].template.replace("{name!r}", "'scores'")
    line = f"{raiser}: {text}"
    explained = _explain_says_sglang_s(line, as_json)
    assert explained is (raiser == "RuntimeError")
    assert _triage_says_sglang_s(tmp_path, line, as_json) is explained


#: How a line is written in a log as is (not inside a JSON record): its quotes as a JSON
#: string's escapes (a record's text pasted without its envelope), behind a log's prefix.
_WRITTEN = {
    "plain": lambda line: line,
    "u0027": lambda line: line.replace("'", "\\u0027"),
    "escaped-double-quote": lambda line: line.replace("'", '\\"'),
    "prefixed": lambda line: f"[2026-12-03 14:56:07 PP1] {line}",
    "prefixed-u0027": lambda line: f"[2026-12-03 14:56:07 PP1] {line}".replace("'", "\\u0027"),
}


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    index=st.integers(0, len(MESSAGES) - 1),
    raiser=st.sampled_from(["RuntimeError", "ValueError", "builtins.RuntimeError", "KeyError"]),
    inner=st.sampled_from(["", "wrapped: ", "RuntimeError: "]),
    written=st.sampled_from(sorted(_WRITTEN)),
)
def test_explain_and_triage_decide_alike_however_the_line_is_escaped(
    tmp_path, index, raiser, inner, written
):
    """One decision: a RuntimeError whose message begins with one of the nine, its quotes as
    written or as a JSON string's escapes, is sglang's for explain and triage alike; the same
    words under another type, or after other words, are not."""
    text = MESSAGES[index].template.replace("{name!r}", "'scores'")
    line = _WRITTEN[written](f"{raiser}: {inner}{text}")
    sglang_s = raiser.endswith("RuntimeError") and inner == ""
    assert _explain_says_sglang_s(line, False) is sglang_s, line
    path = tmp_path / "pasted.log"  # the line alone, as pasted into a file
    path.write_text(line + "\n", encoding="utf-8")
    codes = {f.code for f in triage_paths([str(path)]).findings}
    assert codes & {"PP801", "PP802"}, (line, codes)
    assert ("PP801" in codes) is sglang_s, line


def test_the_words_after_another_type_and_other_words_are_that_type_s():
    result = cli("explain", f"ValueError: wrapped: {NON_TENSOR}")
    assert result.exit_code == 2
    assert "'ValueError' raised the words of 'pop-non-tensor'" in result.output


@pytest.mark.parametrize(
    "raiser",
    ["ValueError", "torch.distributed.DistBackendError", "a.b.c.d.e.f.g.VeryLongNamedCustomError"],
)
def test_the_headline_of_words_under_another_type_stays_within_200_characters(raiser):
    result = cli("explain", f"{raiser}: auxiliary PP output 'scores' is not a tensor")
    assert result.exit_code == 2
    headline = result.output.splitlines()[0]
    assert headline.startswith("ppaux: error: ")
    assert len(headline) <= 200, headline
    assert "'add-not-tensor'" in headline
    assert "none of its nine PP messages" in headline
