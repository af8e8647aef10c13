"""The receiver of a two-process transport has its own start-up bound under check-observer.

Its start-up (a fresh interpreter importing torch, and sglang's runtime for ``sglang``) is not
the target's time: the check's ``--timeout`` bounds each part of the run, and the part in which
the receiver starts is given the wire's own start-up bound on top of it, as replay gives it.
"""

from __future__ import annotations

import pytest
import torch  # noqa: F401  (the check's child and receiver import it)
from helpers import REPO

from ppaux.observer import ObserverOptions, check_observer
from ppaux.observer.child import RECEIVER_START_UP_S
from ppaux.replay.distributed import START_UP_S

pytestmark = pytest.mark.torch


def test_the_receivers_bound_is_the_wires():
    assert RECEIVER_START_UP_S == START_UP_S == 600.0


def test_a_short_timeout_does_not_bound_the_receivers_start_up():
    # With --timeout 1 a part of the run may take 6 s; starting the receiver (torch's import in
    # a fresh interpreter) takes longer than that on a loaded machine, and is not a hang.
    target = f"{REPO / 'fixtures' / 'observers' / 'entropy_good.py'}:EntropyObserver"
    options = ObserverOptions(transport="torch-distributed", timeout_s=1.0, steps=1)
    report = check_observer(target, options)
    assert [(f.code, f.message) for f in report.findings] == []
