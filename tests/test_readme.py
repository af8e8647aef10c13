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


def test_the_fast_tier_leaves_out_every_tier_but_torch():
    """The README's fast tier is marker ``fast``, which conftest gives every test of none of the
    tiers pyproject.toml declares (all but ``torch``, a need, not a tier, and ``fast`` itself);
    each module tests/conftest.py puts on a tier exists."""
    import tomllib

    from conftest import NOT_FAST, TIERS

    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert ".venv/bin/python -m pytest -n auto -m fast\n" in text
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    markers = {m.split(":", 1)[0] for m in config["tool"]["pytest"]["ini_options"]["markers"]}
    assert set(NOT_FAST) == markers - {"torch", "fast"}
    for names in TIERS.values():
        for name in names:
            assert (REPO / "tests" / name).is_file(), name
