"""Rank 0's side of a check runs in a process of its own that imported the target separately,
as sglang's rank 0 is another process: state the last stage's observer keeps at module or class
level is not there (:mod:`ppaux.observer.apart`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import REPO

from ppaux.observer import ObserverOptions, check_observer

pytestmark = pytest.mark.torch

SHARED = REPO / "fixtures" / "observers" / "shared_state.py"
GOOD = REPO / "fixtures" / "observers" / "entropy_good.py"
ONE = ObserverOptions(batch_sizes=(2,), steps=2)


def _findings(report):
    return [(item.code, item.message) for item in report.findings]


def test_a_module_global_read_back_by_from_pp_tensors_is_a_difference():
    report = check_observer(f"{SHARED}:SharedStateObserver", ONE)
    found = _findings(report)
    assert found, "state kept in a module global must not pass"
    assert {code for code, _ in found} == {"PP711"}
    assert all(
        ".value of the output rank 0 rebuilt in a process of its own differs" in text
        for _, text in found
    )
    # Rank 0's own process held no kept value: it rebuilt torch.zeros(1), not the batch's two.
    assert any("(shape)" in text and "(1,)" in text and "(2,)" in text for _, text in found)


def test_a_class_attribute_set_by_after_sample_is_not_on_rank_0():
    report = check_observer(f"{SHARED}:ClassStateObserver", ONE)
    (item,) = report.findings
    assert item.code == "PP710"
    assert item.message.startswith(
        "from_pp_tensors raised RuntimeError: nothing kept: after_sample never ran in this "
        "process on rank 0 in a process of its own (batch size 2, step 0)"
    )
    assert item.location is not None
    assert item.location["line"] == 66


def test_a_correct_observer_is_as_clean_as_before():
    assert check_observer(f"{GOOD}:EntropyObserver", ONE).findings == []


def _written(tmp_path: Path, text: str) -> str:
    (tmp_path / "obs.py").write_text(GOOD.read_text(encoding="utf-8") + text, encoding="utf-8")
    return f"{tmp_path / 'obs.py'}:Keeping"


KEEPING = """

SEEN = []


class Keeping(EntropyObserver):
    def after_sample(self, state, token_ids):
        SEEN.append(1)
        return super().after_sample(state, token_ids)
"""


def test_consume_reading_what_after_sample_kept_fails_on_rank_0(tmp_path):
    target = _written(
        tmp_path,
        KEEPING
        + """

class KeptHost(EntropyHostOutput):
    def consume(self, batch, commits):
        if not SEEN:
            raise LookupError("no step seen in this process")
        super().consume(batch, commits)


EntropyOutput.copy_to_host = lambda self, copy: KeptHost(copy(self.entropy))
""",
    )
    (item,) = check_observer(target, ONE).findings
    assert item.code == "PP710"
    assert item.message.startswith(
        "consume raised LookupError: no step seen in this process on rank 0 in a process of "
        "its own (batch size 2, step 0)"
    )


def test_rank_0_process_ending_is_a_finding_and_leaves_nothing_behind(tmp_path):
    target = _written(
        tmp_path,
        KEEPING
        + """
    def from_pp_tensors(self, tensors):
        if not SEEN:
            import os

            os._exit(3)
        return super().from_pp_tensors(tensors)
""",
    )
    (item,) = check_observer(target, ONE).findings
    assert item.code == "PP708"
    assert "rank 0's process ended (exit code 3)" in item.message
