"""torch's import for the jobs that need it: the cyclic garbage collector is paused while torch's
modules load (no full collection runs in the middle of it) and left as it was found; the heap is
frozen after it only where the command line, which owns its process, asked for that. Each case
runs in a fresh interpreter, where torch is not imported yet."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.torch

_CHILD = """
import gc, json, sys
from ppaux import torch_probe
enabled = sys.argv[1] == "on"
if not enabled:
    gc.disable()
if sys.argv[2] == "freeze":
    torch_probe.freeze_after_torch_import()
before = gc.get_stats()[2]["collections"]
torch = torch_probe.import_torch()
print(json.dumps({
    "module": torch.__name__,
    "again": torch_probe.import_torch() is torch,
    "enabled": gc.isenabled(),
    "full_collections": gc.get_stats()[2]["collections"] - before,
    "frozen": gc.get_freeze_count(),
}))
"""


def _child(collector: str, freeze: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, collector, freeze],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    answer: dict = json.loads(done.stdout.splitlines()[-1])
    return answer


@pytest.mark.parametrize("collector", ["on", "off"])
def test_torch_is_imported_without_a_full_collection_and_the_collector_is_left_as_found(
    collector,
):
    answer = _child(collector, "no")
    assert answer["module"] == "torch" and answer["again"] is True
    assert answer["enabled"] is (collector == "on")
    assert answer["full_collections"] == 0
    assert answer["frozen"] == 0  # a library caller's heap is not frozen


def test_the_heap_is_frozen_after_torch_only_when_asked():
    answer = _child("on", "freeze")
    assert answer["enabled"] is True
    assert answer["frozen"] > 100_000  # torch's modules and what they hold
