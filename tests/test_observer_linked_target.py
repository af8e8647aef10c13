"""A target file reached through a link imports the neighbours of the file the link leads to,
as Python does for a script run through a link (its real folder goes on the path)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch  # noqa: F401  (the check runs torch)
from helpers import REPO

from ppaux.observer import ObserverOptions, check_observer

pytestmark = pytest.mark.torch

OBSERVERS = REPO / "fixtures" / "observers"


def test_a_linked_target_imports_its_real_folders_neighbours(tmp_path: Path):
    real = tmp_path / "real"
    real.mkdir()
    for name in ("entropy_good.py", "entropy_list.py"):  # entropy_list imports entropy_good
        shutil.copy(OBSERVERS / name, real / name)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "linked.py").symlink_to(real / "entropy_list.py")
    report = check_observer(
        f"{elsewhere / 'linked.py'}:EntropyObserver", ObserverOptions(steps=1, batch_sizes=(1,))
    )
    assert report.problems == ()
    assert {finding.code for finding in report.findings} == {"PP705"}
