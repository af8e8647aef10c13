"""One module per file in each checking process: a file named by the target and again by
``--outputs``, or one the target's module imports as a neighbour, runs once (a custom op it
registers, a class its values come from, are the same for both)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ppaux.observer import ObserverOptions, check_observer

pytestmark = pytest.mark.torch

#: Outputs and an observer in one file, which notes each time it runs (one line each).
OUTS = """\
import os
import pathlib

import torch

with open(pathlib.Path(__file__).with_suffix(".runs"), "a") as runs:
    runs.write(f"{os.getpid()} {__name__}\\n")


class Host:
    def __init__(self, t):
        self.t = t

    def consume(self, batch, commits):
        for req in batch.reqs:
            req.customized_info = {"kind": type(self).__module__, "v": self.t.tolist()}


class MyOut:
    def __init__(self, t):
        self.t = t

    def copy_to_host(self, copy):
        return Host(copy(self.t))

    def to_pp_tensors(self):
        return {"t": self.t}


class Obs:
    def from_pp_tensors(self, tensors):
        return MyOut(tensors["t"])


def outputs():
    return [MyOut(torch.arange(3.0)), MyOut(torch.ones(2))]
"""

#: An observer in another file that imports the outputs' classes as its neighbour's.
NEIGHBOUR = """\
from outs import MyOut


class Obs:
    def from_pp_tensors(self, tensors):
        return MyOut(tensors["t"])
"""


@pytest.mark.parametrize("observer_file", ["outs.py", "obs.py"])
def test_a_file_named_twice_or_imported_by_a_neighbour_runs_once(tmp_path: Path, observer_file):
    (tmp_path / "outs.py").write_text(textwrap.dedent(OUTS), encoding="utf-8")
    (tmp_path / "obs.py").write_text(NEIGHBOUR, encoding="utf-8")
    report = check_observer(
        f"{tmp_path / observer_file}:Obs",
        ObserverOptions(steps=2),
        outputs=f"{tmp_path / 'outs.py'}:outputs",
    )
    assert report.findings == ()
    runs = [line.split(" ") for line in (tmp_path / "outs.runs").read_text("utf-8").splitlines()]
    # Once in each process that imports it (as each of sglang's processes does; rank 0 runs
    # in a process of its own), under the name 'import outs' finds it by, so a neighbour's
    # import is the same module.
    pids = [pid for pid, _ in runs]
    assert runs and len(set(pids)) == len(pids)
    assert {name for _, name in runs} == {"outs"}
