"""One way to gate torch in the tests: the ``torch`` marker.

A test that needs torch carries ``@pytest.mark.torch``; a module that needs it throughout (it
imports torch at the top, directly or through a helper module of ``tests/``) says
``pytestmark = pytest.mark.torch``. Nothing calls ``pytest.importorskip("torch")`` or asks
``importlib.util.find_spec("torch")``: a torch-free run skips the same tests for the same reason,
and a test that checks less without torch asks the ``have_torch`` fixture.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import needs_torch
from helpers import REPO

TESTS = REPO / "tests"


def _modules() -> list[Path]:
    return sorted(path for path in TESTS.glob("*.py") if path.name != "conftest.py")


def _asks_for_torch(call: ast.Call) -> bool:
    """``importorskip("torch")`` or ``find_spec("torch")``, however it is reached."""
    function = call.func
    name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
    return (
        name in ("importorskip", "find_spec")
        and bool(call.args)
        and isinstance(call.args[0], ast.Constant)
        and isinstance(call.args[0].value, str)
        and call.args[0].value.partition(".")[0] == "torch"
    )


def _marked(path: Path) -> bool:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "pytestmark" for target in node.targets
        ):
            return "pytest.mark.torch" in ast.unparse(node.value)
    return False


def test_no_test_gates_torch_another_way() -> None:
    found = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and _asks_for_torch(node):
                found.append(f"{path.name}:{node.lineno}")
    assert found == []


def test_a_module_that_needs_torch_throughout_is_marked() -> None:
    unmarked = [
        path.name
        for path in _modules()
        if path.name.startswith("test_") and needs_torch(path) and not _marked(path)
    ]
    assert unmarked == []


def test_the_checks_see_what_they_look_for(tmp_path: Path) -> None:
    # The two checks above find the ways they forbid, so an empty answer means something.
    other = tmp_path / "test_other.py"
    other.write_text(
        "import importlib.util\nimport pytest\nimport torch\n\n"
        'torch = pytest.importorskip("torch")\n'
        'HAVE = importlib.util.find_spec("torch.distributed") is not None\n',
        encoding="utf-8",
    )
    calls = [n for n in ast.walk(ast.parse(other.read_text())) if isinstance(n, ast.Call)]
    assert [_asks_for_torch(call) for call in calls] == [True, True]
    assert needs_torch(other) and not _marked(other)
    other.write_text("import pytest\nimport torch\n\npytestmark = [pytest.mark.torch]\n")
    assert _marked(other)
