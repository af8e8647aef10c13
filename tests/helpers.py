"""What many test modules share: the repository root, the environment CLI tests run under, a
CLI runner, and the golden-file check. Fixtures are in ``conftest.py``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from ppaux_cli.app import app

__all__ = ["ENV", "REPO", "UPDATE_GOLDEN", "check_golden", "cli"]

#: The repository root (fixtures, docs and the README are read from here).
REPO = Path(__file__).resolve().parent.parent
#: The environment of every CLI run: no colour, and a fixed width, so output is exact.
ENV: dict[str, str | None] = {"NO_COLOR": "1", "COLUMNS": "100"}
#: ``PPAUX_UPDATE_GOLDEN=1`` rewrites golden files that differ (and fails the run; see below).
UPDATE_GOLDEN = os.environ.get("PPAUX_UPDATE_GOLDEN") == "1"


def cli(*args: str, env: Mapping[str, str | None] | None = None) -> Result:
    """``ppaux ARGS`` in-process under :data:`ENV` (plus ``env``; None unsets a variable)."""
    return CliRunner().invoke(app, list(args), env={**ENV, **(env or {})})


def check_golden(path: Path, text: str) -> None:
    """Assert that ``text`` is the golden file at ``path``.

    With ``PPAUX_UPDATE_GOLDEN=1`` a golden that differs (or is missing) is written, and the test
    still fails: an update is a change to review (``git diff tests/golden``), then the run is
    repeated without the variable.
    """
    name = path.name
    current = path.read_text(encoding="utf-8") if path.exists() else None
    if current == text:
        return
    if UPDATE_GOLDEN:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        pytest.fail(
            f"golden {name} rewritten: review the diff (git diff {path.parent}), then run "
            "the tests again without PPAUX_UPDATE_GOLDEN",
            pytrace=False,
        )
    assert current is not None, f"missing golden {name} (PPAUX_UPDATE_GOLDEN=1 writes it)"
    assert text == current, f"golden {name} differs (PPAUX_UPDATE_GOLDEN=1 rewrites it)"
