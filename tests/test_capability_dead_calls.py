"""A call of add that can never run is no call: the scheduler "never calls" add where its only
call lies in code no run reaches (a ``case`` that cannot match, a local function nothing names,
a loop over an empty literal, code after a ``try`` or ``if`` that always returns, a branch for
Python 2), and still "calls" it where a run may reach it. A call after ``assert False`` is one
that can run: under ``python -O`` the assertion is gone."""

from __future__ import annotations

import ast
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from skew_fixtures import copy_tree

from ppaux.sglang import ADD, SCHEDULER_FILE
from ppaux.sglang_source import analyse
from ppaux.sglang_source.source_facts import calls_anywhere

CALL = f"        {ADD}(message, auxiliary)\n"


def _indented(block: str) -> str:
    return textwrap.indent(textwrap.dedent(block).strip("\n") + "\n", " " * 8)


#: The add call's line in the scheduler's sender replaced by each block, with the verdict on
#: add that block gives (the hand-read truth: False where no run can reach the call).
BLOCKS = {
    "a case that cannot match": (
        f"match 1:\n    case 2:\n        {ADD}(message, auxiliary)\n",
        False,
    ),
    "a case that matches": (f"match 1:\n    case 1:\n        {ADD}(message, auxiliary)\n", True),
    "a local def nothing names": (f"def later():\n    {ADD}(message, auxiliary)\n", False),
    "a local def returned": (
        f"def later():\n    {ADD}(message, auxiliary)\nreturn later\n",
        True,
    ),
    "a local def read through a frame's f_locals": (
        f"def later():\n    {ADD}(message, auxiliary)\nframe.f_locals['later']()\n",
        True,
    ),
    "a decorated local def": (
        f"@run_now\ndef later():\n    {ADD}(message, auxiliary)\n",
        True,
    ),
    "a lambda assigned to a name nothing reads": (
        f"later = lambda: {ADD}(message, auxiliary)\n",
        False,
    ),
    "a lambda passed on": (f"schedule(lambda: {ADD}(message, auxiliary))\n", True),
    "a list comprehension over ()": (f"[{ADD}(message, auxiliary) for _ in ()]\n", False),
    "a generator over []": (f"list({ADD}(message, auxiliary) for _ in [])\n", False),
    "a dict comprehension over {}": (f"{{k: {ADD}(message, k) for k in {{}}}}\n", False),
    "a comprehension whose second loop is over ''": (
        f"[{ADD}(message, x) for x in items for _ in '']\n",
        False,
    ),
    "a comprehension over a name": (f"[{ADD}(message, x) for x in items]\n", True),
    "a for over ()": (f"for _ in ():\n    {ADD}(message, auxiliary)\n", False),
    "the else of a for over ()": (
        f"for _ in ():\n    pass\nelse:\n    {ADD}(message, auxiliary)\n",
        True,
    ),
    "after a try that returns, with a finally": (
        f"try:\n    return message\nfinally:\n    pass\n{ADD}(message, auxiliary)\n",
        False,
    ),
    "after a try that returns, with a handler that does not": (
        f"try:\n    return message\nexcept Exception:\n    pass\n{ADD}(message, auxiliary)\n",
        True,
    ),
    "after an if whose branches both return": (
        f"if message:\n    return 1\nelse:\n    return 2\n{ADD}(message, auxiliary)\n",
        False,
    ),
    "after a with that raises (its manager may swallow it)": (
        f"with guard():\n    raise ValueError\n{ADD}(message, auxiliary)\n",
        True,
    ),
    "after assert False (runs under -O)": (f"assert False\n{ADD}(message, auxiliary)\n", True),
}


def _scheduler(tmp_path, block: str, head: str = ""):
    root = copy_tree("v0523", tmp_path)
    path = root / "sglang" / SCHEDULER_FILE
    text = path.read_text()
    assert text.count(CALL) == 1 and text.count("from typing import Any\n") == 1
    text = text.replace("from typing import Any\n", head + "from typing import Any\n")
    path.write_text(text.replace(CALL, _indented(block)))
    return analyse(str(root))


@pytest.mark.parametrize("name", list(BLOCKS))
def test_a_call_that_cannot_run_is_no_call(tmp_path, name):
    block, calls = BLOCKS[name]
    cap = _scheduler(tmp_path, block)
    assert cap.scheduler_calls == {"add": calls, "pop": True}


#: Tests of ``sys.version_info`` with ``sys`` imported at the module's top, each with whether
#: the call under it can run on some Python 3.
VERSIONS = {
    "sys.version_info < (3,)": False,
    "sys.version_info >= (4,)": False,
    "sys.version_info == (2, 7)": False,
    "sys.version_info[0] == 2 or sys.version_info < (3,)": True,  # the first is not read
    "sys.version_info >= (3,)": True,
    "sys.version_info < (3, 10)": True,  # depends on the minor version
}


@pytest.mark.parametrize("test", list(VERSIONS))
def test_a_branch_for_another_major_python_never_runs(tmp_path, test):
    block = f"if {test}:\n    {ADD}(message, auxiliary)\n"
    cap = _scheduler(tmp_path, block, head="import sys\n")
    assert cap.scheduler_calls == {"add": VERSIONS[test], "pop": True}


@pytest.mark.parametrize(
    "head, block",
    [
        ("import sys\n", f"sys = load()\nif sys.version_info < (3,):\n    {ADD}(message, 1)\n"),
        ("import os as sys\n", f"if sys.version_info < (3,):\n    {ADD}(message, 1)\n"),
        ("", f"if sys.version_info < (3,):\n    {ADD}(message, 1)\n"),
    ],
    ids=["sys bound again", "another module named sys", "sys never imported"],
)
def test_a_version_test_on_a_sys_that_may_be_another_object_is_not_read(tmp_path, head, block):
    cap = _scheduler(tmp_path, block, head=head)
    assert cap.scheduler_calls == {"add": True, "pop": True}


#: Wrappers a run may pass through to the call, and wrappers no run passes through, each with
#: how deep it indents what it wraps.
LIVE = [
    ("if ready:\n{}", 4),
    ("for item in items:\n{}", 4),
    ("while pending:\n{}", 4),
    ("try:\n{}\nexcept Exception:\n    pass", 4),
    ("with lock:\n{}", 4),
    ("match kind:\n    case 1:\n{}", 8),
]
DEAD = [
    ("if False:\n{}", 4),
    ("for _ in ():\n{}", 4),
    ("match 0:\n    case 1:\n{}", 8),
    ("def unused():\n{}", 4),
    ("return\n{}", 0),
]


def _wrapped(wrappers: list[tuple[str, int]]) -> str:
    body = f"{ADD}(x)"
    for wrapper, indent in reversed(wrappers):
        body = wrapper.format(textwrap.indent(body, " " * indent))
    return "def sender(x):\n" + textwrap.indent(body, "    ") + "\n"


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(LIVE), max_size=4),
    st.lists(st.sampled_from(LIVE), max_size=3),
    st.one_of(st.none(), st.sampled_from(DEAD)),
)
def test_a_call_is_one_exactly_when_no_wrapper_on_its_way_is_dead(outer, inner, dead):
    wrappers = [*outer, *([dead] if dead else []), *inner]
    module = ast.parse(_wrapped(wrappers))
    assert calls_anywhere(module, (ADD,))[ADD] is (dead is None)
