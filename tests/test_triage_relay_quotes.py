"""A relay that quotes one of the nine messages, in whichever quotes a paste gives it
(vLLM's straight ones, double ones retyped, curly ones from a web page or a document): triage
names the message's rule and ``explain`` shows the same message's page."""

from __future__ import annotations

import pytest
from helpers import cli

from ppaux.triage import triage_paths

_QUOTES = [("'", "'"), ('"', '"'), ("\u2018", "\u2019"), ("\u201c", "\u201d")]


def _relay(opening: str, closing: str, error: str) -> str:
    return (
        f"RuntimeError: Worker failed with error {opening}{error}{closing}, please check the "
        "stack trace above for the root cause"
    )


@pytest.mark.parametrize(("opening", "closing"), _QUOTES)
def test_triage_reads_the_quoted_message_as_sglangs(tmp_path, opening, closing):
    log = tmp_path / "x.log"
    log.write_text(
        "[2026-12-03 14:56:06 PP0] Decode batch, #running-req: 3\n"
        + _relay(opening, closing, "received a non-tensor auxiliary PP output")
        + "\n",
        encoding="utf-8",
    )
    report = triage_paths([str(log)])
    roots = [f for f in report.findings if f.code in ("PP801", "PP802", "PP809")]
    assert [f.code for f in roots] == ["PP801"]
    assert roots[0].sglang_error == "received a non-tensor auxiliary PP output"


@pytest.mark.parametrize(("opening", "closing"), _QUOTES)
def test_explain_shows_the_quoted_messages_page(opening, closing):
    result = cli("explain", _relay(opening, closing, "received a non-tensor auxiliary PP output"))
    assert result.exit_code == 0, result.output
    assert result.output.startswith("RuntimeError: received a non-tensor auxiliary PP output\n")
    assert "pop_auxiliary_output_from_pp_tensors()" in result.output


def test_explain_shows_a_named_message_quoted_in_double_quotes():
    result = cli("explain", _relay('"', '"', "duplicate auxiliary PP tensor 'logits'"))
    assert result.exit_code == 0, result.output
    assert result.output.startswith("RuntimeError: duplicate auxiliary PP tensor 'logits'\n")


@pytest.mark.parametrize(("opening", "closing"), _QUOTES)
def test_a_relay_quoting_words_that_are_not_a_whole_message_is_no_page(opening, closing):
    # the message cut short inside the quotes: none of the nine, in either command
    result = cli("explain", _relay(opening, closing, "received a non-tensor auxiliary PP"))
    assert result.exit_code == 2
    assert "none of sglang's nine PP messages" in result.output
