"""The package faces are the typed interface.

Each package's ``__init__`` serves its names lazily from ``_EXPORTS`` at run time and imports the
same names under ``TYPE_CHECKING`` for type checkers, with a literal ``__all__``. That code in
another package and the CLI goes through a face is a contract of ``pyproject.toml``
(``lint-imports``; tests/test_architecture.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from helpers import REPO

PPAUX = REPO / "ppaux"


def _packages() -> list[str]:
    """Every package of ppaux that has a face: ``ppaux`` and each subpackage."""
    return ["ppaux", *sorted(f"ppaux.{p.parent.name}" for p in PPAUX.glob("*/__init__.py"))]


def _face_path(package: str) -> Path:
    return REPO.joinpath(*package.split("."), "__init__.py")


def _is_type_checking(test: ast.expr) -> bool:
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"


def _read_face(package: str) -> tuple[dict[str, str], dict[str, str], list[str] | None, bool]:
    """(names imported under TYPE_CHECKING -> module, _EXPORTS, literal __all__, lazy getattr
    hidden from type checkers)."""
    tree = ast.parse(_face_path(package).read_text(encoding="utf-8"))
    typed: dict[str, str] = {}
    exports: dict[str, str] = {}
    all_names = None
    hidden = False
    for node in tree.body:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for item in node.body:
                assert isinstance(item, ast.ImportFrom) and item.level == 0, (
                    f"{package}: only 'from ... import ...' belongs under TYPE_CHECKING"
                )
                for alias in item.names:
                    assert alias.asname is None, (
                        f"{package}: {alias.name} imported under a new name"
                    )
                    typed[alias.name] = item.module or ""
        elif (
            isinstance(node, ast.If)
            and isinstance(node.test, ast.UnaryOp)
            and isinstance(node.test.op, ast.Not)
            and _is_type_checking(node.test.operand)
        ):
            hidden = any(
                isinstance(item, ast.Assign)
                and any(
                    isinstance(t, ast.Tuple)
                    and any(getattr(e, "id", "") == "__getattr__" for e in t.elts)
                    for t in item.targets
                )
                for item in node.body
            )
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = getattr(node.targets[0], "id", None)
            if target == "_EXPORTS":
                exports = ast.literal_eval(node.value)
            elif target == "__all__" and isinstance(node.value, ast.List):
                all_names = [ast.literal_eval(e) for e in node.value.elts]
    return typed, exports, all_names, hidden


@pytest.mark.parametrize("package", _packages())
def test_a_face_types_exactly_the_names_it_serves(package):
    typed, exports, all_names, hidden = _read_face(package)
    face = _face_path(package).relative_to(REPO)
    assert exports, f"{face}: no _EXPORTS table"
    served = {name: f"{package}.{module}" for name, module in exports.items()}
    missing = sorted(set(served) - set(typed))
    assert not missing, (
        f"{face}: {missing} are in _EXPORTS but not imported under 'if TYPE_CHECKING:'; add "
        + "; ".join(f"'from {served[n]} import {n}'" for n in missing)
    )
    extra = sorted(set(typed) - set(served))
    assert not extra, f"{face}: {extra} are imported under TYPE_CHECKING but not in _EXPORTS"
    wrong = {n: (typed[n], served[n]) for n in served if typed[n] != served[n]}
    assert not wrong, f"{face}: TYPE_CHECKING imports and _EXPORTS disagree on modules: {wrong}"
    assert all_names is not None, f"{face}: __all__ must be a literal list (mypy reads it)"
    own = [n for n in all_names if n not in exports]
    assert sorted(all_names) == sorted(set(all_names)), f"{face}: a name twice in __all__"
    assert set(all_names) == set(exports) | set(own), face
    assert set(exports) <= set(all_names), (
        f"{face}: {sorted(set(exports) - set(all_names))} missing from __all__"
    )
    assert all(n.startswith("__") for n in own), f"{face}: {own} in __all__ but not served"
    assert hidden, (
        f"{face}: put '__getattr__, __dir__ = lazy_exports(...)' under 'if not TYPE_CHECKING:' "
        "so that a misspelt name is a type error, not Any"
    )


@pytest.mark.parametrize("package", _packages())
def test_no_face_name_is_also_a_module(package):
    """After ``import ppaux.x.y`` the package's attribute ``y`` is the module, so a face name
    ``y`` would change meaning on its second use."""
    _, exports, _, _ = _read_face(package)
    directory = _face_path(package).parent
    clash = sorted(
        n for n in exports if (directory / f"{n}.py").exists() or (directory / n).is_dir()
    )
    assert not clash, f"{package}: {clash} name both a face entry and a module"
