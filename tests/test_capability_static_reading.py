"""What the source says only where the program does what it says: a transport function bound
again after its ``def`` is not the ``def`` ppaux reads (the verdict is "unknown", a warning, never
"present"), and a call the scheduler can never make (under ``if False:``, ``if TYPE_CHECKING:``,
after a ``return``) is no call."""

from __future__ import annotations

import ast
import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from skew_fixtures import TRANSPORT, copy_tree, fingerprint_set, tree

from ppaux.report import Severity
from ppaux.sglang import ADD, POP, SCHEDULER_FILE
from ppaux.sglang_source import analyse
from ppaux.sglang_source.bindings import rebinding_after
from ppaux.skew import compare_stages, load

NOOP = "def _noop(*args, **kwargs):\n    return None\n"

#: Statements that bind NAME again at module level, each with the words its reason gives.
BINDINGS = [
    ("NAME = _noop\n", "an assignment"),
    ("NAME: object = _noop\n", "an assignment"),
    ("NAME += ()\n", "an assignment"),
    ("(NAME := _noop)\n", "an assignment"),
    ("del NAME\n", "a del"),
    ("if True:\n    def NAME(tensors, output):\n        return None\n", "another def"),
    ("class NAME:\n    pass\n", "another class"),
    ("from os import sep as NAME\n", "an import"),
    ("import os as NAME\n", "an import"),
    ("from os.path import *\n", "an import *"),
    ("for NAME in ():\n    pass\n", "an assignment"),
    ("with open(__file__) as NAME:\n    pass\n", "an assignment"),
    ("try:\n    pass\nexcept Exception as NAME:\n    pass\n", "an except clause"),
    ("match 1:\n    case NAME:\n        pass\n", "a match capture"),
    ('globals()["NAME"] = _noop\n', "an item assignment"),
    ('setattr(sys.modules[__name__], "NAME", _noop)\n', "a setattr call"),
    ("sys.modules[__name__].NAME = _noop\n", "an attribute assignment"),
    ("def _install():\n    global NAME\n    NAME = _noop\n", "a global declaration"),
]

#: Statements after the def that leave NAME as the def made it.
NOT_BINDINGS = [
    "alias = NAME\n",
    '__all__ = ["NAME"]\n',
    "print(NAME)\n",
    "class Holder:\n    NAME = _noop\n",
    "def _local():\n    NAME = _noop\n    return NAME\n",
    "other = [NAME for _ in ()]\n",
    'registry = {"NAME": NAME}\n',
    "_identity = lambda x: x\n",  # lambdas: a body that is one expression, no statement
    "def _helper(key=lambda x: x):\n    return sorted([NAME], key=lambda k: str(k))\n",
    '_DISPATCH = {"a": lambda x: x}\n',
    "NAME: object\n",  # a bare annotation binds nothing
]


def _transport_tree(tmp_path, tail: str):
    root = copy_tree("v0523", tmp_path)
    path = root / TRANSPORT
    path.write_text(path.read_text() + "\nimport sys\n\n" + NOOP + "\n" + tail)
    return root


@pytest.mark.parametrize("name", [ADD, POP])
@pytest.mark.parametrize(
    ("statement", "how"), BINDINGS, ids=[b[1] + str(i) for i, b in enumerate(BINDINGS)]
)
def test_a_transport_function_bound_again_is_unknown_never_present(tmp_path, name, statement, how):
    cap = analyse(str(_transport_tree(tmp_path, statement.replace("NAME", name))))
    assert (cap.transport, cap.match) == ("unknown", "unknown")
    assert cap.sender_checks is None and cap.receiver_checks is None and cap.prefix is None
    reason = cap.unknown["transport"]
    assert f"{name} is bound again at line " in reason and how in reason
    assert reason.startswith(str(tmp_path))


@pytest.mark.parametrize("statement", NOT_BINDINGS)
def test_a_use_or_another_scope_leaves_the_transport_present(tmp_path, statement):
    cap = analyse(str(_transport_tree(tmp_path, statement.replace("NAME", ADD))))
    assert (cap.transport, cap.match) == ("present", "modified")
    assert cap.sender_validates is True and "transport" not in cap.unknown


def test_a_binding_before_the_def_is_the_defs_to_replace(tmp_path):
    root = copy_tree("v0523", tmp_path)
    path = root / TRANSPORT
    text = path.read_text()
    marker = "\n\ndef add_auxiliary_output_to_pp_tensors("
    assert text.count(marker) == 1
    path.write_text(text.replace(marker, f"\n\n{ADD} = print\n{marker}"))
    cap = analyse(str(root))
    assert cap.transport == "present" and cap.sender_validates is True


def test_a_rebound_transport_is_a_warning_in_check_skew_not_a_verdict(tmp_path):
    release = analyse(tree("v0523"))
    fps = [dataclasses.replace(load(p), sglang=release) for p in fingerprint_set("consistent")]
    rebound = analyse(str(_transport_tree(tmp_path, f"{ADD} = _noop\n")))
    fps[3] = dataclasses.replace(fps[3], sglang=rebound)
    report = compare_stages(fps)
    on_last = [f for f in report.findings if f.path.endswith("pp3.json")]
    assert [(f.code, f.severity) for f in on_last] == [("PP319", Severity.WARNING)]
    assert "is bound again at line" in on_last[0].message


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from([b[0] for b in BINDINGS]).map(lambda s: (s, True)),
            st.sampled_from(NOT_BINDINGS).map(lambda s: (s, False)),
        ),
        max_size=5,
    )
)
def test_any_binding_after_the_def_and_only_one_is_found(statements):
    """The property, on the module alone: some statement after the def binds the name again
    exactly when one of those added is a binding, and the line named is the first such one's."""
    head = "import sys\n\n" + NOOP + "\n\ndef NAME(tensors, output):\n    return None\n\n"
    source = head
    first_line = None
    for text, binds in statements:
        if binds and first_line is None:
            first_line = source.count("\n") + 1
        source += text
    module = ast.parse(source.replace("NAME", ADD))
    definition = next(n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == ADD)
    found = rebinding_after(module, ADD, definition)
    if first_line is None:
        assert found is None
    else:
        assert found is not None
        # The name's own line: the statement's first, or the line under an if, def or with.
        assert first_line <= found.line <= first_line + 2


# ----------------------------------------------------------------------------------------------
# Calls the scheduler can never make

CALL = "        add_auxiliary_output_to_pp_tensors(message, auxiliary)\n"


def _scheduler_with(tmp_path, new: str, header: str = ""):
    root = copy_tree("v0523", tmp_path)
    path = root / "sglang" / SCHEDULER_FILE
    text = path.read_text()
    assert text.count(CALL) == 1
    text = text.replace(CALL, new)
    if header:
        text = text.replace("from typing import Any\n", f"from typing import Any\n{header}")
    path.write_text(text)
    return analyse(str(root))


def _guarded(test: str) -> str:
    return f"        if {test}:\n    {CALL}"


DEAD = [
    (_guarded("False"), ""),
    (_guarded("0"), ""),
    (_guarded("None"), ""),
    (_guarded("''"), ""),
    (_guarded("not True"), ""),
    (_guarded("False and batch.flag"), ""),
    (_guarded("TYPE_CHECKING"), "from typing import TYPE_CHECKING\n"),
    (_guarded("typing.TYPE_CHECKING"), "import typing\n"),
    (f"        while False:\n    {CALL}", ""),
    (f"        if True:\n            pass\n        else:\n    {CALL}", ""),
    (f"        return message\n{CALL}", ""),
    (f"        raise RuntimeError('stop')\n{CALL}", ""),
    (
        "        _ = add_auxiliary_output_to_pp_tensors(message, auxiliary) if 0 else None\n",
        "",
    ),
]

LIVE = [
    (_guarded("batch.flag"), ""),
    (_guarded("True"), ""),
    (_guarded("not TYPE_CHECKING"), "from typing import TYPE_CHECKING\n"),
    # A TYPE_CHECKING that is not typing's, or that the module sets itself, may be true.
    (_guarded("TYPE_CHECKING"), "TYPE_CHECKING = batch_flag()\n"),
    (_guarded("TYPE_CHECKING"), "from typing import TYPE_CHECKING\nTYPE_CHECKING = True\n"),
    (f"        if batch.flag:\n            return message\n{CALL}", ""),
    (f"        try:\n            return message\n        finally:\n    {CALL}", ""),
]


@pytest.mark.parametrize(("new", "header"), DEAD)
def test_a_call_in_code_that_never_runs_is_no_call(tmp_path, new, header):
    cap = _scheduler_with(tmp_path, new, header)
    assert cap.scheduler_calls == {"add": False, "pop": True}


@pytest.mark.parametrize(("new", "header"), LIVE)
def test_a_call_that_may_run_is_a_call(tmp_path, new, header):
    cap = _scheduler_with(tmp_path, new, header)
    assert cap.scheduler_calls == {"add": True, "pop": True}


def test_a_check_in_code_that_never_runs_checks_nothing(tmp_path):
    root = copy_tree("v0523", tmp_path)
    path = root / TRANSPORT
    text = path.read_text()
    old = "        if not torch.is_tensor(value):\n"
    assert text.count(old) == 1
    path.write_text(
        text.replace(old, "        if False:\n            pass\n" + old.replace("if", "elif", 1))
    )
    assert analyse(str(root)).sender_checks["tensors"] is True
    path.write_text(text.replace(old, "        if False:\n    " + old + "    "))
    cap = analyse(str(root))
    assert cap.sender_checks["tensors"] is False


@pytest.mark.parametrize("name", [ADD, POP])
def test_a_binding_on_the_imports_own_line_after_a_semicolon_is_after_it(tmp_path, name):
    root = copy_tree("v0523", tmp_path)
    path = root / "sglang" / SCHEDULER_FILE
    text = path.read_text()
    end = "    pop_auxiliary_output_from_pp_tensors,\n)\n"
    assert text.count(end) == 1
    path.write_text(text.replace(end, end[:-1] + f"; {name} = print\n"))
    cap = analyse(str(root))
    assert cap.scheduler_calls is None
    assert f"{name} is bound again at line" in cap.unknown["scheduler_calls"]


@pytest.mark.parametrize("name", [ADD, POP])
def test_the_scheduler_binding_a_transport_name_again_makes_its_calls_unknown(tmp_path, name):
    root = copy_tree("v0523", tmp_path)
    path = root / "sglang" / SCHEDULER_FILE
    path.write_text(path.read_text() + f"\n{name} = print\n")
    cap = analyse(str(root))
    assert cap.scheduler_calls is None
    assert f"{name} is bound again at line" in cap.unknown["scheduler_calls"]
    assert "after its import at line" in cap.unknown["scheduler_calls"]


@pytest.mark.parametrize(
    ("spelling", "header"),
    [
        # NFKC makes a fullwidth letter the ASCII one: the name is the transport's.
        ("\uff41" + ADD[1:], ""),
        # A codec that spells the name in other bytes: "+AGE-" is "a" in UTF-7.
        ("+AGE-" + ADD[1:], "# coding: utf-7\n"),
    ],
)
def test_a_name_spelled_in_other_bytes_is_still_read(tmp_path, spelling, header):
    """The analysis skips its walks for a name whose text an ASCII file does not hold; a file
    that is not ASCII, or declares a codec, is walked whole, so these calls are found."""
    root = copy_tree("v0523", tmp_path)
    path = root / "sglang" / SCHEDULER_FILE
    text = path.read_text()
    assert ADD in text and "+" not in text
    path.write_bytes((header + text.replace(ADD, spelling)).encode("utf-8"))
    assert ADD.encode() not in path.read_bytes()
    cap = analyse(str(root))
    assert cap.files[0].status == "ok"
    assert cap.scheduler_calls == {"add": True, "pop": True}
