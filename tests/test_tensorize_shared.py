"""Shared structure in a dump costs tensorize what the file holds, not what it would expand to.

A pickle stores a list once and refers to it again in two bytes, so forty lists, each holding
the next one twice, are 2**40 numbers in under 2 KB. Converting such a value would build a
tensor of 2**40 numbers: tensorize refuses it with one line naming the value and ``max_items``.
The same structure elsewhere in the file is written back shared, as torch.save writes it.
``ppaux.guard.tensorize`` checks a shared list once, whatever its repeats.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from test_tensorize import ppaux

from ppaux.errors import LimitExceeded
from ppaux.fix import tensorize_dump
from ppaux.guard import NotTensorizable
from ppaux.guard import tensorize as guard_tensorize
from ppaux.limits import Limits

pytestmark = pytest.mark.torch

P = "__sampling_observer_output__."
DEPTH = 40


def _doubled(kind: str, depth: int = DEPTH, leaf: object = 1) -> object:
    """``depth`` levels, each holding the level below twice (the same object)."""
    value = leaf
    for level in range(depth):
        shape = kind if kind != "mix" else ("list", "tuple", "dict")[level % 3]
        if shape == "list":
            value = [value, value]
        elif shape == "tuple":
            value = (value, value)
        else:
            value = {"a": value, "b": value}
    return value


def _save(path: Path, mapping: dict) -> Path:
    torch.save(mapping, path)
    assert path.stat().st_size < 4096  # the whole structure is a few kilobytes of pickle
    return path


@pytest.mark.parametrize("kind", ["list", "tuple", "list_tuple"])
def test_an_auxiliary_value_that_expands_past_max_items_is_refused(kind, tmp_path):
    value: object = 1.0
    for level in range(DEPTH):
        value = (
            [value, value]
            if kind == "list" or (kind == "list_tuple" and level % 2)
            else (
                value,
                value,
            )
        )
    source = _save(tmp_path / "in.pt", {"next_token_ids": torch.arange(3), P + "x": value})
    output = tmp_path / "out.pt"
    with pytest.raises(LimitExceeded) as raised:
        tensorize_dump(str(source), str(output))
    assert raised.value.limit == "max_items"
    assert f"{2 ** (DEPTH + 1) - 1:,} values" in str(raised.value)
    assert P + "x" in str(raised.value)
    assert not output.exists()
    # Through the CLI: one line, exit 2, nothing written.
    done = ppaux("tensorize", str(source), "-o", str(output))
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert "max_items" in done.stderr and str(source) in done.stderr
    assert not output.exists()


def test_a_shared_value_within_max_items_converts_to_its_written_out_tensor(tmp_path):
    row = [1, 2, 3]
    grid = [row, row]
    value = [grid, grid, grid]  # 3 x 2 x 3, every row the same list
    source = _save(tmp_path / "in.pt", {"next_token_ids": torch.arange(3), P + "x": value})
    output = tmp_path / "out.pt"
    assert tensorize_dump(str(source), str(output)).written
    loaded = torch.load(output, weights_only=True)
    assert loaded[P + "x"].tolist() == [[[1, 2, 3], [1, 2, 3]]] * 3
    assert loaded[P + "x"].dtype == torch.int64


@pytest.mark.parametrize("kind", ["list", "tuple", "dict", "mix"])
def test_shared_structure_outside_the_converted_value_is_written_back_shared(kind, tmp_path):
    source = _save(
        tmp_path / "in.pt",
        {"next_token_ids": torch.arange(3), P + "x": [1.5, 2.5], "extra": _doubled(kind)},
    )
    output = tmp_path / "out.pt"
    assert tensorize_dump(str(source), str(output)).written
    assert os.path.getsize(output) < 4096
    loaded = torch.load(output, weights_only=True)
    node = loaded["extra"]
    for _ in range(DEPTH):
        first, second = node if not isinstance(node, dict) else (node["a"], node["b"])
        assert first is second  # one object, as in the input
        node = first
    assert node == 1
    assert loaded[P + "x"].tolist() == [1.5, 2.5]


def test_guard_checks_a_shared_list_once():
    ragged = _doubled("list", leaf="text")  # 2**40 strings once written out
    with pytest.raises(NotTensorizable, match=r"(\[0\]){40} is str of length 4"):
        guard_tensorize(ragged)


def _nested(draw_leaf: st.SearchStrategy) -> st.SearchStrategy:
    return st.recursive(
        draw_leaf, lambda inner: st.lists(inner, min_size=0, max_size=3), max_leaves=12
    )


@settings(max_examples=200, deadline=None)
@given(
    _nested(st.one_of(st.integers(-3, 3), st.just("s"), st.none())),
    st.lists(st.integers(0, 5), max_size=4),
)
def test_guard_judges_a_shared_list_as_its_written_out_copy(value, shares):
    # Share some inner lists: replace each chosen item of the top level by its first item.
    shared = value if isinstance(value, list) else [value]
    for index in shares:
        if 0 < index < len(shared):
            shared[index] = shared[0]
    copy = json.loads(json.dumps(shared))  # the same values, nothing shared

    def verdict(candidate: object) -> object:
        try:
            return guard_tensorize(candidate).tolist()
        except NotTensorizable as exc:
            return str(exc)

    assert verdict(shared) == verdict(copy)


def test_the_bound_is_max_items(tmp_path):
    value = _doubled("list", depth=10)  # 2**11 - 1 values written out
    source = _save(tmp_path / "in.pt", {"next_token_ids": torch.arange(3), P + "x": value})
    output = tmp_path / "out.pt"
    with pytest.raises(LimitExceeded, match="2,047 values"):
        tensorize_dump(str(source), str(output), Limits(max_items=2046))
    assert tensorize_dump(str(source), str(output), Limits(max_items=2047)).written
    assert torch.load(output, weights_only=True)[P + "x"].shape == (2,) * 10
