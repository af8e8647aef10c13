"""A tensor's elements read for its digest are bounded (``Limits.max_digested_elements``).

``torch.zeros(1).expand(2**33)`` holds 4 bytes and 2**33 elements: a digest of its values reads
every one of them, a time its memory does not bound. Past the bound a tensor (or a numpy array)
is not compared (PP716, naming the limit), never described by less than its values; within it,
it is digested as before."""

from __future__ import annotations

import hashlib
import time

import numpy as np
import pytest
import torch
from helpers import REPO
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.limits import Limits
from ppaux.observer import ObserverOptions, check_observer
from ppaux.observer.compare import record, records
from ppaux.observer.digests import digest_budget

pytestmark = pytest.mark.torch

TARGET = f"{REPO}/fixtures/observers/expanded.py:MaskedObserver"


def test_an_expanded_tensor_of_2_to_the_33_elements_is_not_compared_and_named():
    started = time.monotonic()
    report = check_observer(TARGET, ObserverOptions(batch_sizes=(2,), steps=2))
    took = time.monotonic() - started
    assert [f.code for f in report.findings] == ["PP716"], [
        (f.code, f.message) for f in report.findings
    ]
    item = report.findings[0]
    assert "8,589,934,592 elements, more than a digest reads" in item.message
    assert "max_digested_elements=67108864" in item.message
    assert [s.name for s in item.suggestions] == ["max_digested_elements"]
    assert report.data["observer"]["limits_reached"] == ["max_digested_elements"]
    # Reading its 32 GiB of values would take minutes; the check takes what a clean one does.
    assert took < 60, took


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 1 << 40), st.integers(0, 1 << 16))
def test_a_tensor_is_compared_exactly_when_it_has_at_most_the_bound(count, bound):
    # Expanded from one element: 2**40 elements hold 4 bytes, never allocated.
    value = torch.zeros(1, dtype=torch.float32).expand(count)
    with digest_budget(Limits().max_digested_items, None, bound):
        made = record(value)
    if count > bound:
        assert made["key"] == "not compared"
        assert made["limit"] == "max_digested_elements"
        assert f"{count:,} elements" in made["text"]
    else:
        assert made["kind"] == "tensor"
        assert made["sha256"] == hashlib.sha256(bytes(4 * count)).hexdigest()


def test_an_array_and_a_tensor_inside_a_container_are_bounded_too():
    holder = type("Holder", (), {})()
    holder.array = np.broadcast_to(np.zeros(1), (10,))
    holder.items = frozenset({torch.zeros(1).expand(10)})  # digested whole
    with digest_budget(Limits().max_digested_items, None, 9):
        found = records(holder)
    assert {path: item.get("limit") for path, item in found.items()} == {
        ".array": "max_digested_elements",
        ".items": "max_digested_elements",
    }
    with digest_budget(Limits().max_digested_items, None, 10):
        found = records(holder)
    assert all(item.get("key") != "not compared" for item in found.values())


def test_an_output_of_logits_size_is_compared_within_the_default_bound():
    count = 256 * 152_064  # a batch of 256 at Qwen2's vocabulary: 38,928,384 elements
    value = torch.zeros(1, dtype=torch.float32).expand(count)
    bounds = Limits()
    with digest_budget(bounds.max_digested_items, None, bounds.max_digested_elements):
        made = record(value)
    assert made["kind"] == "tensor"
    assert made["sha256"] == hashlib.sha256(bytes(4 * count)).hexdigest()
