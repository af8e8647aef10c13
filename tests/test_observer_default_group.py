"""The check's child has no default process group with the in-process and torch-distributed
transports (docs/observers.md, "What this check cannot see"): an observer that asks
``torch.distributed.get_rank()`` in a hook is told so in a PP710 naming torch's own error, not an
internal error and not a pass."""

from __future__ import annotations

import pytest
from helpers import REPO

from ppaux.observer import ObserverOptions, check_observer

pytestmark = pytest.mark.torch

GOOD = (REPO / "fixtures" / "observers" / "entropy_good.py").read_text(encoding="utf-8")
MARK = "        return EntropyOutput(state)"


def test_get_rank_in_a_hook_fails_as_it_would_without_a_default_group(tmp_path):
    path = tmp_path / "obs.py"
    asks = "        import torch.distributed as dist\n        dist.get_rank()\n"
    path.write_text(GOOD.replace(MARK, asks + MARK), encoding="utf-8")
    report = check_observer(f"{path}:EntropyObserver", ObserverOptions(batch_sizes=(1,), steps=1))
    assert {f.code for f in report.findings} == {"PP710"}
    assert all(
        "Default process group has not been initialized" in f.message for f in report.findings
    )
