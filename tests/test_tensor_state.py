"""A tensor's saved ``__dict__`` as torch.load applies it (ppaux.dump.obj_state).

Every file here is a real ``torch.save`` of a tensor or Parameter whose ``__dict__`` holds a
name; what torch.load makes of it (read by torch itself, in this process, on files these tests
wrote) is the expectation: ppaux describes the same dtype, shape, stride, requires_grad and
attributes, or reports a finding at warning or above.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppaux.dump import inspect_paths
from ppaux.dump.obj_state import READ_ONLY_FIELDS, SETTER_FIELDS, TENSOR_FIELDS
from ppaux.report.findings import Severity

pytestmark = pytest.mark.torch


def _saved(folder: Path, name: str, tensor: torch.Tensor, attribute: str, value: object) -> Path:
    tensor.__dict__[attribute] = value
    path = folder / f"{name}.pt"
    torch.save({"t": tensor}, path)
    return path


def _loaded(path: Path) -> torch.Tensor | Exception:
    """torch.load's reading (both loaders agree on every file here), or its exception."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return torch.load(path, weights_only=False)["t"]  # a file this test wrote
        except Exception as exc:  # torch's own refusal is the expectation
            return exc


def _inspected(path: Path) -> tuple[dict[str, Any] | None, dict[str, str]]:
    report = inspect_paths([str(path)])
    serious = {
        f.code: f.message
        for f in report.findings
        if f.severity in (Severity.WARNING, Severity.ERROR)
    }
    files = report.data["files"]
    payloads = (files[0].get("payloads") or []) if files else []
    entry = payloads[0]["entries"][0] if payloads and payloads[0]["entries"] else None
    return entry, serious


def _description(tensor: torch.Tensor) -> dict[str, Any]:
    return {
        "dtype": str(tensor.dtype).removeprefix("torch."),
        "shape": list(tensor.shape),
        "stride": list(tensor.stride()),
        "storage_offset": tensor.storage_offset(),
        "requires_grad": tensor.requires_grad,
        "attributes": sorted(tensor.__dict__),
    }


def _described(entry: dict[str, Any]) -> dict[str, Any]:
    described = {name: entry[name] for name in ("dtype", "shape", "stride", "storage_offset")}
    described["requires_grad"] = entry["requires_grad"]
    described["attributes"] = sorted(a["name"] for a in entry.get("attributes", []))
    return described


def _agrees(path: Path) -> tuple[torch.Tensor | Exception, dict[str, str]]:
    """Assert the promise on one file: torch.load's tensor as described, or a finding."""
    loaded = _loaded(path)
    entry, serious = _inspected(path)
    if isinstance(loaded, Exception):
        assert serious, f"{path.name}: torch.load fails ({loaded}) but ppaux has no finding"
    elif not serious:
        assert entry is not None
        assert _described(entry) == _description(loaded), path.name
    return loaded, serious


def test_data_in_the_dict_is_read_as_torch_load_replaces_it(tmp_path):
    path = _saved(tmp_path, "data", torch.arange(6.0), "data", torch.zeros(2, 2).double())
    loaded, serious = _agrees(path)
    assert isinstance(loaded, torch.Tensor) and loaded.dtype == torch.float64
    assert not serious, serious  # as torch.save writes it, and described as torch reads it
    entry, _ = _inspected(path)
    assert entry is not None and entry["dtype"] == "float64" and entry["shape"] == [2, 2]


def test_a_parameter_s_data_in_the_dict(tmp_path):
    param = torch.nn.Parameter(torch.arange(4.0))
    path = _saved(tmp_path, "param_data", param, "data", torch.zeros(2, 3).double()[:, 1:])
    loaded, serious = _agrees(path)
    assert isinstance(loaded, torch.nn.Parameter) and list(loaded.shape) == [2, 2]
    assert not serious, serious
    entry, _ = _inspected(path)
    assert entry is not None and entry["stride"] == [3, 1] and entry["storage_offset"] == 1


def test_integer_data_for_a_parameter_that_requires_grad_is_refused(tmp_path):
    param = torch.nn.Parameter(torch.arange(4.0))
    path = _saved(tmp_path, "param_int", param, "data", torch.arange(3))
    loaded, serious = _agrees(path)
    assert isinstance(loaded, Exception) and "PP117" in serious, serious
    assert "'data'" in serious["PP117"]


@pytest.mark.parametrize("name", ["T", "shape", "dtype", "is_leaf", "retains_grad", "device"])
def test_a_read_only_field_is_torch_refusing_the_file_naming_it(tmp_path, name):
    path = _saved(tmp_path, name, torch.arange(3.0), name, 1)
    loaded, serious = _agrees(path)
    assert isinstance(loaded, AttributeError), loaded
    assert "PP117" in serious and repr(name) in serious["PP117"], serious


@pytest.mark.parametrize("kind", ["tensor", "parameter"])
@pytest.mark.parametrize("value", [False, True])
def test_requires_grad_in_the_dict_sets_the_flag_not_an_attribute(tmp_path, kind, value):
    tensor = torch.arange(3.0)
    if kind == "parameter":
        tensor = torch.nn.Parameter(tensor)
    path = _saved(tmp_path, f"{kind}_{value}", tensor, "requires_grad", value)
    loaded, serious = _agrees(path)
    assert isinstance(loaded, torch.Tensor) and loaded.requires_grad is value
    assert loaded.__dict__ == {} and not serious, serious
    entry, _ = _inspected(path)
    assert entry is not None and "attributes" not in entry


@pytest.mark.parametrize("kind", ["tensor", "parameter"])
def test_an_attribute_that_refers_to_the_tensor_itself(tmp_path, kind):
    # The pickler memoizes the tensor while writing its state and discards the copy it then
    # builds: torch.load's tensor is the first copy, rebuilt from the still-empty __dict__.
    tensor = torch.arange(3.0)
    if kind == "parameter":
        tensor = torch.nn.Parameter(tensor)
    tensor.me = tensor
    path = tmp_path / "self.pt"
    torch.save({"t": tensor}, path)
    loaded, serious = _agrees(path)
    assert isinstance(loaded, torch.Tensor) and loaded.__dict__ == {}
    assert set(serious) == {"PP119"}, serious  # the default loader does not run POP
    entry, _ = _inspected(path)
    assert entry is not None and "attributes" not in entry


def test_a_gradient_is_not_described_as_an_attribute(tmp_path):
    path = _saved(tmp_path, "grad", torch.arange(3.0), "grad", torch.ones(3))
    loaded, serious = _agrees(path)
    assert isinstance(loaded, torch.Tensor) and loaded.grad is not None
    assert "PP202" in serious and "'grad'" in serious["PP202"], serious


def test_names_is_an_attribute_like_any_other(tmp_path):
    path = _saved(tmp_path, "names", torch.arange(3.0), "names", ("N",))
    loaded, serious = _agrees(path)
    assert isinstance(loaded, torch.Tensor) and loaded.__dict__ == {"names": ("N",)}
    assert not serious, serious


def test_the_fields_are_the_data_descriptors_torch_tensor_has():
    fields = {
        name
        for cls in torch.nn.Parameter.__mro__
        for name, attr in vars(cls).items()
        if hasattr(type(attr), "__set__")
    }
    assert fields == TENSOR_FIELDS, sorted(fields ^ TENSOR_FIELDS)
    assert not READ_ONLY_FIELDS & SETTER_FIELDS


@pytest.mark.parametrize("name", sorted(READ_ONLY_FIELDS))
def test_each_read_only_field_is_one_torch_cannot_set(name):
    for value in (None, 1, torch.zeros(1)):
        with pytest.raises(AttributeError):
            setattr(torch.arange(3.0), name, value)


_VALUES = {
    "float64": lambda: torch.zeros(2, 2, dtype=torch.float64),
    "float32": lambda: torch.ones(3),
    "int64": lambda: torch.arange(2),
    "none": lambda: None,
    "int": lambda: 1,
    "true": lambda: True,
    "false": lambda: False,
    "text": lambda: "x",
    "dtype": lambda: torch.float16,
    "empty_dict": dict,
}
_NAMES = st.one_of(
    st.sampled_from(sorted(TENSOR_FIELDS - {"__class__", "__dict__"})),
    st.text("abcxyz_", min_size=1, max_size=6),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    items=st.lists(st.tuples(_NAMES, st.sampled_from(sorted(_VALUES))), min_size=1, max_size=3),
    parameter=st.booleans(),
)
def test_a_saved_dict_is_described_as_torch_load_reads_it_or_reported(
    tmp_path_factory, items, parameter
):
    tensor = torch.arange(6.0)
    if parameter:
        tensor = torch.nn.Parameter(tensor)
    for name, value in items:
        tensor.__dict__[name] = _VALUES[value]()
    path = tmp_path_factory.mktemp("state") / "t.pt"
    torch.save({"t": tensor}, path)
    _agrees(path)


def test_a_view_torch_fails_to_build_before_data_replaces_it(tmp_path):
    import zipfile

    from torch_archives import torch_archive

    path = _saved(tmp_path, "data", torch.arange(6.0), "data", torch.zeros(2, 2).double())
    with zipfile.ZipFile(path) as archive:
        pkl = archive.read("data/data.pkl")
        storages = {key: archive.read(f"data/data/{key}") for key in ("0", "1")}
    edited = pkl.replace(b"K\x06\x85", b"K\x07\x85", 1)  # the rebuilt view: 7 of 6 elements
    assert edited != pkl
    out = torch_archive(tmp_path / "edited.pt", edited, storages)
    loaded, serious = _agrees(out)
    assert isinstance(loaded, RuntimeError), loaded
    assert "PP117" in serious, serious
