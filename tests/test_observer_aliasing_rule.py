"""PP713 compares the leaves an output had when it was produced: a leaf its own hook adds later
(a ``functools.cached_property`` that ``to_pp_tensors`` fills) is not memory a later step
overwrote; a leaf it had, overwritten by a later step, still is."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import REPO

from ppaux.observer import ObserverOptions, check_observer

pytestmark = pytest.mark.torch

GOOD = (REPO / "fixtures" / "observers" / "entropy_good.py").read_text(encoding="utf-8")
THREE = ObserverOptions(batch_sizes=(2,), steps=3)

CACHED = """
    @functools.cached_property
    def doubled(self):
        return self.entropy * 2

    def to_pp_tensors(self) -> dict[str, torch.Tensor]:
        return {"entropy": self.entropy, "doubled": self.doubled}
"""


def observer(tmp_path: Path, text: str) -> str:
    assert text != GOOD
    (tmp_path / "obs.py").write_text(text, encoding="utf-8")
    return f"{tmp_path / 'obs.py'}:EntropyObserver"


def cached(text: str) -> str:
    text = text.replace("import torch\n", "import functools\n\nimport torch\n", 1)
    return text.replace(
        """
    def to_pp_tensors(self) -> dict[str, torch.Tensor]:
        return {"entropy": self.entropy}
""",
        CACHED,
        1,
    )


def test_a_cached_property_filled_by_to_pp_tensors_is_not_aliasing(tmp_path):
    report = check_observer(observer(tmp_path, cached(GOOD)), THREE)
    assert [f.code for f in report.findings] == []


def test_a_cached_property_over_a_reused_buffer_is_still_aliasing(tmp_path):
    text = cached(GOOD).replace(
        "        return EntropyOutput(state)",
        "        if not hasattr(self, 'buffer'):\n"
        "            self.buffer = torch.zeros_like(state)\n"
        "        self.buffer.copy_(state)\n"
        "        return EntropyOutput(self.buffer)",
    )
    report = check_observer(observer(tmp_path, text), THREE)
    changed = [f for f in report.findings if f.code == "PP713"]
    assert changed
    assert ".entropy" in changed[0].message
