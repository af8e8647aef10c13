"""torch.save's less common arguments are in the writer model, or get the finding that says how
torch reads them: ``pickle_protocol`` 1 and 0, ``_disable_byteorder_record=True``.

Every file here is written by torch.save in the test; what torch.load makes of it comes from
the sandbox, and ppaux's reading is compared with it value for value.
"""

from __future__ import annotations

import pickle
import sys
import zipfile
from pathlib import Path

import pytest
import torch
from helpers import REPO
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.dump import inspect_file, read_dump
from ppaux.dump.grammar import pickle_deviation
from ppaux.errors import TorchRefuses

sys.path.insert(0, str(REPO / "fuzz"))

import torch_differential as harness

pytestmark = pytest.mark.torch


def _codes(path: Path) -> dict[str, str]:
    _, findings = inspect_file(str(path))
    return {f.code: f"{f.severity.value}: {f.message}" for f in findings}


def _values() -> dict[str, object]:
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    return {
        "float": torch.arange(4, dtype=torch.float32),
        "int64": torch.tensor([2**40, -3]),
        "bool": torch.tensor([True, False]),
        "view": base[1:, 2:],
        "shared": [base, base[0]],
        "parameter": torch.nn.Parameter(torch.ones(2)),
        "scalar": torch.tensor(3.5),
        "mixed": {"a": 1, "b": 2**40, "c": -(2**40), "d": 1.5, "e": None, "f": True},
        "many": list(range(1500)),
        "tuples": [(), (1,), (1, 2), (1, 2, 3), (1, 2, 3, 4)],
        "sets": [{1, 2}, frozenset({3}), b"xy"],
        "text": "é\u202e",
    }


def test_protocol_1_files_are_in_the_model_and_read_as_torch_reads_them(tmp_path, sandbox):
    # torch.save(..., pickle_protocol=1) writes no PROTO, tuples between MARK and TUPLE, bools
    # as the text INT 'I00'/'I01', big ints as the text LONG; torch.load reads it back.
    for name, value in _values().items():
        path = tmp_path / f"{name}.pt"
        torch.save({"value": value}, path, pickle_protocol=1)
        with zipfile.ZipFile(path) as archive:
            assert archive.read(f"{name}/data.pkl")[:1] != b"\x80"
        assert read_dump(path).deviation is None, name
        found = _codes(path)
        assert "PP118" not in found, (name, found)
        if name == "sets":
            continue  # the sandbox blocks __builtin__.set, the name protocol 1 gives set
        answer = sandbox.load(path)
        assert answer["outcome"] == "loaded", (name, answer)
        assert harness.compare(harness.ppaux_view(str(path)), answer) is None, name


def test_protocol_1_with_a_tensor_is_refused_by_weights_only(tmp_path):
    # The weights-only unpickler runs no text INT, and a tensor's requires_grad is one.
    path = tmp_path / "p1.pt"
    torch.save({"a": torch.ones(2)}, path, pickle_protocol=1)
    found = _codes(path)
    assert found["PP119"].startswith("warning:") and "(INT)" in found["PP119"], found
    with pytest.raises(pickle.UnpicklingError):
        torch.load(path)


@pytest.mark.parametrize(
    "pkl",
    [
        b"}q\x00X\x01\x00\x00\x00aq\x01I010\ns.",  # INT other than a bool
        b"}q\x00X\x01\x00\x00\x00aq\x01L7L\ns.",  # a LONG that fits 32 bits
        b"}q\x00X\x01\x00\x00\x00aq\x01L0099999999999L\ns.",  # leading zeros
        b"}q\x00X\x01\x00\x00\x00aq\x01K\x01K\x02\x86q\x02s.",  # TUPLE2 at protocol 1
        b"\x80\x01}q\x00.",  # PROTO 1, which the pickler does not write
    ],
    ids=["int_010", "short_long", "long_zeros", "tuple2", "proto_1"],
)
def test_protocol_1_opcodes_the_pickler_does_not_write(pkl):
    assert pickle_deviation(pkl, (1, 2, 3, 4, 5)) is not None


def test_a_protocol_1_int_010_is_an_error(tmp_path):
    # The C unpickler reads INT '010' as 8; only 'I00' and 'I01' are the pickler's.
    path = tmp_path / "int010.pt"
    torch.save({"a": 1}, path, pickle_protocol=1)
    data = path.read_bytes()
    edited = tmp_path / "edited.pt"
    assert b"K\x01" in data
    with zipfile.ZipFile(path) as archive:
        pkl = archive.read("int010/data.pkl")
    assert pickle_deviation(pkl, (1,)) is None
    bad = pkl.replace(b"K\x01", b"I010\n")
    with torch.serialization._open_zipfile_writer(str(edited)) as archive:
        archive.write_record("data.pkl", bad, len(bad))
        archive.write_record(".format_version", "1", 1)
        archive.write_record(".storage_alignment", "64", 2)
        archive.write_record("byteorder", "little", 6)
    found = _codes(edited)
    assert found["PP118"].startswith("error:") and "(INT)" in found["PP118"], found


@settings(max_examples=60, deadline=None)
@given(
    value=st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False)
        | st.text()
        | st.binary(),
        lambda inner: (
            st.lists(inner)
            | st.dictionaries(st.text(), inner)
            | st.tuples(inner, inner)
            | st.frozensets(st.integers())
        ),
        max_leaves=30,
    )
)
def test_pickle_dump_at_protocol_1_is_in_the_model(value):
    assert pickle_deviation(pickle.dumps(value, 1), (1,)) is None


def test_protocol_0_with_a_tensor_is_what_torch_refuses(tmp_path, sandbox):
    # Protocol 0 writes the persistent id as text (PERSID); torch.load wants a tuple.
    path = tmp_path / "p0.pt"
    torch.save({"a": torch.ones(2)}, path, pickle_protocol=0)
    with pytest.raises(TorchRefuses) as refused:
        read_dump(path)
    assert refused.value.code == "PP117" and "PERSID" in refused.value.reason
    answer = sandbox.load(path)
    assert answer["outcome"] == "refused" and "saved_id must be a tuple" in answer["error"]


def test_a_protocol_0_pickle_is_outside_the_model(tmp_path):
    # Without storages torch reads it, but its text opcodes are not modelled: never clean.
    path = tmp_path / "p0plain.pt"
    torch.save({"a": 1}, path, pickle_protocol=0)
    found = _codes(path)
    assert found["PP118"].startswith("error:") and "protocol 0" in found["PP118"], found


@pytest.mark.parametrize("value", [{"a": torch.arange(3.0)}, {"a": 1}], ids=["tensor", "plain"])
def test_disable_byteorder_record_is_in_the_model(tmp_path, sandbox, value):
    # torch.save's private _disable_byteorder_record=True: the stream writer, closing the
    # archive, writes the byteorder record itself, after version.
    path = tmp_path / "nobo.pt"
    torch.save(value, path, _disable_byteorder_record=True)
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
    assert names[-3:] == ["nobo/version", "nobo/byteorder", "nobo/.data/serialization_id"]
    assert read_dump(path).deviation is None
    assert "PP118" not in _codes(path)
    answer = sandbox.load(path)
    assert harness.compare(harness.ppaux_view(str(path)), answer) is None


def test_an_archive_without_a_byteorder_record_is_outside_the_model(tmp_path):
    # torch's writer always writes one (early, or late under _disable_byteorder_record).
    path = tmp_path / "bo.pt"
    with torch.serialization._open_zipfile_writer(str(path)) as archive:
        pkl = pickle.dumps({"a": 1}, 2)
        archive.write_record("data.pkl", pkl, len(pkl))
        archive.write_record(".format_version", "1", 1)
        archive.write_record(".storage_alignment", "64", 2)
        archive.write_record("byteorder", "little", 6)
    assert read_dump(path).deviation is None
    edited = tmp_path / "edited.pt"
    edited.write_bytes(path.read_bytes().replace(b"bo/byteorder", b"bo/byteordeR"))
    with zipfile.ZipFile(edited) as archive:
        assert "bo/byteorder" not in archive.namelist()
    assert read_dump(edited).deviation is not None
