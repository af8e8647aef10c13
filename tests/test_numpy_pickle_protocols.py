"""A numpy array reads the same whatever pickle protocol wrote it: numpy writes a contiguous
array as ``_reconstruct`` plus a state under protocols 2 to 4, and as ``_frombuffer(buffer,
dtype, shape, order)`` under protocol 5. inspect gives both forms the same findings (PP119 in a
torch.save file, as torch.load's default refuses numpy; not in a plain pickle), and
tensorize converts both to the numbers numpy wrote, checked against the array itself and
against torch.load(weights_only=False) run in a child process. (The PP101 of each is the
auxiliary entry that is not a tensor.)"""

from __future__ import annotations

import pickle
import struct
import sys
from pathlib import Path

import pytest
from helpers import REPO

from ppaux.dump import inspect_file
from ppaux.fix import tensorize_dump

sys.path.insert(0, str(REPO / "fixtures"))

from make_adversarial import (
    BUILD,
    NEWFALSE,
    NEWTRUE,
    NONE,
    call,
    g,
    i,
    message,
    pickle_of,
    s,
    torch_zip,
    tup,
)
from test_tensorize_numpy import _torch_reads

pytestmark = pytest.mark.torch
np = pytest.importorskip("numpy")

P = "__sampling_observer_output__."
PROTOCOLS = [2, 3, 4, 5]


def _arrays():
    return {
        "float64 row": np.arange(3.0),
        "int32 2x3 column-major": np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3)),
        "float32 big-endian": np.array([0.25, -1.5], dtype=">f4"),
    }


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("name", sorted(_arrays()))
def test_a_torch_save_numpy_array_is_one_verdict_and_converts(
    tmp_path, protocol, name, torch_children
):
    import torch

    array = _arrays()[name]
    source = tmp_path / "in.pt"
    torch.save({P + "t": torch.ones(2), P + "values": array}, source, pickle_protocol=protocol)
    _, findings = inspect_file(str(source))
    assert sorted((f.code, f.severity.value) for f in findings) == [
        ("PP101", "error"),  # an auxiliary entry that is not a tensor
        ("PP119", "warning"),
    ]
    [entry] = [f for f in findings if f.code == "PP101"]
    assert f"a numpy.ndarray ({array.dtype.name}" in entry.message
    assert f"shape {list(array.shape)})" in entry.message

    result = tensorize_dump(str(source), str(tmp_path / "out.pt"))
    assert result.written, result.refusals
    value = torch.load(tmp_path / "out.pt", weights_only=True)[P + "values"]
    assert tuple(value.shape) == array.shape
    assert value.tolist() == array.tolist()
    assert value.dtype == getattr(torch, array.dtype.name)
    if protocol == 5:
        assert _torch_reads(source, torch_children) == array.tolist()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_pickled_numpy_array_is_one_verdict_under_every_protocol(tmp_path, protocol):
    source = tmp_path / "in.pkl"
    source.write_bytes(pickle.dumps({P + "values": np.arange(3.0)}, protocol=protocol))
    _, findings = inspect_file(str(source))
    # Only the entry that is not a tensor: a plain pickle is not torch.load's, so no PP119.
    assert [(f.code, f.severity.value) for f in findings] == [("PP101", "error")]
    assert "a numpy.ndarray (float64, shape [3])" in findings[0].message


def _bytearray8(data: bytes) -> bytes:
    return b"\x96" + struct.pack("<Q", len(data)) + data


def _frombuffer(buffer: bytes, spec: str, order: str, shape: bytes, layout: bytes) -> bytes:
    dtype = call(g("numpy", "dtype"), s(spec), NEWFALSE, NEWTRUE)
    dtype += tup(i(3), s(order), NONE, NONE, NONE, i(-1), i(-1), i(0)) + BUILD
    return call(g("numpy._core.numeric", "_frombuffer"), buffer, dtype, shape, layout)


def _dump(path: Path, array: bytes) -> Path:
    path.write_bytes(torch_zip(pickle_of(message((s(P + "values"), array)), protocol=5)).data)
    return path


@pytest.mark.parametrize(
    ("array", "expected"),
    [
        (
            _frombuffer(
                _bytearray8(struct.pack("<6i", 1, 4, 2, 5, 3, 6)),
                "i4",
                "<",
                tup(i(2), i(3)),
                s("F"),
            ),
            [[1, 2, 3], [4, 5, 6]],
        ),
        (
            _frombuffer(_bytearray8(struct.pack(">2d", 1.5, -2.0)), "f8", ">", tup(i(2)), s("C")),
            [1.5, -2.0],
        ),
    ],
    ids=["column-major", "big-endian"],
)
def test_a_written_frombuffer_form_converts_as_numpy_reads_it(
    tmp_path, array, expected, torch_children
):
    import torch

    source = _dump(tmp_path / "in.pt", array)
    result = tensorize_dump(str(source), str(tmp_path / "out.pt"))
    assert result.written, result.refusals
    assert torch.load(tmp_path / "out.pt", weights_only=True)[P + "values"].tolist() == expected
    assert _torch_reads(source, torch_children) == expected


@pytest.mark.parametrize(
    ("array", "reason"),
    [
        (
            _frombuffer(_bytearray8(bytes(8)), "f4", "<", tup(i(3)), s("C")),
            "its data holds 8 bytes, not the 12",
        ),
        (
            _frombuffer(_bytearray8(bytes(8)), "f4", "<", tup(i(2)), s("X")),
            "is not 'C' or 'F'",
        ),
        (
            _frombuffer(_bytearray8(bytes(8)), "f4", "<", tup(NEWTRUE), s("C")),
            "is not a tuple of sizes",
        ),
    ],
    ids=["too few bytes", "an unknown order", "a (True,) shape"],
)
def test_a_frombuffer_form_numpy_refuses_is_refused(tmp_path, array, reason):
    source = _dump(tmp_path / "in.pt", array)
    result = tensorize_dump(str(source), str(tmp_path / "out.pt"))
    assert not result.written and not (tmp_path / "out.pt").exists()
    [refusal] = result.refusals
    assert refusal.key == P + "values" and reason in refusal.reason, refusal
