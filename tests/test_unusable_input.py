"""A run whose only input cannot be used answers with one error line: nothing on stdout."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import ppaux_process

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    "args",
    [
        ("triage", "missing.log"),
        ("inspect", "missing.pt"),
        pytest.param(("replay", "missing.pt"), marks=pytest.mark.torch),
        ("diff", "missing.pt", "missing.pt"),
    ],
    ids=lambda args: args[0],
)
def test_one_error_line_and_nothing_on_stdout(args: tuple[str, ...], tmp_path: Path):
    done = ppaux_process(*args, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert lines and all(line.startswith("ppaux: error: missing.") for line in lines)
    assert "no such file" in lines[0]


def test_a_usable_input_beside_a_missing_one_is_still_reported(tmp_path: Path):
    clean = REPO / "fixtures" / "dumps" / "clean_output.pt"
    done = ppaux_process("inspect", "missing.pt", str(clean), cwd=tmp_path)
    assert done.returncode == 2
    assert "clean_output.pt" in done.stdout
    assert "1 input(s) not checked" in done.stdout
    assert done.stderr.splitlines() == ["ppaux: error: missing.pt: no such file"]
