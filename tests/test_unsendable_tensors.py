"""A sparse, quantized or nested tensor under any key of the dict sglang sends:
send_tensor_dict sends every top-level tensor with torch.distributed, after its metadata (which
takes each tensor's size, which a nested tensor has not), so the sender fails and rank 0 waits
(PP107, the pop predicted 'waits'), an auxiliary key or not; nested in a value, it travels
pickled (PP110) and is not refused. sglang's own wire refuses it as predicted in
tests/test_sglang_transport.py."""

from __future__ import annotations

import json
import warnings

import jsonschema
import pytest
import torch
from helpers import REPO

from ppaux.dump import inspect_paths
from ppaux.report.formats.json import render
from ppaux.sglang import OUTPUT_PREFIX

pytestmark = pytest.mark.torch

_SPARSE = {
    "coo": lambda: torch.eye(3).to_sparse(),
    "csr": lambda: torch.eye(3).to_sparse_csr(),
    "quantized": lambda: torch.quantize_per_tensor(torch.ones(3), 0.5, 0, torch.qint8),
    "nested": lambda: _nested(),
}


def _nested() -> torch.Tensor:
    with warnings.catch_warnings():  # torch: the strided layout's API is a prototype
        warnings.simplefilter("ignore", UserWarning)
        return torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])


@pytest.mark.parametrize("kind", sorted(_SPARSE))
@pytest.mark.parametrize("key", ["next_token_ids", OUTPUT_PREFIX + "scores"])
def test_it_is_predicted_under_any_top_level_key(tmp_path, kind, key):
    path = tmp_path / "m.pt"
    message = {
        "next_token_ids": torch.ones(2, dtype=torch.int64),
        OUTPUT_PREFIX + "s": torch.ones(2),
    }
    message[key] = _SPARSE[kind]()
    torch.save(message, path)
    report = inspect_paths([str(path)])
    found = [(f.code, f.key) for f in report.findings]
    assert ("PP107", key) in found, found
    (payload,) = report.data["files"][0]["payloads"]
    assert payload["predicted_pop"]["outcome"] == "waits"


def test_nested_in_a_value_it_travels_pickled(tmp_path):
    path = tmp_path / "m.pt"
    torch.save({"extra": [torch.eye(2).to_sparse()], OUTPUT_PREFIX + "s": torch.ones(2)}, path)
    report = inspect_paths([str(path)])
    assert [f.code for f in report.findings] == ["PP110"], report.findings
    assert report.data["files"][0]["payloads"][0]["predicted_pop"]["outcome"] == "ok"


@pytest.mark.parametrize(
    "sizes", [[(2,), (3,)], [(2, 4), (3, 4), (1, 4)], [(1, 2, 3)]], ids=["1d", "2d", "3d"]
)
def test_a_nested_tensor_is_described_by_its_parts_as_torch_load_gives_it(tmp_path, sizes):
    # A nested tensor has no shape (torch: its size() fails); the buffer's is not its shape.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        value = torch.nested.nested_tensor([torch.ones(size) for size in sizes])
    path = tmp_path / "nested.pt"
    torch.save({"t": value}, path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        loaded = torch.load(path)["t"]  # a file this test wrote
    report = inspect_paths([str(path)])
    assert "PP107" in {f.code for f in report.findings}, report.findings
    document = json.loads(render(report))
    jsonschema.validate(document, json.loads((REPO / "docs" / "report.schema.json").read_text()))
    (entry,) = document["files"][0]["payloads"][0]["entries"]
    assert entry["tensor_kind"] == "nested" and entry["shape"] is None, entry
    assert entry["nested"] == {"parts": loaded.size(0), "part_dims": loaded.dim() - 1}
    assert [tuple(part.shape) for part in loaded.unbind()] == sizes
    with pytest.raises(RuntimeError):
        loaded.size()
