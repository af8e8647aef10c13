"""Parsing only the needed parts of a file gives the same trees as a full parse, or gives up."""

from __future__ import annotations

import ast

import pytest
from skew_fixtures import tree

import ppaux.sglang.analysis as analysis
from ppaux.sglang.digest import definition_digests
from ppaux.sglang.source_parts import parse_parts

SOURCE = '''\
"""A module."""
import os
from x import (
    a,
    b,
)

LIMIT = [
    1,
]


@decorator(
    1,
)
def wanted(
    value: int,
) -> int:
    """Doc."""
    return value + LIMIT[0]


def other():
    return os.sep


class Group:
    """A class."""

    size = 3

    def send(
        self,
    ) -> None:
        return call_me()

    @staticmethod
    def recv():
        return 2

    def unrelated(self):
        return 3
'''


def test_parts_equal_the_full_parse():
    parts = parse_parts(SOURCE, ["wanted", "Group.recv"], ["call_me"])
    assert parts is not None
    full = ast.parse(SOURCE)
    names = ["wanted", "Group.send", "Group.recv", "other", "Group.unrelated"]
    got = definition_digests(parts, names)
    assert set(got) == {"wanted", "Group.send", "Group.recv"}
    assert got == {k: v for k, v in definition_digests(full, names).items() if k in got}
    imports = [n for n in parts.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert [ast.unparse(n) for n in imports] == ["import os", "from x import a, b"]


@pytest.mark.parametrize(
    "source, names, mentions",
    [
        # A mention in class-level code, outside any method: the class must be read whole.
        ("class A:\n    x = call_me()\n\n    def f(self):\n        pass\n", ["f"], ["call_me"]),
        # A string that runs back to column 0 cuts the function in two.
        ('def f():\n    s = """\ndef g():\n"""\n    return s\n', ["f"], []),
        # A wanted method defined under an if in the class body is not where the cut looks.
        ("class A:\n    if True:\n        def f(self):\n            pass\n", ["A.f"], []),
    ],
)
def test_untrustworthy_cuts_give_up(source, names, mentions):
    ast.parse(source)  # each is valid Python
    assert parse_parts(source, names, mentions) is None


@pytest.mark.parametrize(
    "name",
    ["no_transport", "v0519", "v0523", "unvalidated_sender", "old_logprob_keys", "wire_modified"],
)
def test_analysis_is_the_same_either_way(name, monkeypatch):
    parts = analysis.analyse(tree(name))
    monkeypatch.setattr(analysis, "_SELECTIVE", False)
    assert analysis.analyse(tree(name)) == parts
