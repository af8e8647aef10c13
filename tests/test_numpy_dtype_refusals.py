"""A numpy dtype numpy refuses to make, from its spec (``numpy.dtype('xpu')``) or its state (a
byte order of other than one character, a version past 4): torch.load(weights_only=False)
fails on the file, so inspect says PP117 naming the key and tensorize writes nothing. ppaux's
verdicts are compared with numpy's own, over arbitrary specs and states, and each file is one
torch.save wrote and this test then edited."""

from __future__ import annotations

import struct
import warnings
import zipfile
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.dump import inspect_paths
from ppaux.dump.numpy_dtype_refusals import spec_verdict, state_verdict
from ppaux.fix import tensorize_dump
from ppaux.report import Severity

np = pytest.importorskip("numpy")

pytestmark = pytest.mark.torch

P = "__sampling_observer_output__."


def _numpy_refuses_spec(spec: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            np.dtype(spec, False, True)
        except (TypeError, ValueError):
            return True
    return False


_SPECS = st.one_of(
    st.builds(
        "{}{}{}".format,
        st.sampled_from(["", "<", ">", "=", "|", "!"]),
        st.sampled_from(list("biufcSUVaOMm?xdBeTqA")),
        st.one_of(
            st.integers(0, 40),
            st.sampled_from([2**29 - 1, 2**29, 2**31 - 1, 2**31, 10**12 - 1]),
        ).map(str),
    ),
    st.builds(
        "{}{}".format,
        st.sampled_from(["", "<", "|"]),
        st.sampled_from(["float32", "xpu", "cuda", "int", "float_", "half", "str", "", "f", "Q"]),
    ),
    st.text(alphabet="abfiuxS<>|_8,[]() ", max_size=8),
)


@settings(max_examples=400, deadline=None)
@given(_SPECS)
def test_a_spec_is_refused_exactly_where_numpy_refuses_it(spec):
    refusal, known = spec_verdict(spec)
    if known:
        assert (refusal is not None) == _numpy_refuses_spec(spec), (spec, refusal)


_ITEMS = st.one_of(
    st.sampled_from(["<", ">", "|", "=", "", "cpu", "é", b"<", b"", b"ab", None, (), {}]),
    st.integers(-(2**33), 2**33),
    st.integers(-2, 6),
)


def _state(items: list[object]) -> tuple[object, ...]:
    # numpy's own state for a 'f8' dtype, version 3: (3, '<', None, None, None, -1, -1, 0).
    return tuple(items)


@settings(max_examples=400, deadline=None)
@given(
    st.one_of(
        st.lists(_ITEMS, min_size=0, max_size=10).map(_state),
        st.tuples(
            st.integers(-1, 6),
            _ITEMS,
            st.none(),
            st.sampled_from([None, (), 5]),
            st.sampled_from([None, {}, 5]),
            st.sampled_from([-1, 8, 2**40]),
            st.sampled_from([-1, 1]),
            st.sampled_from([0, 2**31]),
        ),
    )
)
def test_a_state_is_refused_exactly_where_numpy_refuses_it(state):
    refusal, known = state_verdict(state)
    if not known:
        return
    dtype = np.dtype("f8", False, True)  # a copy, as numpy's pickle makes: not the shared one
    try:
        dtype.__setstate__(state)
        refused = False
    except (TypeError, ValueError, OverflowError, UnicodeEncodeError, SystemError):
        refused = True
    assert (refusal is not None) == refused, (state, refusal)


def _saved(tmp_path: Path, old: bytes, new: bytes, value: object = None) -> Path:
    """A dump torch.save wrote (by default a numpy array under an auxiliary key), its pickle
    edited."""
    saved = tmp_path / "saved.pt"
    if value is None:
        value = {P + "values": np.array([1.5, 2.5]), "next_token_ids": torch.arange(2)}
    torch.save(value, saved)
    with zipfile.ZipFile(saved) as archive:
        bodies = {n.split("/", 1)[1]: archive.read(n) for n in archive.namelist()}
    assert bodies["data.pkl"].count(old) == 1
    bodies["data.pkl"] = bodies["data.pkl"].replace(old, new)
    path = tmp_path / "edited.pt"
    writer = torch._C.PyTorchFileWriter(str(path))
    for name, body in bodies.items():
        if name not in ("version", ".data/serialization_id"):
            writer.write_record(name, body, len(body))
    writer.write_end_of_file()
    del writer
    return path


def _unicode(text: str) -> bytes:
    return b"X" + struct.pack("<I", len(text)) + text.encode()


_ORDER = b"K\x03" + _unicode("<")


@pytest.mark.parametrize(
    ("old", "new", "torch_says"),
    [
        (_unicode("f8"), _unicode("xpu"), "data type 'xpu' not understood"),
        (_ORDER, b"K\x03" + _unicode("cpu"), "endian is not 1-char string"),
        (_ORDER, b"K\x03" + _unicode(""), "endian is not 1-char string"),
        (_ORDER, b"J" + struct.pack("<i", 2**31 - 1) + _unicode("<"), "can't handle version"),
        # _reconstruct(ndarray, (0,), b'b'), the bytes pickled as _codecs.encode('b', 'latin1')
        (_unicode("b") + b"q", _unicode("xpu") + b"q", "data type 'xpu' not understood"),
    ],
    ids=["spec-xpu", "order-cpu", "order-empty", "version-int-max", "reconstruct-xpu"],
)
def test_a_dtype_numpy_refuses_is_torchs_refusal_and_tensorizes_to_nothing(
    tmp_path, old, new, torch_says
):
    source = _saved(tmp_path, old, new)
    with pytest.raises(Exception, match=torch_says):
        torch.load(source, weights_only=False)
    report = inspect_paths([str(source)])
    refused = [f for f in report.findings if f.code == "PP117"]
    assert [f.key for f in refused] == [P + "values"], report.findings
    result = tensorize_dump(str(source), str(tmp_path / "out.pt"))
    assert not result.written and not (tmp_path / "out.pt").exists()
    assert [r.key for r in result.refusals] == [P + "values"], result.refusals


def test_the_unedited_array_is_read_and_converted(tmp_path):
    source = _saved(tmp_path, _unicode("f8"), _unicode("f8"))
    assert torch.load(source, weights_only=False)[P + "values"].tolist() == [1.5, 2.5]
    report = inspect_paths([str(source)])
    assert not [f for f in report.findings if f.code in ("PP116", "PP117")], report.findings
    result = tensorize_dump(str(source), str(tmp_path / "out.pt"))
    assert result.written
    assert torch.load(tmp_path / "out.pt")[P + "values"].tolist() == [1.5, 2.5]


@pytest.mark.parametrize(
    "dtype",
    [
        "f8",
        ">i4",
        "?",
        "f2",
        "c16",
        "U5",
        "S3",
        "V4",
        "M8[ns]",
        "m8[D]",
        [("a", "<i4"), ("b", ">f8", (2,))],
        ("<f4", (2, 2)),
    ],
    ids=str,
)
def test_numpys_own_dtypes_are_no_refusal_nor_deviation(tmp_path, dtype):
    path = tmp_path / "saved.pt"
    torch.save({"a": np.zeros(3, dtype=dtype)}, path)
    torch.load(path, weights_only=False)
    codes = {f.code for f in inspect_paths([str(path)]).findings}
    assert not codes & {"PP116", "PP117", "PP118"}, codes


def test_a_spec_whose_reading_depends_on_numpys_version_is_a_deviation(tmp_path):
    source = _saved(tmp_path, _unicode("f8"), _unicode("float_"))
    [deviation] = [f for f in inspect_paths([str(source)]).findings if f.code == "PP118"]
    assert deviation.severity is Severity.ERROR and "'float_'" in deviation.message


@pytest.mark.parametrize(
    ("value", "key"),
    [
        (lambda: {"d": np.dtype("f8")}, "d"),
        (lambda: {"s": np.float64(1.5)}, None),
        (lambda: [np.array([1.0])], None),
    ],
    ids=["bare-dtype", "scalar", "array-in-list-at-top"],
)
def test_a_refused_dtype_is_torchs_refusal_wherever_it_sits(tmp_path, value, key):
    source = _saved(tmp_path, _unicode("f8"), _unicode("xpu"), value())
    with pytest.raises(TypeError, match="data type 'xpu' not understood"):
        torch.load(source, weights_only=False)
    refused = [f for f in inspect_paths([str(source)]).findings if f.code == "PP117"]
    assert [f.key for f in refused] == [key] and "'xpu'" in refused[0].message, refused
