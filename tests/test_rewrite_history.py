"""A capture rewritten by ``tensorize`` is judged on its own tensors: the original's trail is
history, labelled as such, and ``inspect``, ``replay`` and ``diff`` agree that it is clean."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import ppaux_process

pytestmark = pytest.mark.torch

REPO = Path(__file__).resolve().parent.parent
#: A capture of rank 0's failing pop whose trail says the message arrived dirty (PP508).
WALKTHROUGH = next((REPO / "fixtures" / "walkthrough").glob("capture-*-pop.pt"))
#: A capture of a failing pop with no trail.
PLAIN_CAPTURE = REPO / "fixtures" / "dumps" / "capture_pop_error.pt"
P = "__sampling_observer_output__."


def ppaux(*args: str, cwd: Path, columns: str = "80"):
    return ppaux_process(*args, cwd=cwd, env={"COLUMNS": columns})


def _rewrite(source: Path, tmp_path: Path) -> Path:
    fixed = tmp_path / "fixed.pt"
    done = ppaux("tensorize", str(source), "-o", str(fixed), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return fixed


def test_the_original_is_judged_by_its_trail(tmp_path: Path):
    done = ppaux("inspect", "--format", "json", str(WALKTHROUGH), cwd=tmp_path)
    assert done.returncode == 1
    codes = [f["code"] for f in json.loads(done.stdout)["findings"]]
    assert "PP508" in codes


@pytest.mark.parametrize("source", [WALKTHROUGH, PLAIN_CAPTURE], ids=["trail", "no-trail"])
def test_inspect_replay_and_diff_agree_the_rewrite_is_clean(source: Path, tmp_path: Path):
    fixed = _rewrite(source, tmp_path)
    done = ppaux("inspect", "--format", "json", str(fixed), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["findings"] == []
    done = ppaux("replay", "--format", "json", str(fixed), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["findings"] == []
    done = ppaux("diff", "--format", "json", str(fixed), str(fixed), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["findings"] == []


def test_the_header_says_what_it_is_a_rewrite_of(tmp_path: Path):
    _rewrite(WALKTHROUGH, tmp_path)
    done = ppaux("inspect", "fixed.pt", cwd=tmp_path, columns="400")
    assert done.returncode == 0, done.stdout + done.stderr
    text = done.stdout
    assert (
        "rewrite of a capture taken at pop_auxiliary_output_from_pp_tensors that raised "
        "RuntimeError: received a non-tensor auxiliary PP output" in text
    )
    assert "no error yet" not in text
    assert "taken at a checkpoint" not in text
    lines = text.splitlines()
    assert (
        "fixed.pt: the original's trail (history, not this file's): "
        "recv dirty (scores (list)) > pop dirty (scores (list))"
    ) in lines
    assert f"fixed.pt: converted to a tensor: ['tensors']['{P}scores']" in lines
