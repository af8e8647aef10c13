"""Rank 0's process that ends within a step is placed where it was in that step, as it told
the check: in its pop (``from_pp_tensors``), after ``from_pp_tensors`` returned (ppaux
describing the output it rebuilt), in the rebuilt output's ``copy_to_host`` and ``consume``;
never all of them "rank 0's pop"."""

from __future__ import annotations

import pytest
import torch  # noqa: F401  (the check runs torch)
from helpers import REPO

from ppaux.observer import ObserverOptions, check_observer

pytestmark = pytest.mark.torch

GOOD = (REPO / "fixtures" / "observers" / "entropy_good.py").read_text(encoding="utf-8")
KILL = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
REBUILD = '        return EntropyOutput(tensors["entropy"])'
COPY = "    def copy_to_host(self, copy_tensor) -> EntropyHostOutput:\n"

#: Each place: the target's edit (rank 0's output marked, so that the last stage never ends).
PLACES = {
    "pop": (
        "        out = EntropyOutput(",
        f"        {KILL}\n        out = EntropyOutput(",
        "while it popped what it received",
    ),
    "rebuilt": (
        "    def to_pp_tensors(self)",
        "    def __getattribute__(self, name):\n"
        "        if name == '__dict__' and object.__getattribute__(self, '__dict__').get(\n"
        "            'at_rank0'\n"
        "        ):\n"
        f"            {KILL}\n"
        "        return object.__getattribute__(self, name)\n\n"
        "    def to_pp_tensors(self)",
        "after from_pp_tensors returned, while ppaux described the output it rebuilt",
    ),
    "host": (
        COPY,
        COPY + f"        if self.__dict__.get('at_rank0'):\n            {KILL}\n",
        "while the rebuilt output's copy_to_host and consume ran",
    ),
}


@pytest.mark.parametrize("place", sorted(PLACES))
def test_rank_0s_process_ending_is_placed_where_it_was_in_the_step(tmp_path, place):
    # Rank 0's output marked: the last stage's never ends.
    text = GOOD.replace(
        REBUILD,
        "        out = EntropyOutput(tensors['entropy'])\n"
        "        out.__dict__['at_rank0'] = True\n"
        "        return out",
    )
    old, new, said = PLACES[place]
    assert old in text
    text = text.replace(old, new)
    path = tmp_path / "ends.py"
    path.write_text(text, encoding="utf-8")
    report = check_observer(f"{path}:EntropyObserver", ObserverOptions(batch_sizes=(2,), steps=1))
    ended = [f for f in report.findings if "rank 0's process ended" in f.message]
    assert len(ended) == 1, report.findings
    assert ended[0].code == "PP708"
    assert f"rank 0's process ended (killed by signal SIGKILL) {said}" in ended[0].message
    assert ended[0].message.endswith("(batch size 2, step 0)")
