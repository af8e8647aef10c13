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


_QUANTIZED_DTYPES = [torch.qint8, torch.quint8, torch.qint32, torch.quint4x2, torch.quint2x4]


def _quantized_view(dtype: torch.dtype) -> torch.Tensor:
    # A view of bytes as a quantized dtype is not quantized; torch.save writes it with a plain
    # _rebuild_tensor_v2 over the quantized storage class.
    view = torch.zeros(12, dtype=torch.uint8).view(dtype)[:3]
    assert not view.is_quantized
    return view


@pytest.mark.parametrize("dtype", _QUANTIZED_DTYPES, ids=str)
@pytest.mark.parametrize("key", ["t", OUTPUT_PREFIX + "x"])
def test_a_quantized_dtype_view_reads_as_torch_load_gives_it(tmp_path, dtype, key):
    path = tmp_path / "q.pt"
    torch.save(
        {"next_token_ids": torch.ones(2, dtype=torch.int64), key: _quantized_view(dtype)}, path
    )
    loaded = torch.load(path, weights_only=True)[key]  # a file this test wrote
    assert loaded.is_quantized and loaded.dtype == dtype
    with pytest.raises(RuntimeError):
        str(loaded)  # its quantizer is unknown
    report = inspect_paths([str(path)])
    found = [(f.code, f.key, f.severity.value) for f in report.findings]
    assert found == [("PP107", key, "error")], found
    assert "no quantizer" in report.findings[0].message
    entries = report.data["files"][0]["payloads"][0]["entries"]
    (entry,) = [e for e in entries if e["key"] == key]
    assert entry["tensor_kind"] == "quantized" and entry["dtype"] == str(dtype).removeprefix(
        "torch."
    )
    assert tuple(entry["shape"]) == tuple(loaded.shape)


def test_a_quantized_dtype_view_in_a_value_is_named_unusable(tmp_path):
    path = tmp_path / "q.pt"
    torch.save({"extra": [_quantized_view(torch.qint8)], OUTPUT_PREFIX + "s": torch.ones(2)}, path)
    (loaded,) = torch.load(path, weights_only=True)["extra"]  # a file this test wrote
    assert loaded.is_quantized
    with pytest.raises(RuntimeError):
        loaded.clone()
    report = inspect_paths([str(path)])
    found = sorted((f.code, f.key, f.severity.value) for f in report.findings)
    assert found == [("PP107", "extra", "warning"), ("PP110", "extra", "info")], found
    assert "no quantizer" in next(f for f in report.findings if f.code == "PP107").message


def test_diff_shows_a_nested_tensor_by_its_parts(tmp_path):
    from helpers import cli

    left, right = tmp_path / "a.pt", tmp_path / "b.pt"
    torch.save({"t": _nested(), "u": torch.ones(2)}, left)
    torch.save({"t": torch.ones(5), "u": torch.ones(2)}, right)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        loaded = torch.load(left)["t"]  # a file this test wrote
    result = cli("diff", str(left), str(right))
    text = " ".join(result.output.split())
    assert f"nested float32 ({loaded.size(0)} parts, {loaded.dim() - 1}-d each)" in text, text
    assert "(5,)" not in text.split("float32 (5,) cpu", 1)[0], text  # the buffer's shape
