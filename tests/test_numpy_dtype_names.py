"""A numpy array's dtype named as numpy names it, where the pickled spec alone does not: a
datetime64 or timedelta64 dtype with its unit (numpy pickles 'M8' and the unit in the state), a
structured dtype with its fields (numpy pickles 'V<size>'), and the array's class where it is
one of numpy's ndarray subclasses. Each name is checked against the array torch.load gives."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from ppaux.dump import inspect_paths

pytestmark = pytest.mark.torch
np = pytest.importorskip("numpy")


def _entry(path: Path) -> dict[str, object]:
    report = inspect_paths([str(path)])
    [entry] = [e for f in report.data["files"] for p in f["payloads"] for e in p["entries"]]
    return entry


def _saved(tmp_path: Path, array: object) -> tuple[Path, object]:
    path = tmp_path / "a.pt"
    torch.save({"x": array}, path)
    return path, torch.load(path, weights_only=False)["x"]


@pytest.mark.parametrize(
    "dtype", ["datetime64[D]", "datetime64[ns]", "timedelta64[s]", "datetime64[25s]"]
)
def test_a_datetime_dtype_is_named_with_its_unit(tmp_path, dtype):
    path, read = _saved(tmp_path, np.zeros(2, dtype=dtype))
    assert str(read.dtype) == dtype
    assert _entry(path)["dtype"] == dtype


@pytest.mark.parametrize("align", [False, True])
def test_a_structured_dtype_is_named_by_its_fields(tmp_path, align):
    dtype = np.dtype([("a", "u1"), ("b", "<i8")], align=align)
    path, read = _saved(tmp_path, np.zeros(1, dtype=dtype))
    fields = ", ".join(
        f"{name}: {read.dtype.fields[name][0].name} at {read.dtype.fields[name][1]}"
        for name in read.dtype.names
    )
    named = _entry(path)["dtype"]
    assert named.startswith(f"structured ({fields}; {read.dtype.itemsize} bytes"), named
    assert named.endswith(", aligned)") == read.dtype.isalignedstruct


def _subclassed(name: str) -> object:
    if name == "matrix":
        return np.asmatrix(np.eye(2))
    return np.rec.array([(1, 2.0)], dtype=[("x", "i4"), ("y", "f4")])


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # numpy.matrix says it
@pytest.mark.parametrize("name", ["matrix", "recarray"])
def test_a_numpy_subclass_is_named(tmp_path, name):
    path, read = _saved(tmp_path, _subclassed(name))
    assert type(read).__name__ == name
    assert _entry(path)["type"] == f"numpy.{name}"
