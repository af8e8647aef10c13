"""The README opens with the two set-up commands, and .ci/run runs the second one verbatim."""

from __future__ import annotations

import re

from helpers import REPO


def setup_commands() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block is not None and text.index("```bash") < text.index("\n## "), "set-up block first"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_exactly_two_setup_commands():
    first, second = setup_commands()
    assert "ppaux inspect fixtures/" in first and "torch" not in first
    assert "torch==2.13.0" in second and "pytest" in second
    # On every core: pytest-xdist, with the whole-module distribution pyproject.toml sets.
    assert second.endswith("-m pytest -n auto")


def test_ci_runs_the_readme_test_command():
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert setup_commands()[1] in ci


def test_first_command_fixture_exists():
    first = setup_commands()[0]
    fixture = first.rsplit(" ", 1)[-1]
    assert (REPO / fixture).is_file()
