"""``--outputs`` given a generator is read as the steps take its items: an output is made only
when its step runs (memory holds one, not all), and the count is still bounded."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ppaux.observer import ObserverOptions, TargetError, check_observer

pytestmark = pytest.mark.torch

#: Outputs and an observer in one file; the generator and the observer's rebuild note what
#: they do, in order, in ``log.txt``.
FILE = """\
import pathlib

import torch

LOG = pathlib.Path(__file__).with_name("log.txt")


def note(text):
    with open(LOG, "a") as log:
        log.write(text + "\\n")


class Host:
    def __init__(self, t):
        self.t = t

    def consume(self, batch, commits):
        for req in batch.reqs:
            req.customized_info = {{"v": self.t.tolist()}}


class Out:
    def __init__(self, t):
        self.t = t

    def copy_to_host(self, copy):
        return Host(copy(self.t))

    def to_pp_tensors(self):
        return {{"t": self.t}}


class Obs:
    def from_pp_tensors(self, tensors):
        note("rebuilt")
        return Out(tensors["t"])


def stream():
    for i in range(3):
        note(f"made {{i}}")
        yield {item}
"""


def _files(tmp_path: Path, item: str) -> tuple[str, str]:
    path = tmp_path / "outs.py"
    path.write_text(textwrap.dedent(FILE.format(item=item)), encoding="utf-8")
    return f"{path}:Obs", f"{path}:stream"


def test_each_output_is_made_only_when_its_step_runs(tmp_path):
    target, outputs = _files(tmp_path, "Out(torch.full((2,), float(i)))")
    report = check_observer(target, ObserverOptions(), outputs=outputs)
    assert report.findings == ()
    log = (tmp_path / "log.txt").read_text(encoding="utf-8").splitlines()
    assert log[0] == "made 0"
    # The second output is made after the first was sent and rebuilt, the third after that.
    assert log.index("rebuilt") < log.index("made 1")
    assert log.index("made 1") < log.index("made 2")
    assert log.count("rebuilt") == 3
    assert [line for line in log if line.startswith("made")] == ["made 0", "made 1", "made 2"]


def test_an_item_that_is_not_an_output_stops_the_check_when_reached(tmp_path):
    target, outputs = _files(tmp_path, "Out(torch.zeros(1)) if i < 2 else 'text'")
    with pytest.raises(TargetError) as info:
        check_observer(target, ObserverOptions(), outputs=outputs)
    assert info.value.reason == "item 2 is a str, not an auxiliary output (no copy_to_host)"
    # The first two were sent before the third was read.
    assert (tmp_path / "log.txt").read_text(encoding="utf-8").count("rebuilt") == 2
