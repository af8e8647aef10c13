"""Torch's presence and tensorize's output path are checked in one layer, the library's: the
command line maps the library's typed error to its one line and checks neither again."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _called(path: Path) -> set[str]:
    """The names ``path`` calls, as ``f(...)`` or ``x.f(...)``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.func.id if isinstance(node.func, ast.Name) else node.func.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute)
    }


def test_the_command_line_never_checks_for_torch_itself():
    asked = {
        str(path.relative_to(ROOT))
        for path in (ROOT / "ppaux_cli").rglob("*.py")
        if _called(path) & {"require_torch", "has_torch"}
    }
    assert asked == set()


def test_each_library_entry_that_needs_torch_checks_for_it():
    for module in ("replay/run.py", "observer/check.py", "skew/gather.py", "fix/tensorize.py"):
        assert "require_torch" in _called(ROOT / "ppaux" / module), module


def test_tensorize_checks_its_output_path_in_the_library_alone():
    assert "check_output_path" not in _called(ROOT / "ppaux_cli" / "commands" / "tensorize.py")
    assert "check_output" in _called(ROOT / "ppaux" / "fix" / "tensorize.py")


def _reads(path: Path, attribute: str) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(n, ast.Attribute) and n.attr == attribute for n in ast.walk(tree))


def test_findings_of_a_code_are_capped_by_one_budget():
    # Only the budget reads its bound: every command caps through FindingsBudget, and no
    # module keeps counts of its own against max_findings_per_code.
    readers = {
        str(path.relative_to(ROOT))
        for path in [*(ROOT / "ppaux").rglob("*.py"), *(ROOT / "ppaux_cli").rglob("*.py")]
        if _reads(path, "max_findings_per_code")
    }
    assert readers == {"ppaux/report/budget.py"}


def test_incidents_and_collateral_listed_are_cut_by_the_budget():
    # The lists a triage report's findings are made of are cut by the same budget: no module
    # but the budget reads their bounds.
    for bound in ("max_incidents", "max_collateral"):
        readers = {
            str(path.relative_to(ROOT))
            for path in [*(ROOT / "ppaux").rglob("*.py"), *(ROOT / "ppaux_cli").rglob("*.py")]
            if _reads(path, bound)
        }
        assert readers == {"ppaux/report/budget.py"}, bound
