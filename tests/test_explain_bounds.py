"""explain on hostile arguments: a bounded did-you-mean, and a pasted bidi override escaped in
JSON as in text."""

from __future__ import annotations

import json
import time

from helpers import cli

from ppaux_cli.commands.explain import _unknown


def _cpu(call):  # type: ignore[no-untyped-def]
    start = time.process_time()
    result = call()
    return result, time.process_time() - start


def test_a_long_sentence_costs_no_more_than_a_short_one():
    message, seconds = _cpu(lambda: _unknown("bad message " * 9000))
    assert "none of sglang's nine PP messages" in message
    assert seconds < 1.0, seconds


def test_a_long_word_costs_no_more_than_a_short_one():
    for value in ("x" * 100_000, "not-a-rule" * 10_000):
        message, seconds = _cpu(lambda v=value: _unknown(v))
        assert message.startswith("unknown rule")
        assert seconds < 1.0, (value[:10], seconds)


def test_the_hint_still_finds_a_near_miss():
    assert "did you mean 'PP110'?" in _unknown("PP11")
    assert "did you mean 'torch-refuses'?" in _unknown("torch-refuse")


def test_a_bidi_override_in_a_pasted_name_is_escaped_in_json_as_in_text():
    pasted = "auxiliary PP output 'sc\u202eores' is not a tensor"
    page = json.loads(cli("explain", pasted, "--format", "json").stdout)
    assert page["name"] == "sc\\u202eores"
    text = cli("explain", pasted).stdout
    assert "\u202e" not in text and "sc\\u202eores" in text
