"""The check's child describes the target's values with functions bound before the target is
imported: a target that replaces ``repr``, ``str``, ``format``, ``len``, ``isinstance`` or
``type`` in :mod:`builtins` at import cannot make two different values look the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import ppaux_process
from observer_targets import MAX_OBSERVER

pytestmark = pytest.mark.torch

import torch  # noqa: E402,F401  (the check needs torch)

#: Rank 0's consume adds 1 to what it writes (a real PP712); at import the observer replaces
#: one builtin with a function that hides every difference in what it describes.
PATCHER = """
import builtins
_kept = getattr(builtins, {name!r})
builtins.{name} = {replacement}


class Host:
    def __init__(self, v, rank0):
        self.v, self.rank0 = v, rank0

    def consume(self, batch, commits):
        for req, x in zip(batch.reqs, self.v.tolist()):
            req.customized_info = {{"v": x + (1.0 if self.rank0 else 0.0)}}


class Out:
    def __init__(self, v, rank0=False):
        self.v, self.rank0 = v, rank0

    def copy_to_host(self, copy_tensor):
        return Host(copy_tensor(self.v), self.rank0)

    def to_pp_tensors(self):
        return {{"v": self.v}}


def rebuild(tensors):
    return Out(tensors["v"], True)
"""

REPLACEMENTS = {
    "repr": 'lambda o: "same"',
    "str": 'lambda o="": "same"',
    "format": 'lambda o, spec="": "same"',
    "len": "lambda o: 0",
    # True for the target's own checks too would break torch; only for plain numbers.
    "isinstance": "lambda o, t: False if o.__class__ in (float, int) else _kept(o, t)",
    "type": "lambda *a: _kept(*a) if len(a) != 1 or a[0].__class__ not in (float, int) else str",
}


#: Patches that leave the run itself working: the difference must be found.
DESCRIBING = {"repr", "format"}


@pytest.mark.parametrize("name", sorted(REPLACEMENTS))
def test_a_target_patching_a_builtin_does_not_hide_the_difference(tmp_path: Path, name: str):
    observer = tmp_path / "patcher.py"
    source = PATCHER.format(name=name, replacement=REPLACEMENTS[name]) + MAX_OBSERVER
    observer.write_text(source, encoding="utf-8")
    result = ppaux_process(
        "check-observer", f"{observer}:O", "-f", "json", "--timeout", "60", cwd=tmp_path
    )
    # Never clean: the difference itself, or (where the patch breaks the run) the ending.
    assert result.returncode == 1, result.stdout + result.stderr
    codes = {finding["code"] for finding in json.loads(result.stdout)["findings"]}
    assert "PP712" in codes or (name not in DESCRIBING and codes == {"PP715"}), result.stdout
