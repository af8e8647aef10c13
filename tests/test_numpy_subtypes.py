"""numpy's ``_reconstruct(subtype, shape, dtype)`` as numpy takes its first argument: a class
that is not an ndarray subclass (collections.OrderedDict, int, fractions.Fraction) makes numpy
raise TypeError, and numpy.ma.MaskedArray given an ndarray's state raises ValueError, so
torch.load refuses the file in both modes: inspect says so (PP117, naming the key) and
tensorize refuses the key. numpy's own subclasses (numpy.matrix) are read, and named. Each
verdict is checked against torch.load run in a child process on the file this test wrote."""

from __future__ import annotations

import struct
import sys

import pytest
from helpers import REPO

from ppaux.dump import inspect_paths
from ppaux.fix import tensorize_dump

sys.path.insert(0, str(REPO / "fixtures"))

from make_adversarial import BUILD, NEWFALSE, NEWTRUE, by, call, g, i, s, tup
from test_tensorize_numpy import P, _dump, _torch_reads

pytestmark = pytest.mark.torch

VALUES = [1.5, 2.5]


def _array(subtype: bytes) -> bytes:
    dtype = call(g("numpy", "dtype"), s("f8"), NEWFALSE, NEWTRUE)
    dtype += tup(i(3), s("<"), b"N", b"N", b"N", i(-1), i(-1), i(0)) + BUILD
    array = call(g("numpy._core.multiarray", "_reconstruct"), subtype, tup(i(0)), by(b"b"))
    data = by(struct.pack("<2d", *VALUES))
    return array + tup(i(1), tup(i(2)), dtype, NEWFALSE, data) + BUILD


def _torch_both(path, children) -> tuple[object, object]:
    """torch.load's reading in both modes: the array's values, or ('refused', why)."""
    import torch

    try:
        torch.load(path, weights_only=True)
        weights_only: object = "loaded"
    except Exception as exc:  # any refusal is torch's answer
        weights_only = ("refused", type(exc).__name__)
    return weights_only, _torch_reads(path, children)


@pytest.mark.parametrize(
    ("subtype", "named"),
    [
        (g("collections", "OrderedDict"), "collections.OrderedDict"),
        (g("builtins", "int"), "builtins.int"),
        (g("fractions", "Fraction"), "fractions.Fraction"),
        (g("numpy.ma", "MaskedArray"), "MaskedArray"),
    ],
    ids=["ordereddict", "int", "fraction", "masked"],
)
def test_a_subtype_numpy_refuses_is_torchs_refusal_and_tensorizes_to_nothing(
    tmp_path, subtype, named, torch_children
):
    pytest.importorskip("numpy")
    source = _dump(tmp_path / "in.pt", _array(subtype))
    weights_only, full = _torch_both(source, torch_children)
    assert weights_only[0] == "refused" and isinstance(full, tuple), (weights_only, full)
    assert full[0] == "refused", full
    report = inspect_paths([str(source)])
    refused = [f for f in report.findings if f.code == "PP117"]
    assert len(refused) == 1, report.findings
    assert refused[0].key == P + "values" and named in refused[0].message, refused[0]
    result = tensorize_dump(str(source), str(tmp_path / "out.pt"))
    assert not result.written and not (tmp_path / "out.pt").exists()
    [refusal] = result.refusals
    assert refusal.key == P + "values" and named in refusal.reason, refusal


def test_numpy_matrix_is_read_and_named_as_torch_reads_it(tmp_path, torch_children):
    np = pytest.importorskip("numpy")
    source = _dump(tmp_path / "in.pt", _array(g("numpy", "matrix")))
    assert _torch_reads(source, torch_children) == VALUES
    import torch

    read = torch.load(source, weights_only=False)[P + "values"]
    assert type(read) is np.matrix
    report = inspect_paths([str(source)])
    assert "PP117" not in {f.code for f in report.findings}
    [entry] = [
        e
        for f in report.data["files"]
        for payload in f["payloads"]
        for e in payload["entries"]
        if e["key"] == P + "values"
    ]
    assert entry["type"] == "numpy.matrix", entry
    result = tensorize_dump(str(source), str(tmp_path / "out.pt"))
    assert result.written, result.refusals
    assert torch.load(tmp_path / "out.pt", weights_only=True)[P + "values"].tolist() == VALUES
