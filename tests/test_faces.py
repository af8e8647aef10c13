"""The package faces are the typed interface, each name listed once.

A face's ``__init__.pyi`` lists its names, one ``from .module import name as name`` line each:
type checkers read it, and the ``__init__.py`` serves the same names lazily from it
(:func:`ppaux._lazy.attach_stub`); no face keeps a table of its own. That code in another
package and the CLI goes through a face is a contract of ``pyproject.toml`` (``lint-imports``;
tests/test_architecture.py).
"""

from __future__ import annotations

import ast
import keyword
from pathlib import Path

import pytest
from helpers import REPO
from hypothesis import given
from hypothesis import strategies as st

from ppaux._lazy import stub_exports

PPAUX = REPO / "ppaux"


def _packages() -> list[str]:
    """Every package of ppaux that has a face: ``ppaux`` and each subpackage."""
    return ["ppaux", *sorted(f"ppaux.{p.parent.name}" for p in PPAUX.glob("*/__init__.py"))]


def _face_path(package: str) -> Path:
    return REPO.joinpath(*package.split("."), "__init__.py")


def _stub_faces() -> list[str]:
    return [p for p in _packages() if _face_path(p).with_suffix(".pyi").is_file()]


def _table_faces() -> list[str]:
    return [p for p in _packages() if p not in _stub_faces()]


def _read_stub(package: str) -> dict[str, str]:
    """Each name the face's stub lists -> its module, read with ast (not the loader's reader);
    every statement must be ``from .module import name as name``."""
    stub = _face_path(package).with_suffix(".pyi")
    listed: dict[str, str] = {}
    for node in ast.parse(stub.read_text(encoding="utf-8")).body:
        assert isinstance(node, ast.ImportFrom) and node.level == 1 and node.module, (
            f"{stub}:{node.lineno}: only 'from .module import name as name' belongs in a face"
        )
        for alias in node.names:
            assert alias.asname == alias.name, (
                f"{stub}:{node.lineno}: write '{alias.name} as {alias.name}' (a re-export)"
            )
            assert alias.name not in listed, f"{stub}:{node.lineno}: {alias.name} listed twice"
            listed[alias.name] = node.module
    return listed


@pytest.mark.parametrize("package", _stub_faces())
def test_a_stub_face_serves_exactly_what_its_stub_lists(package):
    import importlib

    listed = _read_stub(package)
    assert listed, package
    assert stub_exports(_face_path(package).with_suffix(".pyi").read_text("utf-8")) == listed
    module = importlib.import_module(package)
    assert sorted(module.__all__) == sorted(listed)
    # The __init__.py holds its docstring and the one line that serves the stub, nothing else.
    body = ast.parse(_face_path(package).read_text(encoding="utf-8")).body
    assert isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    code = [ast.unparse(node) for node in body[1:]]
    assert code == [
        "from ppaux._lazy import attach_stub",
        "__getattr__, __dir__, __all__ = attach_stub(__name__, __file__)",
    ]


_NAME = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True).filter(
    lambda name: not keyword.iskeyword(name)
)


@given(
    st.dictionaries(
        st.lists(_NAME, min_size=1, max_size=3).map(".".join),
        st.lists(_NAME, min_size=1, max_size=5, unique=True),
        min_size=1,
        max_size=5,
    ),
    st.booleans(),
)
def test_the_loader_reads_a_stub_as_python_does(modules, parenthesised):
    """Whatever the names and however the lines are laid out, the loader finds each name with
    its module, the last listing of a name winning as it does when Python runs the imports."""
    lines = []
    for module, names in modules.items():
        items = [f"{n} as {n}" for n in names]
        if parenthesised:
            lines.append(f"from .{module} import (\n    " + ",\n    ".join(items) + ",\n)")
        else:
            lines.append(f"from .{module} import " + ", ".join(items))
    expected = {}
    for node in ast.parse("\n".join(lines)).body:
        assert isinstance(node, ast.ImportFrom)
        for alias in node.names:
            expected[alias.asname] = node.module
    assert stub_exports("\n".join(lines)) == expected


def test_every_face_is_a_stub():
    """Each package's face is listed once, in its ``__init__.pyi``: no package serves names
    from a table of its own."""
    assert _table_faces() == []


@pytest.mark.parametrize("package", _packages())
def test_no_face_name_is_also_a_module(package):
    """After ``import ppaux.x.y`` the package's attribute ``y`` is the module, so a face name
    ``y`` would change meaning on its second use."""
    exports = _read_stub(package) if package in _stub_faces() else {}
    directory = _face_path(package).parent
    clash = sorted(
        n for n in exports if (directory / f"{n}.py").exists() or (directory / n).is_dir()
    )
    assert not clash, f"{package}: {clash} name both a face entry and a module"
