"""A legitimate ``consume`` that writes many values per request (a hidden-state tap, a dict of
per-token scores) is described in records the parent takes: the check's own description of
the requests never floods the run (PP715), whatever the batch, and its verdict stands."""

from __future__ import annotations

import itertools
import json

import pytest
from observer_targets import linux_only

from ppaux.observer import ObserverOptions, check_observer
from ppaux.observer.framing import read_cost
from ppaux.observer.record_cuts import RECORD_BYTES, RECORD_COST, request_cuts

pytestmark = [pytest.mark.torch, linux_only("the child is Linux's")]

WIDE = """
class Host:
    def __init__(self, h): self.h = h
    def consume(self, batch, commits):
        for r, c, row in zip(batch.reqs, commits, self.h.tolist()):
            if c is None:
                continue
            r.customized_info = {
                "a": {f"k{i}": v for i, v in enumerate(row)},
                "b": {f"k{i}": -v for i, v in enumerate(row)},
            }
class Out:
    def __init__(self, h): self.h = h
    def copy_to_host(self, ct): return Host(ct(self.h))
    def to_pp_tensors(self): return {"h": self.h}
class Obs:
    def is_active(self, si): return True
    def before_grammar(self, logits, si): return logits[:, :256].clone()
    def after_sample(self, st, tok): return Out(st)
    def from_pp_tensors(self, t): return Out(t["h"]{scale})
O = Obs()
"""


def _check(tmp_path, scale: str = ""):
    path = tmp_path / "wide.py"
    path.write_text(WIDE.replace("{scale}", scale))
    options = ObserverOptions(batch_sizes=(64,), steps=1, vocab_size=256, timeout_s=60.0)
    return check_observer(f"{path}:O", options)


def test_a_consume_of_512_values_per_request_at_batch_64_is_not_a_flood(tmp_path):
    # 64 requests of 512 values on each path were one record of some 75 MB to read, past
    # the parent's bound: PP715 "the target's process sent a record ...", which it never did.
    report = _check(tmp_path)
    assert [f.code for f in report.findings] == []


def test_a_wide_consume_that_differs_on_rank_0_is_still_pp712(tmp_path):
    report = _check(tmp_path, scale=" * 2")
    codes = {f.code for f in report.findings}
    assert "PP715" not in codes
    assert "PP711" in codes


def _request(width: int) -> dict[str, dict[str, str]]:
    return {
        f".customized_info['a'][{i}]": {
            "kind": "value",
            "type": "float",
            "text": "0.5",
            "key": "0.5",
        }
        for i in range(width)
    }


@pytest.mark.parametrize(("count", "width"), [(1, 3), (256, 1), (64, 512), (300, 2000), (3, 40000)])
def test_each_cut_of_requests_stays_under_the_record_bounds(count, width):
    single = [_request(width) for _ in range(count)]
    pp = [_request(width) for _ in range(count)]
    head = {"event": "step", "batch_size": count, "step": 0}
    cuts = request_cuts(head, single, pp)
    assert cuts[0][0] == 0 and cuts[-1][1] == count
    assert all(a < b for a, b in cuts) and all(
        b == c for (_, b), (c, _) in itertools.pairwise(cuts)
    )
    for first, end in cuts:
        body = json_bytes({**head, "single_reqs": single[first:end], "pp_reqs": pp[first:end]})
        if end - first > 1:  # one request alone is one record, whatever it costs
            assert len(body) <= RECORD_BYTES
            assert read_cost(body) <= RECORD_COST
        assert end - first <= 256


def json_bytes(message: dict) -> bytes:
    return json.dumps(message).encode()
