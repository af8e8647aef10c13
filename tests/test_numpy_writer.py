"""numpy's pickler as a grammar (ppaux.dump.numpy_writer): an array pickled by numpy itself, in
any protocol, is as written (no PP118); each form numpy's pickler never writes but numpy reads
alike is PP118 at warning, checked against ``pickle.loads`` reading it to the same array; each
form numpy refuses is a refusal (PP116, PP117), checked against ``pickle.loads`` raising
numpy's error."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppaux.dump import inspect_paths

np = pytest.importorskip("numpy")

REC = np._core.multiarray._reconstruct
F4 = np.array([1.5, 2.5, 3.5, 4.5], dtype="<f4")
NO_STATE = (3, "<", None, None, None, -1, -1, 0)


class _Array:
    """An array pickled as numpy pickles one, with the parts given here instead."""

    def __init__(self, state: tuple, shape: object = (0,), typecode: object = b"b") -> None:
        self.state, self.shape, self.typecode = state, shape, typecode

    def __reduce__(self) -> tuple:
        return (REC, (np.ndarray, self.shape, self.typecode), self.state)


class _Dtype:
    """A dtype pickled as numpy pickles one, with the parts given here instead."""

    def __init__(self, spec: str, state: tuple, align: object = False) -> None:
        self.spec, self.state, self.align = spec, state, align

    def __reduce__(self) -> tuple:
        return (np.dtype, (self.spec, self.align, True), self.state)


def _codes(tmp_path: Path, value: object, protocol: int) -> dict[str, str]:
    path = tmp_path / f"x{protocol}.pkl"
    path.write_bytes(pickle.dumps({"x": value}, protocol=protocol))
    report = inspect_paths([str(path)])
    assert not report.problems
    return {f.code: f.severity.value for f in report.findings}


def _f4(state_dtype: object = None, **state: object) -> tuple:
    parts = {"version": 1, "shape": (4,), "fortran": False, "data": F4.tobytes()}
    parts.update(state)
    dtype = np.dtype("<f4") if state_dtype is None else state_dtype
    return (parts["version"], parts["shape"], dtype, parts["fortran"], parts["data"])


#: Forms numpy's pickler never writes, each read by numpy as an array of these values.
OUTSIDE = {
    "is_fortran 1": (_Array(_f4(fortran=1, shape=(2, 2))), F4.reshape(2, 2, order="F")),
    "is_fortran 0": (_Array(_f4(fortran=0)), F4),
    "version 0": (_Array(_f4(version=0)), F4),
    "no version": (_Array(_f4()[1:]), F4),
    "data as str": (_Array(_f4(data=F4.tobytes().decode("latin-1"))), F4),
    "_reconstruct shape (7,)": (_Array(_f4(), shape=(7,)), F4),
    "_reconstruct dtype b'f'": (_Array(_f4(), typecode=b"f"), F4),
    "dtype align True": (_Array(_f4(_Dtype("f4", NO_STATE, align=True))), F4),
    "dtype state '='": (_Array(_f4(_Dtype("f4", (3, "=", *NO_STATE[2:])))), F4),
    "dtype state '|'": (_Array(_f4(_Dtype("f4", (3, "|", *NO_STATE[2:])))), F4),
    "dtype spec '>f4'": (_Array(_f4(_Dtype(">f4", (3, "<", *NO_STATE[2:])))), F4),
    "dtype elsize 8, 1": (_Array(_f4(_Dtype("f4", (*NO_STATE[:5], 8, 1, 0)))), F4),
    "dtype flags 16": (_Array(_f4(_Dtype("f4", (*NO_STATE[:7], 16)))), F4),
    "dtype version 4": (_Array(_f4(_Dtype("f4", (4, *NO_STATE[1:], None)))), F4),
    "bool byte 2": (
        _Array((1, (2,), np.dtype("?"), False, b"\x01\x02")),
        np.frombuffer(b"\x01\x02", dtype="?"),
    ),
    "bool state '>'": (
        _Array((1, (2,), _Dtype("b1", (3, ">", *NO_STATE[2:])), False, b"\x01\x00")),
        np.array([True, False]),
    ),
}


@pytest.mark.parametrize("name", OUTSIDE)
@pytest.mark.parametrize("protocol", [2, 5])
def test_a_form_numpy_never_writes_is_a_warning(tmp_path: Path, name: str, protocol: int) -> None:
    value, expected = OUTSIDE[name]
    read = pickle.loads(pickle.dumps(value, protocol=protocol))
    assert read.dtype == expected.dtype and read.tobytes() == expected.tobytes()
    assert read.shape == expected.shape
    assert _codes(tmp_path, value, protocol) == {"PP118": "warning"}


#: Forms numpy refuses: what it raises, and the finding ppaux gives.
REFUSED = {
    "data a list": (_Array(_f4(data=[1.5, 2.5, 3.5, 4.5])), "pickle not returning string", "PP116"),
    "objects as bytes": (
        _Array((1, (2,), np.dtype("O"), False, b"\0" * 16)),
        "object pickle not returning list",
        "PP116",
    ),
    "_reconstruct shape (False,)": (
        _Array(_f4(), shape=(False,)),
        "an integer is required",
        "PP117",
    ),
}


@pytest.mark.parametrize("name", REFUSED)
def test_what_numpy_refuses_is_a_refusal(tmp_path: Path, name: str) -> None:
    value, says, code = REFUSED[name]
    data = pickle.dumps(value, protocol=2)
    with pytest.raises(TypeError, match=says):
        pickle.loads(data)
    assert code in _codes(tmp_path, value, 2)


def test_a_frombuffer_shape_its_buffer_does_not_fill_is_refused(tmp_path: Path) -> None:
    data = pickle.dumps({"x": F4}, protocol=5)
    assert data.count(b"K\x04\x85") == 1  # the shape (4,), as numpy writes it
    edited = data.replace(b"K\x04\x85", b"K\x0a\x85")
    with pytest.raises(ValueError, match="cannot reshape"):
        pickle.loads(edited)
    path = tmp_path / "x.pkl"
    path.write_bytes(edited)
    assert "PP116" in {f.code for f in inspect_paths([str(path)]).findings}


DTYPES = ["<f4", ">f4", "<f8", "<i8", ">i2", "u1", "i1", "?", "<c8", "<f2", "O", "<U3", "S2"]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    dtype=st.sampled_from(DTYPES),
    shape=st.lists(st.integers(0, 3), max_size=3).map(tuple),
    fortran=st.booleans(),
    protocol=st.integers(2, 5),
)
def test_what_numpy_writes_is_as_written(
    tmp_path: Path, dtype: str, shape: tuple[int, ...], fortran: bool, protocol: int
) -> None:
    count = int(np.prod(shape))
    array = np.arange(count).astype(dtype).reshape(shape, order="F" if fortran else "C")
    codes = _codes(tmp_path, array, protocol)
    assert not {"PP116", "PP117", "PP118"} & set(codes), codes


SHAPES = [(0,), (7,), [0], (), 3, (False,), (True,), None, "3", 3.0, (0.0,), (-1,), (2**63,)]
SHAPES += [(0,) * 64, (0,) * 65]


@pytest.mark.parametrize("shape", SHAPES, ids=repr)
def test_reconstruct_refuses_the_shapes_numpy_refuses(shape: object) -> None:
    from ppaux.dump.numpy_writer import reconstruct_shape_refusal

    try:
        REC(np.ndarray, shape, b"b")
    except (TypeError, ValueError):
        refused = True
    else:
        refused = False
    assert (reconstruct_shape_refusal(shape) is not None) == refused


OTHER_ARRAYS = {
    "datetime": np.array(["2020-01-01"], dtype="M8[D]"),
    "structured": np.array([(1, "ab")], dtype=[("a", "<i4"), ("b", "U2")]),
    "objects": np.array([1, "a", None], dtype=object),
    "record array": np.rec.array([(1, 2.0)], dtype=[("a", "i4"), ("b", "f8")]),
    "scalar": np.float32(2.5),
    "big-endian column-major": np.asfortranarray(np.arange(6, dtype=">f8").reshape(2, 3)),
}


@pytest.mark.parametrize("name", OTHER_ARRAYS)
@pytest.mark.parametrize("protocol", [2, 5])
def test_other_values_numpy_writes_are_as_written(tmp_path: Path, name: str, protocol: int) -> None:
    codes = _codes(tmp_path, OTHER_ARRAYS[name], protocol)
    assert not {"PP116", "PP117", "PP118"} & set(codes), codes
