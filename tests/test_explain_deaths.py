"""``ppaux explain`` on a line that is none of sglang's nine messages: a process's death a
shell or the kernel reports says a process died and points to triage; every kind exits 2.

Expected values are written here by hand, never computed with ppaux's code.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from ppaux_cli.app import app


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("Segmentation fault (core dumped)", "killed by SIGSEGV (signal 11;"),
        ("Killed", "killed by SIGKILL (signal 9;"),
        (
            "[300974.215769] Out of memory: Killed process 336943 (python) total-vm:1kB",
            "killed by the kernel's OOM killer",
        ),
    ],
)
def test_a_death_line_says_a_process_died_and_points_to_triage(line, said):
    result = CliRunner().invoke(app, ["explain", line])
    flat = " ".join(result.output.split())
    assert "a process died" in flat, flat
    assert said in flat, flat
    assert "'ppaux triage' on the whole log" in flat, flat


@pytest.mark.parametrize(
    "line",
    [
        "Segmentation fault (core dumped)",
        "Killed",
        "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for "
        "details), NCCL version 2.21.5",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "ValueError: pipeline parallel size must divide the layers",
        "hello world",
    ],
)
def test_every_line_that_is_none_of_the_nine_exits_2(line):
    result = CliRunner().invoke(app, ["explain", line])
    assert result.exit_code == 2, result.output
