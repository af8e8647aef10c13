"""``ppaux explain`` finds one of the nine messages as pasted inside an envelope: a Loki row,
a kubectl prefix, a JSON record's escaped quotes, a message wrapped over two lines."""

from __future__ import annotations

import json

import pytest
from helpers import cli
from hypothesis import given
from hypothesis import strategies as st

from ppaux.sglang import MESSAGES, search_pasted

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
