"""PP713 for a later step that gives an attribute of an earlier output a new value (rather than
writing into its tensors): the output the target still holds is walked again
(:class:`ppaux.observer.watched.Watched`). Replacing the whole output it keeps changes nothing
of the earlier one and is clean."""

from __future__ import annotations

from typing import Any

import pytest
from observer_targets import KeptOutput

from ppaux.observer import ObserverOptions, observer_report

pytestmark = pytest.mark.torch

THREE = ObserverOptions(batch_sizes=(2,), steps=3)


class _Keeps:
    """Keeps its last output; ``reassign``: each step gives the kept one new values."""

    def __init__(self, reassign: bool) -> None:
        self.reassign = reassign
        self.last: KeptOutput | None = None

    def is_active(self, info: Any) -> bool:
        return True

    def before_grammar(self, logits: Any, info: Any) -> Any:
        return logits.float().amax(-1)

    def after_sample(self, state: Any, token_ids: Any) -> KeptOutput:
        if self.reassign and self.last is not None:
            self.last.values = state.clone() + 1  # the earlier output's attribute, replaced
        self.last = KeptOutput(state.clone())  # the whole output replaced: the earlier one kept
        return self.last

    def from_pp_tensors(self, tensors: Any) -> KeptOutput:
        return KeptOutput(tensors["values"])


def test_an_attribute_a_later_step_reassigns_is_pp713():
    report = observer_report(_Keeps(reassign=True), THREE, None)
    changed = [f for f in report.findings if f.code == "PP713"]
    assert changed, report.findings
    assert ".values" in changed[0].message


def test_replacing_the_whole_kept_output_is_clean():
    assert observer_report(_Keeps(reassign=False), THREE, None).findings == ()


class _CachesHost:
    """An output whose copy_to_host keeps its host copy on itself (``host``, None until then);
    ``later``: the observer's next step gives the kept output's host copy new values."""

    def __init__(self, values: Any) -> None:
        self.values = values
        self.host: Any = None

    def copy_to_host(self, copy: Any) -> Any:
        if self.host is None:
            self.host = KeptOutput(copy(self.values))
        return self.host

    def to_pp_tensors(self) -> dict[str, Any]:
        return {"values": self.values}


class _KeepsCaching(_Keeps):
    def after_sample(self, state: Any, token_ids: Any) -> Any:
        if self.reassign and self.last is not None:
            self.last.host = KeptOutput(state.clone() + 1)  # its host copy, replaced later
        self.last = _CachesHost(state.clone())
        return self.last

    def from_pp_tensors(self, tensors: Any) -> Any:
        return _CachesHost(tensors["values"])


def test_a_host_copy_its_own_copy_to_host_keeps_on_the_output_is_clean():
    assert observer_report(_KeepsCaching(reassign=False), THREE, None).findings == ()


def test_a_host_copy_a_later_step_reassigns_is_pp713():
    report = observer_report(_KeepsCaching(reassign=True), THREE, None)
    changed = [f for f in report.findings if f.code == "PP713"]
    assert changed, report.findings
    assert ".host" in changed[0].message
