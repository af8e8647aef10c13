"""Nested jagged tensors checked against torch's real loader, in a child process, in its three
modes (weights_only=True, the same after ``import torch._dynamo``, weights_only=False): a file
torch.save wrote without the min/max_seqlen cache is read by the default reader (no PP119); what
torch refuses in every mode is refused with its reason (PP117); what torch.save never writes is
a deviation (PP118), an error where torch's tensor is not the one described, a warning where it
is."""

from __future__ import annotations

import json

import pytest
import torch
from helpers import REPO, cli
from torch_children import Children

pytestmark = pytest.mark.torch

_LOAD = """
import json, sys, warnings
import torch
warnings.simplefilter("ignore")
said = {}
for mode in ("weights_only", "dynamo", "unsafe"):
    if mode == "dynamo":
        import torch._dynamo
    try:
        t = torch.load(sys.argv[1], weights_only=mode != "unsafe")["t"]
    except Exception as exc:
        said[mode] = "refused: " + type(exc).__name__
    else:
        said[mode] = {"nested": t.is_nested, "dim": t.dim(), "parts": t.size(0),
                      "requires_grad": t.requires_grad}
print(json.dumps(said))
"""


def _torch_reads(path, children: Children) -> dict:
    """What torch says of ``path`` in its three modes, in a child forked from a process that
    imported torch alone (tests/torch_children.py): ``torch._dynamo`` is imported in the child,
    after the first mode's load, as in a fresh ``python -c``."""
    done = children.run(_LOAD, str(path))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _inspect(path) -> tuple[list[dict], dict | None]:
    """ppaux inspect's findings on ``path`` and its tensor as described (None if unread)."""
    result = cli("inspect", str(path), "--format", "json")
    assert result.exit_code != 2, result.stderr
    document = json.loads(result.stdout)
    payloads = [p for f in document["files"] for p in f["payloads"]]
    if not payloads:
        return document["findings"], None
    (entry,) = [e for e in payloads[0]["entries"] if e["key"] == "t"]
    described = {
        "nested": True,
        "dim": entry["nested"]["part_dims"] + 1,
        "parts": entry["nested"]["parts"],
        "requires_grad": entry["requires_grad"],
    }
    return document["findings"], described


def _from_jagged(kind: str) -> torch.Tensor:
    values, offsets = torch.arange(12.0).reshape(6, 2), torch.tensor([0, 2, 6])
    if kind == "holes":
        return torch.nested.nested_tensor_from_jagged(values, offsets, torch.tensor([1, 3]))
    if kind == "empty_parts":
        return torch.nested.nested_tensor_from_jagged(values, torch.tensor([0, 0, 6, 6]))
    nested = torch.nested.nested_tensor_from_jagged(values, offsets)
    return nested.transpose(1, 2) if kind == "ragged_idx2" else nested


@pytest.mark.parametrize("kind", ["plain", "holes", "empty_parts", "ragged_idx2"])
def test_a_jagged_tensor_without_a_seqlen_cache_is_read_by_the_default_reader(
    tmp_path, kind, torch_children
):
    path = tmp_path / "nt.pt"
    torch.save({"t": _from_jagged(kind)}, path)
    said = _torch_reads(path, torch_children)
    assert isinstance(said["weights_only"], dict), said  # read without torch._dynamo
    findings, described = _inspect(path)
    codes = {f["code"] for f in findings}
    assert not codes & {"PP117", "PP118", "PP119", "PP201"}, findings
    assert described == said["unsafe"], said


def _save_edited(path, edit, build=None) -> None:
    """torch.save of a jagged tensor whose reduction ``edit`` changes (kwargs, state); with
    ``build``, a BUILD of that state follows the rebuild."""
    from torch.nested._internal.nested_tensor import NestedTensor

    written = NestedTensor.__reduce_ex__

    def reduce_ex(self, proto):
        rebuild, (func, cls, (kwargs,), state) = written(self, proto)
        kwargs, state = edit(dict(kwargs), dict(state))
        if build is not None:
            return rebuild, (func, cls, (kwargs,), state), build
        return rebuild, (func, cls, (kwargs,), state)

    NestedTensor.__reduce_ex__ = reduce_ex
    try:
        nested = torch.nested.nested_tensor_from_jagged(
            torch.arange(12.0).reshape(6, 2), torch.tensor([0, 2, 6])
        )
        torch.save({"t": nested}, path)
    finally:
        NestedTensor.__reduce_ex__ = written


def _both(name: str, value):
    state_name = {"values": "_values", "lengths": "_lengths"}.get(name, name)

    def edit(kwargs, state):
        kwargs[name] = value() if callable(value) else value
        if state_name in state:
            state[state_name] = kwargs[name]
        return kwargs, state

    return edit


def _state(name: str, value):
    def edit(kwargs, state):
        state[name] = value
        return kwargs, state

    return edit


def _int_grad(kwargs, state):
    kwargs["values"] = state["_values"] = kwargs["values"].long()
    kwargs["requires_grad"] = True
    return kwargs, state


def _without(name: str):
    def edit(kwargs, state):
        del kwargs[name]
        return kwargs, state

    return edit


def _same(kwargs, state):
    return kwargs, state


_REFUSED = {
    "extra_build": (_same, {"x": 1}),
    "grad_int_values": (_int_grad, None),
    "lengths_wrong_size": (_both("lengths", lambda: torch.tensor([1, 1, 1, 1])), None),
    "ragged_3": (_both("_ragged_idx", 3), None),
    "ragged_5": (_both("_ragged_idx", 5), None),
    "values_0d": (_both("values", lambda: torch.tensor(1.0)), None),
    "no_values": (_without("values"), None),
    "values_list": (_both("values", [1.0, 2.0]), None),
}


@pytest.mark.parametrize("name", sorted(_REFUSED))
def test_what_torch_refuses_in_every_mode_is_refused(tmp_path, name, torch_children):
    path = tmp_path / "nt.pt"
    edit, build = _REFUSED[name]
    _save_edited(path, edit, build)
    said = _torch_reads(path, torch_children)
    assert all(str(v).startswith("refused") for v in said.values()), said
    findings, _ = _inspect(path)
    assert "PP117" in {f["code"] for f in findings}, findings


_DEVIATING = {
    # torch's tensor is not the one described: an error.
    "state_size": (_state("_size", (7, 7, 7)), "error"),
    "state_data": (_state("data", torch.zeros(2, 2)), "error"),
    "ragged_0": (_both("_ragged_idx", 0), "error"),
    # torch reads what is described: a warning.
    "state_requires_grad": (_state("requires_grad", True), "warning"),
    "ragged_minus_1": (_both("_ragged_idx", -1), "warning"),  # -1 - 1 is 2-d values' dim 0
    "no_ragged_idx": (_without("_ragged_idx"), "warning"),
    "no_lengths": (_without("lengths"), "warning"),
}


@pytest.mark.parametrize("name", sorted(_DEVIATING))
def test_what_torch_save_never_writes_is_a_deviation(tmp_path, name, torch_children):
    path = tmp_path / "nt.pt"
    edit, severity = _DEVIATING[name]
    _save_edited(path, edit)
    said = _torch_reads(path, torch_children)["unsafe"]
    assert isinstance(said, dict), said  # torch reads it
    findings, described = _inspect(path)
    deviations = [f["severity"] for f in findings if f["code"] == "PP118"]
    assert deviations == [severity], findings
    if severity == "warning":
        assert described == said
    else:
        assert described != said


@pytest.mark.parametrize("state", [None, {}], ids=["none", "empty"])
def test_a_state_torch_save_never_writes_that_torch_reads_alike_is_a_warning(
    tmp_path, state, torch_children
):
    path = tmp_path / "nt.pt"
    _save_edited(path, lambda kwargs, _: (kwargs, state))
    said = _torch_reads(path, torch_children)["unsafe"]
    findings, described = _inspect(path)
    assert [f["severity"] for f in findings if f["code"] == "PP118"] == ["warning"], findings
    assert described == said


@pytest.mark.parametrize("name", ["nested_jagged", "nested_jagged_seqlen"])
def test_torch_2_8_s_own_jagged_save_is_as_written(name, torch_children):
    """torch 2.8.0's torch.save (fixtures/releases/v2.8.0/jagged/) writes each _DimRange's
    state as the dict {'dim', 'min', 'max'}: as that release writes it, no deviation; torch
    2.13 reads the tensor described in the modes that read it, and PP119 says where the
    default reader refuses it."""
    path = REPO / "fixtures" / "releases" / "v2.8.0" / "jagged" / f"{name}.pt"
    said = _torch_reads(path, torch_children)
    findings, described = _inspect(path)
    codes = {f["code"].split("/")[0] for f in findings}
    assert not codes & {"PP117", "PP118"}, findings
    assert said["dynamo"] == said["unsafe"] == described
    assert ("PP119" in codes) == (not isinstance(said["weights_only"], dict))
