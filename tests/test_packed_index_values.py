"""Packed tensors whose index values were edited after torch.save, checked against torch's real
loader in a child process: a sparse tensor torch.load reads unchecked but torch's invariant
check refuses is a PP118 error that quotes torch's message; a strided nested tensor torch.load
refuses is PP117 with torch's message; an unedited file stays clean of both."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import pytest
import torch
import torch._utils
from helpers import cli

pytestmark = pytest.mark.torch

_LOAD = """
import sys, warnings
import torch
warnings.simplefilter("ignore")
try:
    if sys.argv[2] == "check":
        with torch.sparse.check_sparse_tensor_invariants():
            torch.load(sys.argv[1], weights_only=True)
    else:
        torch.load(sys.argv[1], weights_only=True)
except Exception as exc:
    print("refused:" + str(exc).splitlines()[0])
else:
    print("read")
"""


def _torch_says(path, mode: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", _LOAD, str(path), mode], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def _findings(path) -> list[dict]:
    result = cli("inspect", str(path), "--format", "json")
    assert result.exit_code != 2, result.stderr
    return json.loads(result.stdout)["findings"]


def _save_edited(path, tensor, rebuild, index, value) -> None:
    """torch.save of ``tensor`` whose reduction's data (for ``rebuild``) has item ``index``
    replaced by ``value``."""
    written = torch.Tensor.__reduce_ex__

    def reduce_ex(self, proto):
        func, args = written(self, proto)[:2]
        if func is not rebuild:
            return func, args
        data = list(args[1] if rebuild is torch._utils._rebuild_sparse_tensor else args)
        data[index] = value
        if rebuild is torch._utils._rebuild_sparse_tensor:
            return func, (args[0], tuple(data))
        return func, tuple(data)

    torch.Tensor.__reduce_ex__ = reduce_ex
    try:
        torch.save({"t": tensor}, path)
    finally:
        torch.Tensor.__reduce_ex__ = written


_DENSE = torch.tensor([[0.0, 2.0, 0.0], [3.0, 0.0, 4.0]])
_SPARSE = {
    "coo_index_past_size": (_DENSE.to_sparse(), 0, torch.tensor([[0, 1, 5], [1, 0, 2]])),
    "coo_negative_index": (_DENSE.to_sparse(), 0, torch.tensor([[0, -1, 1], [1, 0, 2]])),
    "coo_coalesced_unsorted": (_DENSE.to_sparse(), 0, torch.tensor([[1, 0, 1], [0, 1, 2]])),
    "csr_first_not_0": (_DENSE.to_sparse_csr(), 0, torch.tensor([1, 1, 3])),
    "csr_last_not_nnz": (_DENSE.to_sparse_csr(), 0, torch.tensor([0, 1, 2])),
    "csr_col_past": (_DENSE.to_sparse_csr(), 1, torch.tensor([1, 0, 7])),
    "csr_col_unsorted": (_DENSE.to_sparse_csr(), 1, torch.tensor([1, 2, 0])),
    "csr_rows_of_size": (_DENSE.to_sparse_csr(), 3, (3, 3)),
    "csc_row_past": (_DENSE.to_sparse_csc(), 1, torch.tensor([1, 0, 2])),
    "bsr_size_not_blocks": (torch.ones(4, 4).to_sparse_bsr((2, 2)), 3, (5, 4)),
    "bsc_row_past": (torch.ones(4, 4).to_sparse_bsc((2, 2)), 1, torch.tensor([0, 3, 0, 1])),
}


@pytest.mark.parametrize("name", sorted(_SPARSE))
def test_sparse_indices_torch_checks_refuse_are_an_error_in_torch_s_words(tmp_path, name):
    path = tmp_path / "sparse.pt"
    tensor, index, value = _SPARSE[name]
    _save_edited(path, tensor, torch._utils._rebuild_sparse_tensor, index, value)
    assert _torch_says(path, "default") == "read"
    said = _torch_says(path, "check")
    assert said.startswith("refused:"), said
    (deviation,) = [f for f in _findings(path) if f["code"] == "PP118"]
    assert deviation["severity"] == "error"
    assert said.removeprefix("refused:") in deviation["message"]


with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the strided layout's prototype warning
    _NESTED = torch.nested.nested_tensor([torch.zeros(2, 3), torch.zeros(4, 3)])
_NESTED_REFUSED = {
    "size_past_storage": (1, torch.tensor([[2, 3], [5, 3]])),
    "negative_stride": (2, torch.tensor([[3, 1], [-3, 1]])),
    "offset_past_storage": (3, torch.tensor([0, 10])),
    "sizes_int32": (1, torch.tensor([[2, 3], [4, 3]], dtype=torch.int32)),
    "sizes_1d": (1, torch.tensor([2, 4])),
    "offsets_of_3_parts": (3, torch.tensor([0, 6, 18])),
}


@pytest.mark.parametrize("name", sorted(_NESTED_REFUSED))
def test_a_strided_nested_tensor_torch_refuses_is_refused_in_its_words(tmp_path, name):
    path = tmp_path / "nested.pt"
    index, value = _NESTED_REFUSED[name]
    _save_edited(path, _NESTED, torch._utils._rebuild_nested_tensor, index, value)
    said = _torch_says(path, "default")
    assert said.startswith("refused:"), said
    refusals = [f for f in _findings(path) if f["code"] == "PP117"]
    assert refusals, name
    # torch's own words, up to the file and line its INTERNAL ASSERTs name.
    words = said.removeprefix("refused:").split(" at ")[0].split(", please")[0]
    assert words.split(" INTERNAL")[0] in refusals[0]["message"]


@pytest.mark.parametrize(
    "tensor",
    [_DENSE.to_sparse(), _DENSE.to_sparse_csr(), _DENSE.to_sparse_csc(), _NESTED],
    ids=["coo", "csr", "csc", "nested"],
)
def test_as_torch_save_wrote_it_no_deviation(tmp_path, tensor):
    path = tmp_path / "t.pt"
    torch.save({"t": tensor}, path)
    codes = {f["code"] for f in _findings(path)}
    assert not codes & {"PP117", "PP118"}, codes
