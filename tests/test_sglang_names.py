"""sglang's nine transport messages, spelled once in ppaux.sglang.messages: the spelling against the
release wheels' own code, the format function and the matcher that recognises a pasted message."""

from __future__ import annotations

import ast

import pytest
import wheels
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.sglang import (
    ADD,
    ADD_BAD_NAME,
    ADD_DUPLICATE,
    ADD_EMPTY,
    ADD_NOT_TENSOR,
    ADD_UNSUPPORTED,
    MESSAGES,
    POP,
    POP_NO_OBSERVER,
    POP_NON_TENSOR,
    POP_NOT_RECONSTRUCTED,
    POP_UNSUPPORTED,
    match_message,
    message_by_id,
    search_message,
)
from ppaux.sglang_source import read_transport_source

#: The identifiers are a promise to error pages and to 'ppaux explain': written out here.
STABLE_IDS = [
    "add-unsupported",
    "add-empty",
    "add-bad-name",
    "add-not-tensor",
    "add-duplicate",
    "pop-no-observer",
    "pop-unsupported",
    "pop-non-tensor",
    "pop-not-reconstructed",
]


def _raised_messages(source: bytes) -> list[tuple[str, str]]:
    """(function, message template) for every ``raise RuntimeError(...)`` in the file, in order;
    an f-string's ``{name!r}`` is written back as in the source."""
    found = []
    for function in ast.parse(source).body:
        if not isinstance(function, ast.FunctionDef):
            continue
        for node in ast.walk(function):
            if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)):
                continue
            assert isinstance(node.exc.func, ast.Name) and node.exc.func.id == "RuntimeError"
            (argument,) = node.exc.args
            if isinstance(argument, ast.Constant):
                found.append((function.name, argument.value))
                continue
            assert isinstance(argument, ast.JoinedStr)
            parts = []
            for part in argument.values:
                if isinstance(part, ast.Constant):
                    parts.append(part.value)
                else:
                    assert isinstance(part, ast.FormattedValue)
                    assert isinstance(part.value, ast.Name) and part.conversion == ord("r")
                    parts.append("{" + part.value.id + "!r}")
            found.append((function.name, "".join(parts)))
    found.sort(key=lambda item: item[0] != ADD)  # add's, then pop's, each in source order
    return found


@pytest.mark.wheels
@pytest.mark.parametrize("version", ["0.5.19", "0.5.23"])
def test_the_nine_messages_are_sglangs_own(version):
    source = read_transport_source(wheels.sglang_wheel(version))
    assert _raised_messages(source.code) == [(m.function, m.template) for m in MESSAGES]


def test_identifiers_are_stable_and_found_by_id():
    assert [m.id for m in MESSAGES] == STABLE_IDS
    assert message_by_id("pop-non-tensor") is POP_NON_TENSOR
    assert [m.function for m in MESSAGES] == [ADD] * 5 + [POP] * 4
    with pytest.raises(KeyError):
        message_by_id("non-tensor")


def test_format_spells_the_name_as_sglang_does():
    assert ADD_NOT_TENSOR.format("scores") == "auxiliary PP output 'scores' is not a tensor"
    assert ADD_DUPLICATE.format("it's") == 'duplicate auxiliary PP tensor "it\'s"'
    assert ADD_NOT_TENSOR.format("a\nb") == "auxiliary PP output 'a\\nb' is not a tensor"
    shown = ADD_DUPLICATE.format("x" * 50, lambda name: f"<{len(name)}>")
    assert shown == "duplicate auxiliary PP tensor <50>"
    assert POP_NON_TENSOR.text == "received a non-tensor auxiliary PP output"
    assert [m.takes_name for m in MESSAGES].count(True) == 2
    with pytest.raises(ValueError, match="pop-non-tensor"):
        POP_NON_TENSOR.format("scores")


@pytest.mark.parametrize(
    ("pasted", "expected", "name"),
    [
        ("duplicate auxiliary PP tensor 'scores'", ADD_DUPLICATE, "scores"),
        ("RuntimeError: auxiliary PP output 'scores' is not a tensor", ADD_NOT_TENSOR, "scores"),
        ("  received a non-tensor auxiliary PP output.\n", POP_NON_TENSOR, None),
        ('auxiliary PP output "it\'s" is not a tensor', ADD_NOT_TENSOR, "it's"),
        ("duplicate auxiliary PP tensor 'a\\nb'", ADD_DUPLICATE, "a\nb"),
        ("auxiliary output does not support pipeline-parallel transport", ADD_UNSUPPORTED, None),
        ("auxiliary PP output must contain at least one tensor", ADD_EMPTY, None),
        ("auxiliary PP tensor names must be non-empty strings", ADD_BAD_NAME, None),
        ("received auxiliary PP output without a sampling observer", POP_NO_OBSERVER, None),
        ("sampling observer does not support pipeline-parallel transport", POP_UNSUPPORTED, None),
        ("sampling observer did not reconstruct its PP output", POP_NOT_RECONSTRUCTED, None),
    ],
)
def test_match_recognises_a_pasted_message(pasted, expected, name):
    found = match_message(pasted)
    assert found is not None
    assert found.message is expected
    assert found.name == name


@pytest.mark.parametrize(
    "pasted",
    [
        "duplicate auxiliary PP tensor scores",  # no quotes: not what sglang prints
        "duplicate auxiliary PP tensor 'scores",
        "received a non-tensor auxiliary PP output, then more",
        "ValueError: received a non-tensor auxiliary PP output and something",
        "a non-tensor auxiliary PP output",
        "",
    ],
)
def test_match_refuses_what_is_not_one_message(pasted):
    assert match_message(pasted) is None


def test_search_finds_a_message_inside_a_log_line():
    line = (
        "[2026-01-02 03:04:05 PP0 TP0] Scheduler hit an exception: Traceback ...\n"
        "RuntimeError: duplicate auxiliary PP tensor 'logits'\n"
    )
    found = search_message(line)
    assert found is not None
    assert (found.message, found.name) == (ADD_DUPLICATE, "logits")
    assert line[found.start : found.end] == "duplicate auxiliary PP tensor 'logits'"
    assert search_message("nothing of sglang's here") is None


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_a_long_quoted_name_reads_as_pythons_parser_reads_it(name):
    """Past 64 KiB a name's literal is decoded without Python's parser; what it spells is the
    same string the parser would give."""
    from ppaux.sglang.message_search import _unrepr_long

    literal = repr(name)
    assert _unrepr_long(literal) == name


def test_a_message_with_a_very_long_name_is_matched_with_its_name():
    from ppaux.sglang.message_search import match_message

    name = "k\\u00e9'y" * 20_000 + "é"
    found = match_message(f"duplicate auxiliary PP tensor {name!r}")
    assert found is not None and found.name == name


def test_a_long_name_is_searched_in_memory_that_does_not_grow_with_it():
    """The name's literal is matched without a backtracking stack per character (before: some
    340 bytes a character, 340 MB for a 1 MB name pasted into ``explain``)."""
    import tracemalloc

    from ppaux.sglang.message_search import search_message

    text = "duplicate auxiliary PP tensor '" + "a" * 200_000 + "'"
    tracemalloc.start()
    try:
        found = search_message(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert found is not None and found.name == "a" * 200_000
    assert peak < 8 * len(text), peak


def test_a_pasted_sentence_takes_a_templates_shape_for_did_you_mean():
    from ppaux.sglang import message_shape

    assert (
        message_shape("RuntimeError: auxiliary PP outpt 'x' is not a tensor.")
        == "auxiliary PP outpt {name!r} is not a tensor"
    )
    assert message_shape('duplicate auxiliary PP tensor "a b"') == (
        "duplicate auxiliary PP tensor {name!r}"
    )
    assert message_shape("  received a non-tensor auxiliary PP output...") == (
        "received a non-tensor auxiliary PP output"
    )
