"""The payload checks against the transport itself: predictions must be what pop really does."""

from __future__ import annotations

import io

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.dump.checks import check_dump, predict_pop
from ppaux.dump.dumpfile import read_dump_bytes
from ppaux.dump.payload import find_payloads
from ppaux.limits import Limits
from ppaux.replay import transport
from ppaux.sglang.names import OUTPUT_PREFIX

pytestmark = pytest.mark.torch


class Observer:
    def from_pp_tensors(self, tensors):
        return dict(tensors)


values = st.one_of(
    st.builds(lambda n: torch.zeros(n), st.integers(0, 3)),
    st.none(),
    st.floats(allow_nan=False),
    st.lists(st.floats(allow_nan=False), max_size=3),
    st.text(max_size=3),
    st.builds(lambda: [torch.ones(1)]),
)
keys = st.one_of(
    st.text(max_size=6),
    st.builds(lambda s: OUTPUT_PREFIX + s, st.text(max_size=4)),
    st.integers(0, 5),
)


def roundtrip(mapping: dict):
    buffer = io.BytesIO()
    torch.save(mapping, buffer)
    return read_dump_bytes("mem.pt", buffer.getvalue())


@settings(max_examples=120, deadline=None)
@given(mapping=st.dictionaries(keys, values, max_size=5))
def test_predicted_pop_matches_the_transport(mapping):
    dump = roundtrip(mapping)
    predicted = predict_pop(dump.root)
    real = dict(mapping)
    try:
        result = transport.pop_auxiliary_output_from_pp_tensors(real, Observer())
    except (RuntimeError, AttributeError) as exc:
        assert predicted == {
            "outcome": "error",
            "error_type": type(exc).__name__,
            "error": str(exc),
        }
    else:
        assert predicted["outcome"] == ("no-aux" if result is None else "ok")
        assert predicted["error"] is None
    findings = check_dump(dump, find_payloads(dump), Limits())
    # Each defect predicts its own error; the one pop meets first is always among them.
    errors = {f.sglang_error for f in findings if f.code in ("PP101", "PP103")}
    if predicted["outcome"] == "error":
        assert predicted["error"] in errors
    else:
        assert errors == set()


def test_pp101_names_each_offending_key():
    mapping = {
        "next_token_ids": torch.arange(2),
        OUTPUT_PREFIX + "a": [1.0],
        OUTPUT_PREFIX + "b": torch.ones(1),
        OUTPUT_PREFIX + "c": None,
    }
    dump = roundtrip(mapping)
    findings = check_dump(dump, find_payloads(dump), Limits())
    assert [(f.code, f.key, f.message) for f in findings] == [
        ("PP101", OUTPUT_PREFIX + "a", "auxiliary entry 'a' holds a list of 1 float, not a tensor"),
        ("PP101", OUTPUT_PREFIX + "c", "auxiliary entry 'c' holds None, not a tensor"),
    ]
    assert all(f.path == "mem.pt" for f in findings)


def test_device_mismatch_against_other_tensors():
    from tensor_tags import saved_as

    buffer = io.BytesIO()
    with saved_as("cuda:0"):
        torch.save({"next_token_ids": torch.arange(2), OUTPUT_PREFIX + "a": torch.ones(1)}, buffer)
    dump = read_dump_bytes("mem.pt", buffer.getvalue())
    assert check_dump(dump, find_payloads(dump), Limits()) == []
