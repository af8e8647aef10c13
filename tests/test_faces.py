"""The package faces are the typed interface, and the code goes through them.

Each package's ``__init__`` serves its names lazily from ``_EXPORTS`` at run time and imports the
same names under ``TYPE_CHECKING`` for type checkers, with a literal ``__all__``; code in another
package and the CLI import from a face, never from another package's modules; and a wrong use of
a face's name is a type error (mypy run on a small snippet).
"""

from __future__ import annotations

import ast
import subprocess
import sys
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


def _deep_imports(path: Path) -> list[str]:
    """Imports in ``path`` that go around another package's face."""
    parts = path.relative_to(REPO).with_suffix("").parts
    own = parts[1] if parts[0] == "ppaux" and len(parts) > 2 else None
    packages = {p.parent.name for p in PPAUX.glob("*/__init__.py")}
    found = []
    where = f"{path.relative_to(REPO)}"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            module = node.module.split(".")
            if module[0] != "ppaux" or len(module) < 2 or module[1] not in packages:
                continue
            if module[1] == own:
                continue
            names = ", ".join(a.name for a in node.names)
            face = f"ppaux.{module[1]}"
            if len(module) > 2:
                found.append(
                    f"{where}:{node.lineno}: 'from {node.module} import {names}' goes around a "
                    f"face: write 'from {face} import {names}' (a name the face lacks goes into "
                    f"ppaux/{module[1]}/__init__.py's _EXPORTS and its TYPE_CHECKING block)"
                )
                continue
            directory = PPAUX / module[1]
            for alias in node.names:
                if (directory / f"{alias.name}.py").exists() or (directory / alias.name).is_dir():
                    found.append(
                        f"{where}:{node.lineno}: 'from {face} import {alias.name}' takes a module "
                        f"of {face}: import the names it offers from {face} instead"
                    )
        elif isinstance(node, ast.Import):
            for alias in node.names:
                module = alias.name.split(".")
                if module[0] == "ppaux" and len(module) > 2 and module[1] in packages:
                    if module[1] != own:
                        found.append(
                            f"{where}:{node.lineno}: 'import {alias.name}' goes around a face: "
                            f"import its names from ppaux.{module[1]}"
                        )
    return found


def test_other_packages_and_the_cli_import_from_faces():
    files = sorted([*PPAUX.rglob("*.py"), *(REPO / "ppaux_cli").rglob("*.py")])
    found = [line for path in files for line in _deep_imports(path)]
    assert not found, "\n".join(found)


def test_the_face_check_sees_a_deep_import(tmp_path, monkeypatch):
    """The check above is not blind: a CLI module importing a deep module is reported."""
    fake_cli = tmp_path / "ppaux_cli"
    fake_cli.mkdir()
    module = fake_cli / "x.py"
    module.write_text(
        "from ppaux.dump.dumpfile import read_dump\nfrom ppaux.sglang import releases\n"
        "from ppaux.dump import read_dump as fine\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "PPAUX", PPAUX)
    found = _deep_imports(module)
    assert [line.split(": ", 1)[0] for line in found] == ["ppaux_cli/x.py:1", "ppaux_cli/x.py:2"]
    assert "write 'from ppaux.dump import read_dump'" in found[0]


_MISUSE = """\
from ppaux.dump import read_dumpp
from ppaux.report import Severity
from ppaux.sglang import ADD_NOT_TENSOR, aux_name

count: int = aux_name("key")
ADD_NOT_TENSOR.format(3)
Severity.FATAL
name: str | None = aux_name("key")
"""


def test_a_wrong_use_of_a_face_name_is_a_type_error(tmp_path):
    pytest.importorskip("mypy")
    snippet = tmp_path / "snippet.py"
    snippet.write_text(_MISUSE, encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--follow-imports=silent",
            f"--cache-dir={tmp_path / 'cache'}",
            "--config-file=",
            str(snippet),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    errors = [
        line.split(": error: ", 1)
        for line in done.stdout.splitlines()
        if ": error: " in line and line.startswith(str(snippet))
    ]
    lines = {int(where.rsplit(":", 1)[1]): text for where, text in errors}
    # Line 8, a right use of the same name, gives no error.
    assert sorted(lines) == [1, 5, 6, 7], done.stdout
    assert lines[1].startswith('Module "ppaux.dump" has no attribute "read_dumpp"')
    assert '"str | None", variable has type "int"' in lines[5]
    assert 'incompatible type "int"; expected "str"' in lines[6]
    assert '"type[Severity]" has no attribute "FATAL"' in lines[7]
