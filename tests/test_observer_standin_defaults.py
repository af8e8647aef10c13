"""The stand-in request and sampling info carry what every real ``Req`` and
``SamplingBatchInfo`` of sglang 0.5.19 - 0.5.23 carry from their constructors, so a correct
``consume`` or ``is_active`` that reads one of them is not a false PP710. (The runtime tier,
tests/test_observer_runtime.py, compares them with each release's own classes.)"""

from __future__ import annotations

import sys

import pytest

from ppaux.observer import ObserverOptions, check_observer
from ppaux.observer.standins import StandInRequest, StandInSamplingInfo, sampling_info_fields


def test_a_stand_in_request_reads_as_a_fresh_req():
    # Req.__init__: return_hidden_states=False (0.5.19 l.1012), spec_verify_ct = 0 (0.5.19
    # l.1206), hidden_states = [] ; a request's own list, never shared with another's.
    one, two = StandInRequest("req-0"), StandInRequest("req-1")
    assert (one.return_hidden_states, one.spec_verify_ct, one.hidden_states) == (False, 0, [])
    assert one.hidden_states is not two.hidden_states
    one.spec_verify_ct += 1
    assert (one.spec_verify_ct, two.spec_verify_ct) == (1, 0)
    assert one.finished_output is None and one.decoded_text == ""


def test_the_stand_in_sampling_info_has_bootstrap_room_ids_int():
    info = StandInSamplingInfo(**sampling_info_fields(2, 8, "cpu"))
    assert info.bootstrap_room_ids_int is None


OBSERVER = """
import torch
class Host:
    def __init__(self, t): self.t = t
    def consume(self, batch, commits):
        for req, commit in zip(batch.reqs, commits):
            if commit is None or req.return_hidden_states:
                continue
            req.customized_info = {"ct": [req.spec_verify_ct, len(req.hidden_states)]}
class Out:
    def __init__(self, t): self.t = t
    def copy_to_host(self, ct): return Host(ct(self.t))
    def to_pp_tensors(self): return {"t": self.t}
class Obs:
    def is_active(self, info): return info.bootstrap_room_ids_int is None
    def before_grammar(self, logits, info): return logits[:, :2].clone()
    def after_sample(self, state, tokens): return Out(state)
    def from_pp_tensors(self, tensors): return Out(tensors["t"])
O = Obs()
"""


@pytest.mark.torch
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the child is Linux's")
def test_an_observer_reading_req_and_sampling_info_defaults_passes(tmp_path):
    path = tmp_path / "reads.py"
    path.write_text(OBSERVER)
    report = check_observer(f"{path}:O", ObserverOptions(batch_sizes=(2,), steps=2))
    assert [(f.code, f.message) for f in report.findings] == []
