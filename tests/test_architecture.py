"""The layering is a set of contracts that ``lint-imports`` checks (``pyproject.toml``), and
``docs/architecture.md`` lists the very layers they state.

The contracts are run on a copy of the code with one import planted in it: each planted import
that breaks a rule makes ``lint-imports`` fail and name the contract, so the check is not blind.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.helpers import REPO

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _contracts() -> dict[str, dict]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    return {c["id"]: c for c in config["tool"]["importlinter"]["contracts"]}


def _documented_layers() -> list[str]:
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("\n## The layers\n", 1)[1]
    block = re.search(r"```text\n(.*?)```", section, re.DOTALL)
    assert block is not None, "docs/architecture.md: no layer list under '## The layers'"
    return block.group(1).splitlines()


def _spelled(layer: str, container: str) -> str:
    return " | ".join(f"{container}.{name.strip()}" for name in layer.split("|"))


def test_the_documented_layers_are_the_contracts():
    contracts = _contracts()
    layers = contracts["layers"]
    (container,) = layers["containers"]
    # The CLI is on top: the library never imports it.
    assert contracts["cli-on-top"]["source_modules"] == [container]
    assert contracts["cli-on-top"]["forbidden_modules"] == ["ppaux_cli"]
    expected = ["ppaux_cli", *(_spelled(layer, container) for layer in layers["layers"])]
    assert _documented_layers() == expected


def test_every_top_level_module_is_on_a_layer():
    """The contract is exhaustive; this says the same of the files, so that a module that
    ``lint-imports`` would refuse is named here too, with the line to add."""
    placed = {
        name.strip() for layer in _contracts()["layers"]["layers"] for name in layer.split("|")
    }
    present = {
        p.stem if p.is_file() else p.name
        for p in (REPO / "ppaux").iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()
    }
    assert present == placed


def test_the_package_holds_at_most_ten_top_level_modules():
    """The top of ppaux is the few modules every area uses; an area's module goes in its area."""
    modules = sorted(p.name for p in (REPO / "ppaux").glob("*.py") if p.name != "__init__.py")
    assert len(modules) <= 10, modules


def _lint_copy(tmp_path: Path, plant: tuple[str, str] | None) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on a copy of the code and its contracts, ``plant`` (file, line) added."""
    for package in ("ppaux", "ppaux_cli"):
        shutil.copytree(
            REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    if plant is not None:
        path, line = plant
        target = tmp_path / path
        target.write_text(target.read_text(encoding="utf-8") + line + "\n", encoding="utf-8")
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=tmp_path,
        # The copy, not the installed checkout, is the code analysed.
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_contracts_hold_on_an_untouched_copy(tmp_path):
    done = _lint_copy(tmp_path, None)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.mark.parametrize(
    ("plant", "broken"),
    [
        # An upward import: a bottom module imports an area.
        (("ppaux/errors.py", "import ppaux.report"), "Each layer of ppaux imports only"),
        # Siblings on one layer.
        (("ppaux/dump/model.py", "import ppaux.triage"), "Each layer of ppaux imports only"),
        # A lower module reads the version from the package's face.
        (("ppaux/report/statistics.py", "import ppaux"), "No module of the library imports"),
        # The CLI around a face.
        (("ppaux_cli/commands/rules.py", "import ppaux.dump.dumpfile"), "The CLI imports only"),
        # Another area around a face.
        (("ppaux/replay/tables.py", "import ppaux.dump.pickle_vm"), "enter ppaux.dump through"),
        # A circle inside a package.
        (("ppaux/replay/protocol.py", "import ppaux.replay.wiring"), "in a circle"),
        # One command importing another.
        (("ppaux_cli/commands/rules.py", "import ppaux_cli.commands.diff"), "No command of"),
        # sglang's data leaning on the rest of ppaux.
        (("ppaux/sglang/releases.py", "import ppaux.errors"), "imports nothing else of ppaux"),
    ],
)
def test_a_planted_import_breaks_its_contract(tmp_path, plant, broken):
    done = _lint_copy(tmp_path, plant)
    assert done.returncode == 1, done.stdout + done.stderr
    failed = done.stdout.split("Broken contracts", 1)[1]
    assert broken in failed, done.stdout


def _bounds_section() -> str:
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    return text.split("\n## Bounds, and the numbers that are not\n", 1)[1].split("\n## ", 1)[0]


def test_every_bound_outside_limits_is_listed_with_why():
    """A number named as a bound (``MAX_...``) outside ``ppaux/limits.py`` is either a field of
    ``Limits`` or a row of the table in docs/architecture.md that says why it is not one."""
    import ast

    named = re.compile(r"^_?(?:DEFAULT_)?MAX_[A-Z0-9_]*$")
    found = set()
    for path in (REPO / "ppaux").rglob("*.py"):
        if path == REPO / "ppaux" / "limits.py":
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            targets = node.targets if isinstance(node, ast.Assign) else []
            if isinstance(node, ast.AnnAssign):
                targets = [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name) and named.match(name.id):
                        found.add(name.id)
    listed = set(re.findall(r"`([A-Z_][A-Z0-9_]*)`", _bounds_section()))
    assert found, "no bound found: the search is broken"
    assert sorted(found - listed) == []
