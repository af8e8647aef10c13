"""The findings budget, handed to what it caps: the checks of a dump build their findings within
it, and a triage lists the first incidents and collateral records it keeps."""

from __future__ import annotations

import ast

from helpers import REPO

from ppaux.dump.checks import check_payload
from ppaux.dump.payload import Payload
from ppaux.limits import Limits
from ppaux.report import FindingsBudget

#: A tensor dict of five keys that are not strings: five PP103 findings, one per key.
_FIVE_BAD_KEYS = Payload("", {1: "a", 2: "b", 3: "c", 4: "d", 5: "e"})


def test_a_check_builds_within_the_budget_it_is_handed():
    budget = FindingsBudget(Limits(max_findings_per_code=2))
    found = check_payload("x.pt", _FIVE_BAD_KEYS, Limits(), budget=budget)
    assert [f.code for f in found] == ["PP103", "PP103"]
    assert [f.key for f in found] == ["1", "2"]
    assert budget.omitted == {"PP103": 3}
    (counting,) = budget.counted("x.pt")
    assert counting.code == "PP103" and counting.extra == {"omitted": 3}


def test_a_budget_spent_by_one_dict_is_spent_for_the_next():
    budget = FindingsBudget(Limits(max_findings_per_code=7))
    first = check_payload("x.pt", _FIVE_BAD_KEYS, Limits(), budget=budget)
    second = check_payload("x.pt", _FIVE_BAD_KEYS, Limits(), budget=budget)
    assert (len(first), len(second)) == (5, 2)
    assert budget.omitted == {"PP103": 3}


def test_without_a_budget_a_dict_is_checked_on_its_own():
    found = check_payload("x.pt", _FIVE_BAD_KEYS, Limits(max_findings_per_code=2))
    assert len(found) == 2  # its own budget, of the limits given
    assert len(check_payload("x.pt", _FIVE_BAD_KEYS, Limits())) == 5


def test_no_dump_check_reads_a_budget_from_the_context():
    # A budget held in a context variable reaches a check no caller handed it; every check is
    # handed its budget.
    for path in (REPO / "ppaux" / "dump").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in node.names
        } | {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert "contextvars" not in imported and "ContextVar" not in imported, path


def test_the_budget_lists_the_first_of_a_list_within_its_bound():
    budget = FindingsBudget(Limits(max_incidents=3, max_collateral=2))
    assert budget.first(list("abcde"), "max_incidents") == ["a", "b", "c"]
    assert budget.first(list("abcde"), "max_collateral") == ["a", "b"]
    assert budget.first(["a"], "max_collateral") == ["a"]
    assert (budget.bound("max_incidents"), budget.bound("max_collateral")) == (3, 2)
