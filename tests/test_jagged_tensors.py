"""A nested jagged tensor (layout=torch.jagged) as torch.save writes it: described by its parts
as torch.load gives it, and checked against torch's real loader: its default reader refuses the
file unless torch._dynamo was imported first (PP119, torch's reason), and nothing in the file runs
code outside torch's own rebuild (no PP201)."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import pytest
import torch
from helpers import cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppaux.dump import inspect_paths

pytestmark = pytest.mark.torch

_LOAD = """
import sys, torch
{prefix}
try:
    t = torch.load(sys.argv[1], weights_only=True)["t"]
except Exception as exc:
    print("refused:", exc)
else:
    print("loaded:", t.layout, t.size(0), t.dim())
"""


def _jagged(lengths: list[int], inner: tuple[int, ...], requires_grad: bool) -> torch.Tensor:
    parts = [torch.arange(n * max(1, _numel(inner)), dtype=torch.float32) for n in lengths]
    parts = [p[: n * _numel(inner)].reshape(n, *inner) for p, n in zip(parts, lengths, strict=True)]
    return torch.nested.nested_tensor(parts, layout=torch.jagged, requires_grad=requires_grad)


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for size in shape:
        n *= size
    return n


def _entry(path) -> dict:
    result = cli("inspect", str(path), "--format", "json")
    assert result.exit_code != 2, result.stderr
    document = json.loads(result.stdout)
    (entry,) = [e for e in document["files"][0]["payloads"][0]["entries"] if e["key"] == "t"]
    return {"entry": entry, "codes": sorted({f["code"] for f in document["findings"]})}


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lengths=st.lists(st.integers(1, 4), min_size=1, max_size=4),
    inner=st.sampled_from([(), (3,), (2, 2)]),
    requires_grad=st.booleans(),
)
def test_a_jagged_tensor_is_described_as_torch_loads_it(tmp_path, lengths, inner, requires_grad):
    path = tmp_path / "nt.pt"
    torch.save({"t": _jagged(lengths, inner, requires_grad)}, path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = torch.load(path, weights_only=False)["t"]  # a file this test wrote
    found = _entry(path)
    entry = found["entry"]
    assert entry["layout"] == str(loaded.layout) == "torch.jagged"
    assert entry["nested"] == {"parts": loaded.size(0), "part_dims": loaded.dim() - 1}
    assert entry["dtype"] == str(loaded.dtype).removeprefix("torch.")
    assert entry["requires_grad"] is loaded.requires_grad
    assert entry["bytes"] == loaded.values().numel() * loaded.values().element_size()
    # torch.save wrote it: in the writer's grammar (no PP118), nothing outside torch's own
    # rebuild runs (no PP201); the default reader refuses it (PP119); sglang cannot send it.
    assert found["codes"] == ["PP107", "PP119"], found


def test_the_default_reader_refuses_it_unless_torch_dynamo_was_imported(tmp_path):
    path = tmp_path / "nt.pt"
    torch.save({"t": _jagged([2, 3], (), False)}, path)
    said = {}
    for prefix in ("", "import torch._dynamo"):
        code = _LOAD.format(prefix=prefix)
        done = subprocess.run(
            [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True
        )
        said[prefix] = done.stdout.strip()
    assert said[""].startswith("refused:") and "must be imported" in said[""], said
    assert said["import torch._dynamo"] == "loaded: torch.jagged 2 2", said
    report = inspect_paths([str(path)])
    (refused,) = [f for f in report.findings if f.code == "PP119"]
    assert "torch.nested and torch._dynamo must be imported" in refused.message, refused
    assert "imported torch._dynamo first" in refused.message, refused
    assert not [f for f in report.findings if f.code in ("PP118", "PP201")], report.findings


def test_a_jagged_tensor_with_lengths_and_a_ragged_inner_dim(tmp_path):
    values = torch.arange(10.0)
    offsets = torch.tensor([0, 3, 5, 9])
    holey = torch.nested.nested_tensor_from_jagged(values, offsets, torch.tensor([2, 1, 3]))
    moved = _jagged([2, 3], (4,), False).transpose(1, 2)  # its ragged dimension is the last
    for name, value in (("holey", holey), ("moved", moved)):
        path = tmp_path / f"{name}.pt"
        torch.save({"t": value}, path)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loaded = torch.load(path, weights_only=False)["t"]  # a file this test wrote
        found = _entry(path)
        assert found["entry"]["nested"] == {
            "parts": loaded.size(0),
            "part_dims": loaded.dim() - 1,
        }, name
        # holey has no seqlen cache, so no _DimRange: the default reader reads it.
        expected = ["PP107"] if name == "holey" else ["PP107", "PP119"]
        assert found["codes"] == expected, (name, found)


def _save_edited(path, edit) -> None:
    """torch.save of a jagged tensor whose reduction ``edit`` changes (kwargs, state)."""
    from torch.nested._internal.nested_tensor import NestedTensor

    written = NestedTensor.__reduce_ex__

    def reduce_ex(self, proto):
        rebuild, (func, cls, (kwargs,), state) = written(self, proto)
        kwargs, state = edit(dict(kwargs), dict(state))
        return rebuild, (func, cls, (kwargs,), state)

    NestedTensor.__reduce_ex__ = reduce_ex
    try:
        torch.save({"t": _jagged([2, 3], (), False)}, path)
    finally:
        NestedTensor.__reduce_ex__ = written


def _two_d_offsets(kwargs, state):
    kwargs["offsets"] = state["_offsets"] = kwargs["offsets"].reshape(1, -1)
    return kwargs, state


def _other_values(kwargs, state):
    state["_values"] = kwargs["values"].clone() * 2  # torch sets the state's after the call
    return kwargs, state


def _reordered(kwargs, state):
    return dict(reversed(kwargs.items())), state


@pytest.mark.parametrize(
    ("edit", "code", "torch_loads"),
    [
        (_two_d_offsets, "PP117", False),
        (_other_values, "PP118", True),  # torch's tensor holds other values: an error
        (_reordered, "PP118", True),  # torch reads the same: a warning
    ],
    ids=["two_d_offsets", "other_values", "reordered"],
)
def test_a_jagged_tensor_torch_save_does_not_write_is_never_clean(
    tmp_path, edit, code, torch_loads
):
    path = tmp_path / "edited.pt"
    _save_edited(path, edit)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.load(path, weights_only=False)  # a file this test wrote
        loads = True
    except Exception:  # torch's own error, whichever it raises
        loads = False
    assert loads is torch_loads
    report = inspect_paths([str(path)])
    codes = {f.code for f in report.findings}
    assert code in codes and "PP201" not in codes, report.findings
    if code == "PP118":
        (deviation,) = [f for f in report.findings if f.code == "PP118"]
        severity = "warning" if edit is _reordered else "error"
        assert deviation.severity.value == severity, deviation
