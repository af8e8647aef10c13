"""A difference's finding says what is known: PP711 names a field of the output rank 0 rebuilt,
which rank 0's ``consume`` is handed but may never read (what it read is not recorded); PP712
names a field of the request itself after ``consume``."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ppaux.observer.compare import Difference
from ppaux.observer.findings import difference_finding

AT = "batch size 1, step 0"


def test_pp711_does_not_say_the_responses_carry_a_field_consume_may_not_read():
    item = Difference(".entropy", "bits", "float32 (1,) cpu [0.5]", "float32 (1,) cpu [0.25]")
    found = difference_finding("PP711", "obs.py:O", "the output rank 0 rebuilt", item, AT)
    assert found.message == (
        ".entropy of the output rank 0 rebuilt differs (bits): single stage float32 (1,) cpu "
        "[0.5], PP float32 (1,) cpu [0.25] (batch size 1, step 0); sglang raises nothing: "
        "rank 0's consume is handed the PP value (whether it reads .entropy is not known)"
    )


def test_pp712_names_the_requests_field_after_consume():
    item = Difference(".customized_info['entropy'][0]", "value", "float 0.5", "float 0.0")
    found = difference_finding("PP712", "obs.py:O", "request 0 after consume", item, AT)
    assert found.message == (
        ".customized_info['entropy'][0] of request 0 after consume differs (value): single "
        "stage float 0.5, PP float 0.0 (batch size 1, step 0); sglang raises nothing: rank "
        "0's request holds the PP value"
    )


@given(path=st.text(max_size=20), what=st.sampled_from(["bits", "value", "type", "missing"]))
def test_no_difference_claims_what_every_response_carries(path, what):
    item = Difference(path, what, "a", "b")
    for code, subject in (("PP711", "the output rank 0 rebuilt"), ("PP712", "request 0")):
        message = difference_finding(code, "obs.py:O", subject, item, AT).message
        assert "every response" not in message
