"""A transfer timeout too short for the two-process wires (``--transport torch-distributed
--timeout 0.001``) is ppaux's one error line: torch's C++ lines about the store or the group that
did not connect in time (its log, its stack) are not written before it."""

from __future__ import annotations

import pytest
import torch  # noqa: F401  (the wire's two processes run torch)
from helpers import REPO, ppaux_process

pytestmark = pytest.mark.torch

DUMP = str(REPO / "fixtures/dumps/clean_output.pt")
GOOD = str(REPO / "fixtures/observers/entropy_good.py") + ":EntropyObserver"


@pytest.mark.parametrize("command", [("replay", DUMP), ("check-observer", GOOD)])
def test_a_timeout_too_short_is_ppaux_s_own_words_only(command):
    done = ppaux_process(*command, "--transport", "torch-distributed", "--timeout", "0.001")
    # Where the group did not connect within 1 ms: one error line, exit 2. Where it did (a fast
    # machine), the transfer itself timed out: replay reports it as a finding (exit 1).
    assert done.returncode in (1, 2), (done.stdout, done.stderr)
    assert "internal error" not in done.stderr and "a bug in ppaux" not in done.stderr
    if done.returncode == 2:
        (line,) = done.stderr.splitlines()  # no C++ log line, no stack frame before it
        assert line.startswith("ppaux: error: --transport torch-distributed: "), line
        assert "1ms" in line or "0.001 s" in line  # the timeout that was too short
    else:
        assert done.stderr == ""
        assert "PP403 error" in done.stdout
