"""The command line's last resort: an unexpected exception is one error line and exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# Runs the real entry point with one library function replaced by one that fails.
_FAILING = """
import sys
import ppaux.dump.inspection as inspection

def broken(*args, **kwargs):
    raise {error}

inspection.inspect_paths = broken  # the command imports it from there when it runs
from ppaux_cli.app import main
sys.argv = ["ppaux", "inspect", "fixtures/dumps/clean_output.pt"]
main()
"""


@pytest.mark.parametrize(
    "error, line",
    [
        (
            "RecursionError('maximum recursion depth exceeded in comparison')",
            "ppaux: error: internal error: RecursionError: maximum recursion depth exceeded in "
            "comparison (a bug in ppaux; please report it)",
        ),
        (
            "MemoryError()",
            "ppaux: error: internal error: MemoryError: - (a bug in ppaux; please report it)",
        ),
        # A message from a file's bytes cannot break the line or reach the terminal as escapes.
        (
            "ValueError('a\\nb\\x1b[2J')",
            "ppaux: error: internal error: ValueError: a b\\x1b[2J "
            "(a bug in ppaux; please report it)",
        ),
    ],
)
def test_unexpected_exception_is_one_line(error, line):
    result = subprocess.run(
        [sys.executable, "-c", _FAILING.format(error=error)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONWARNINGS": "error"},
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr == line + "\n"
    assert result.stdout == ""
