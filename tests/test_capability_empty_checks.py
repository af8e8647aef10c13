"""A check that checks nothing is no check, and a name a reading relies on that the file binds
to something else gives no verdict: ``if 0 and ...``, ``a and b`` where ``a or b`` refuses,
a key looked for in another dict than the one written; ``isinstance``, ``torch`` or
``torch.is_tensor`` bound by the transport; ``typing`` bound again, or ``TYPE_CHECKING`` bound
in a method; an import of add and pop from a module the tree does not hold; ``sys.modules``
reached under another name. Each verdict here is read by hand from the edited source."""

from __future__ import annotations

import ast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from skew_fixtures import copy_tree

from ppaux.sglang import ADD, POP, SCHEDULER_FILE, TRANSPORT_FILE
from ppaux.sglang_source import analyse
from ppaux.sglang_source.source_facts import sender_checks

TENSOR_CHECK = "        if not torch.is_tensor(value):\n"
NAME_CHECK = '        if not isinstance(label, str) or label == "":\n'
DUPLICATE_CHECK = "        if slot in tensors:\n"
CALL = f"        {ADD}(message, auxiliary)\n"
IMPORT = f"from sglang.srt.sampling.sampling_observer_pp import (\n    {ADD},\n    {POP},\n)\n"


def _edited(tmp_path, relative: str, old: str, new: str):
    root = copy_tree("v0523", tmp_path)
    path = root / "sglang" / relative
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))
    return analyse(str(root))


#: Sender checks replaced, with the check each is read as (True: it refuses what the
#: release's check refuses).
SENDER = {
    "if 0 and": (TENSOR_CHECK, "        if 0 and not torch.is_tensor(value):\n", "tensors", False),
    "if '' and": (
        TENSOR_CHECK,
        "        if '' and not torch.is_tensor(value):\n",
        "tensors",
        False,
    ),
    "0.0 or (check and ())": (
        TENSOR_CHECK,
        "        if 0.0 or not torch.is_tensor(value) and ():\n",
        "tensors",
        False,
    ),
    "[] or check": (
        TENSOR_CHECK,
        "        if [] or not torch.is_tensor(value):\n",
        "tensors",
        True,
    ),
    "and for or": (
        NAME_CHECK,
        '        if not isinstance(label, str) and label == "":\n',
        "names",
        False,
    ),
    "not (a and b)": (
        NAME_CHECK,
        "        if not (isinstance(label, str) and label):\n",
        "names",
        True,
    ),
    "a key looked for in another dict": (
        DUPLICATE_CHECK,
        "        if slot in produced:\n",
        "duplicates",
        False,
    ),
}


@pytest.mark.parametrize("name", list(SENDER))
def test_a_sender_check_is_read_for_what_it_refuses(tmp_path, name):
    old, new, check, expected = SENDER[name]
    cap = _edited(tmp_path, TRANSPORT_FILE, old, new)
    assert cap.transport == "present"
    assert cap.sender_checks is not None
    assert cap.sender_checks[check] is expected
    others = {key: value for key, value in cap.sender_checks.items() if key != check}
    assert all(others.values())


@pytest.mark.parametrize(
    "tail",
    [
        "def isinstance(*args):\n    return True\n",
        "class torch:\n    is_tensor = bool\n",
        "torch.is_tensor = lambda value: True\n",
        "def _quiet(all=None):\n    return all\n",
    ],
    ids=["isinstance defined", "torch a class", "torch.is_tensor set", "a parameter named all"],
)
def test_a_transport_that_binds_a_name_its_checks_read_is_unknown(tmp_path, tail):
    root = copy_tree("v0523", tmp_path)
    path = root / "sglang" / TRANSPORT_FILE
    path.write_text(path.read_text() + "\n\n" + tail)
    cap = analyse(str(root))
    assert (cap.transport, cap.match) == ("unknown", "unknown")
    assert cap.sender_checks is None and cap.receiver_checks is None
    assert "binds a name the checks of" in cap.unknown["transport"]


def _scheduler(tmp_path, head: str, block: str):
    root = copy_tree("v0523", tmp_path)
    path = root / "sglang" / SCHEDULER_FILE
    text = path.read_text()
    assert text.count(CALL) == 1 and text.count("from typing import Any\n") == 1
    text = text.replace("from typing import Any\n", head + "from typing import Any\n")
    indented = "".join(f"        {line}\n" for line in block.splitlines())
    path.write_text(text.replace(CALL, indented))
    return analyse(str(root))


#: A head added to the scheduler's imports and the block that replaces its add call, with the
#: verdict on add (False: no run reaches the call).
TYPE_CHECKING_CASES = {
    "typing.TYPE_CHECKING": (
        "import typing\n",
        f"if typing.TYPE_CHECKING:\n    {ADD}(1, 2)",
        False,
    ),
    "typing bound again": (
        "import typing\ntyping = load_settings()\n",
        f"if typing.TYPE_CHECKING:\n    {ADD}(1, 2)",
        True,
    ),
    "TYPE_CHECKING imported": (
        "from typing import TYPE_CHECKING\n",
        f"if TYPE_CHECKING:\n    {ADD}(1, 2)",
        False,
    ),
    "TYPE_CHECKING bound in the method": (
        "from typing import TYPE_CHECKING\n",
        f"TYPE_CHECKING = True\nif TYPE_CHECKING:\n    {ADD}(1, 2)",
        True,
    ),
}


@pytest.mark.parametrize("name", list(TYPE_CHECKING_CASES))
def test_type_checking_is_false_only_where_it_is_typing_s(tmp_path, name):
    head, block, calls = TYPE_CHECKING_CASES[name]
    cap = _scheduler(tmp_path, head, block)
    assert cap.scheduler_calls == {"add": calls, "pop": True}


def test_an_import_from_a_module_the_tree_does_not_hold_gives_no_transport_verdict(tmp_path):
    cap = _edited(
        tmp_path, SCHEDULER_FILE, IMPORT, f"from sglang.srt.nowhere.transport import {ADD}, {POP}\n"
    )
    assert (cap.transport, cap.match) == ("unknown", "unknown")
    assert "which this tree does not hold, so the import fails" in cap.unknown["transport"]


@pytest.mark.parametrize(
    "head",
    ["import sys as _s\n", "from sys import modules\n", "from sys import modules as _m\n"],
)
def test_sys_modules_reached_under_another_name_gives_no_calls_verdict(tmp_path, head):
    cap = _scheduler(tmp_path, head, f"{ADD}(message, auxiliary)")
    assert cap.scheduler_calls is None
    assert "sys" in cap.unknown["scheduler_calls"]


FALSE_CONSTANTS = ["0", "''", "None", "()", "[]", "{}", "False", "not 1", "0 and x"]
ADD_TEMPLATE = """
def add(tensors, output):
    produced = output.to_pp_tensors()
    for label, value in produced.items():
        if {test}:
            raise RuntimeError("not a tensor")
        tensors["p." + label] = value
"""


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(FALSE_CONSTANTS), st.booleans(), st.booleans())
def test_a_tensor_check_counts_only_where_it_alone_can_raise(constant, with_or, first):
    check = "not torch.is_tensor(value)"
    joined = " or " if with_or else " and "
    test = constant + joined + check if first else check + joined + constant
    module = ast.parse(ADD_TEMPLATE.format(test=test))
    add = module.body[0]
    assert isinstance(add, ast.FunctionDef)
    # ``c or check`` raises whenever the check fails; ``c and check`` (either order) never.
    assert sender_checks(add)["tensors"] is with_or
