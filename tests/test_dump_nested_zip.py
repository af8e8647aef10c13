"""A storage's bytes as torch.load's zip reader takes them where they differ from what
torch.save writes: a torch.save zip nested in a plain pickle (``_load_from_bytes`` hands its
bytes to ``torch.load(weights_only=False)``, which reads a zip as well as the legacy stream
the pickler writes), and a persistent id whose tag or location is bytes.

Each file is read and reported as not as the writer writes it (PP118) where torch reads it,
with torch's value; PP117 where torch refuses it. torch's answers come from child processes:
``pickle.load`` for a plain pickle, the differential sandbox (``weights_only=False``) and
tests/weights_only_probe.py (torch's default) for a zip.
"""

from __future__ import annotations

import io
import pickle
import struct
import sys
from pathlib import Path

import pytest
import torch
from helpers import REPO

pytestmark = pytest.mark.torch

sys.path.insert(0, str(REPO / "fuzz"))

import torch_differential as harness  # noqa: E402

from ppaux.dump import inspect_paths  # noqa: E402
from ppaux.dump.dumpfile import read_dump  # noqa: E402
from ppaux.errors import DumpError, ReadMismatch, TorchRefuses  # noqa: E402

_CPU = b"X\x03\x00\x00\x00cpu"
_STORAGE_TAG = b"X\x07\x00\x00\x00storage"


def _nested(stream: bytes) -> bytes:
    """A plain pickle of ``{'w': torch.arange(4.0)}`` whose ``_load_from_bytes`` holds
    ``stream`` in place of the legacy stream the pickler wrote."""
    data = pickle.dumps({"w": torch.arange(4.0)}, protocol=3)
    start = data.index(b"\x80\x02\x8a\x0a")
    (length,) = struct.unpack("<I", data[start - 4 : start])
    return data[: start - 4] + struct.pack("<I", len(stream)) + stream + data[start + length :]


def _saved(value: object) -> bytes:
    out = io.BytesIO()
    torch.save(value, out)
    return out.getvalue()


def _archive(tmp_path: Path, data_pkl: bytes, storages: dict[str, bytes]) -> bytes:
    """An archive written by torch's own zip writer around a hand-made ``data_pkl``."""
    path = tmp_path / "archive.pt"
    with torch.serialization._open_zipfile_writer(str(path)) as archive:
        archive.write_record("data.pkl", data_pkl, len(data_pkl))
        archive.write_record(".format_version", "1", 1)
        archive.write_record(".storage_alignment", "64", 2)
        archive.write_record("byteorder", "little", 6)
        for key, data in storages.items():
            archive.write_record(f"data/{key}", data, len(data))
    return path.read_bytes()


def _storage_pkl() -> bytes:
    """data.pkl of ``torch.save(torch.arange(4.0).untyped_storage())``, as torch 2.13 writes
    it (written out here, not read back with ppaux)."""
    return (
        b"\x80\x02(" + _STORAGE_TAG + b"q\x00ctorch.storage\nUntypedStorage\nq\x01"
        b"X\x01\x00\x00\x000q\x02" + _CPU + b"q\x03K\x10tq\x04Q."
    )


_FLOATS = struct.pack("<4f", 0.0, 1.0, 2.0, 3.0)
_SYSTEM = b"\x80\x02cposix\nsystem\nX\x04\x00\x00\x00true\x85R0"


# -- a zip nested in a plain pickle ------------------------------------------------------------


def test_the_writers_own_bytes_hold_the_storage_as_a_pickle_reads_them():
    # The pickle is torch's own storage pickle: the hand-written data.pkl above is the one
    # torch.save writes, so the files below edit only what they say they edit.
    with io.BytesIO(_saved(torch.arange(4.0).untyped_storage())) as stream:
        import zipfile

        with zipfile.ZipFile(stream) as archive:
            (name,) = [n for n in archive.namelist() if n.endswith("/data.pkl")]
            assert archive.read(name) == _storage_pkl()


NESTED_READS = {
    # what the zip holds -> what pickle.load gives for 'w' (dtype, values)
    "untyped storage": (lambda tmp: _saved(torch.arange(4.0).untyped_storage()), "uint8"),
    "float storage": (lambda tmp: _saved(torch.arange(4.0).storage()), "float32"),
    "hand-written archive": (lambda tmp: _archive(tmp, _storage_pkl(), {"0": _FLOATS}), "uint8"),
}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", list(NESTED_READS))
def test_a_nested_zip_is_read_as_pickle_load_reads_it(name, tmp_path, pickle_loads):
    make, dtype = NESTED_READS[name]
    path = tmp_path / "nested.pkl"
    path.write_bytes(_nested(make(tmp_path)))
    ours, theirs = harness.ppaux_view(str(path)), pickle_loads(path)
    assert theirs["outcome"] == "loaded", theirs
    assert ours.verdict == "findings" and ours.codes == {"PP118"}, ours
    assert ours.value == theirs["value"]
    assert dtype in str(theirs["value"])
    deviation = read_dump(str(path)).deviation
    assert deviation is not None and not deviation.severe
    assert "zip archive" in deviation.what


def test_a_call_in_a_nested_zip_is_a_security_finding(tmp_path):
    # pickle.load would run posix.system before it reads the storage: PP201 whatever follows.
    path = tmp_path / "call.pkl"
    path.write_bytes(_nested(_archive(tmp_path, _SYSTEM + _storage_pkl()[2:], {"0": _FLOATS})))
    ours = harness.ppaux_view(str(path))
    assert "PP201" in ours.codes, ours
    assert read_dump(str(path)).globals_seen.get("posix.system") is False


@pytest.mark.parametrize(
    ("storages", "words"),
    [({}, "has no record"), ({"0": _FLOATS[:8]}, "is 8 bytes, 16 needed")],
)
def test_a_nested_zip_torch_cannot_read_the_storage_of_is_refused(
    tmp_path, storages, words, pickle_loads
):
    path = tmp_path / "refused.pkl"
    path.write_bytes(_nested(_archive(tmp_path, _storage_pkl(), storages)))
    assert pickle_loads(path)["outcome"] == "refused"
    with pytest.raises(TorchRefuses, match=words):
        read_dump(str(path))


def test_zips_nested_past_the_depth_ppaux_reads_are_a_finding_not_a_refusal(tmp_path, pickle_loads):
    # A zip whose data.pkl nests a zip whose data.pkl nests one more: no writer does that,
    # and pickle.load reads it; ppaux names it (PP202) instead of refusing the input.
    inner = _archive(tmp_path, _storage_pkl(), {"0": _FLOATS})
    for _ in range(3):
        call = (
            b"\x80\x02ctorch.storage\n_load_from_bytes\nC"
            if len(inner) < 256
            else b"\x80\x02ctorch.storage\n_load_from_bytes\nB"
        )
        size = bytes([len(inner)]) if len(inner) < 256 else struct.pack("<I", len(inner))
        inner = _archive(tmp_path, call + size + inner + b"\x85R.", {})
    path = tmp_path / "deep.pkl"
    path.write_bytes(_nested(inner))
    assert pickle_loads(path)["outcome"] != "refused"
    with pytest.raises(ReadMismatch, match="nested 3 levels deep") as caught:
        read_dump(str(path))
    assert caught.value.code == "PP202"


# -- a bytes tag or location in a zip's persistent id ------------------------------------------


def _codecs(text: bytes) -> bytes:
    """``_codecs.encode(text, 'latin1')``: how a protocol-2 pickle writes bytes."""
    return (
        b"c_codecs\nencode\nX"
        + struct.pack("<I", len(text))
        + text
        + b"X\x06\x00\x00\x00latin1\x86R"
    )


def _edited(old: bytes, new: bytes) -> bytes:
    data_pkl = (
        b"\x80\x02}q\x00X\x01\x00\x00\x00wq\x01ctorch._utils\n_rebuild_tensor_v2\nq\x02(("
        + _STORAGE_TAG
        + b"q\x03ctorch\nFloatStorage\nq\x04X\x01\x00\x00\x000q\x05"
        + _CPU
        + b"q\x06K\x04tq\x07QK\x00K\x04\x85q\x08K\x01\x85q\t\x89ccollections\nOrderedDict\n"
        b"q\n)Rq\x0btq\x0cRq\rs."
    )
    assert old in data_pkl
    return data_pkl.replace(old, new)


#: Edits torch.load reads, with whether its default (weights_only=True) reads them too: it
#: runs no bytes opcode, and takes a bytes tag or location that _codecs.encode makes.
BYTES_READS = {
    "location SHORT_BINBYTES": ((_CPU, b"C\x03cpu"), False),
    "tag SHORT_BINBYTES": ((_STORAGE_TAG, b"C\x07storage"), False),
    "location _codecs.encode": ((_CPU, _codecs(b"cpu")), True),
    "tag _codecs.encode": ((_STORAGE_TAG, _codecs(b"storage")), True),
    "location meta _codecs.encode": ((_CPU, _codecs(b"meta")), True),
}


@pytest.mark.parametrize("name", list(BYTES_READS))
def test_a_bytes_tag_or_location_is_read_as_torch_reads_it(name, tmp_path, sandbox, default_loads):
    (old, new), default_reads = BYTES_READS[name]
    path = tmp_path / "edited.pt"
    path.write_bytes(_archive(tmp_path, _edited(old, new), {"0": _FLOATS}))
    ours, theirs = harness.ppaux_view(str(path)), sandbox.load(path)
    default = default_loads(path)
    assert theirs["outcome"] == "loaded", theirs
    assert (default["outcome"] == "loaded") is default_reads, default
    assert ours.verdict == "findings" and ours.codes == {"PP118"}, ours
    assert ours.value == theirs["value"]
    deviation = read_dump(str(path)).deviation
    assert deviation is not None and not deviation.severe


#: Locations torch.load refuses in both modes, with the words of ppaux's refusal.
BYTES_REFUSED = {
    "non-ASCII SHORT_BINBYTES": (b"C\x03c\xffu", "not ASCII"),
    "non-ASCII _codecs.encode": (_codecs("cp\xe9".encode()), "not ASCII"),
    "an int": (b"K\x05", "not text"),
    "unknown device": (_codecs(b"foo"), "no restore function"),
}


@pytest.mark.parametrize("name", list(BYTES_REFUSED))
def test_a_location_torch_refuses_is_refused(name, tmp_path, sandbox, default_loads):
    new, words = BYTES_REFUSED[name]
    path = tmp_path / "edited.pt"
    path.write_bytes(_archive(tmp_path, _edited(_CPU, new), {"0": _FLOATS}))
    default = default_loads(path)
    assert sandbox.load(path)["outcome"] == "refused"
    assert default["outcome"] != "loaded", default
    with pytest.raises(TorchRefuses, match=words):
        read_dump(str(path))


def test_legacy_streams_nested_three_deep_are_a_finding_pickle_load_reads_past(
    tmp_path, pickle_loads
):
    # Each level a torch.save legacy stream whose object holds the next one's
    # torch.storage._load_from_bytes call: pickle.load (torch.load(weights_only=False) at each
    # level) reads all of it.
    def legacy(value: object) -> bytes:
        out = io.BytesIO()
        torch.save(value, out, _use_new_zipfile_serialization=False)
        return out.getvalue()

    class Nested:
        def __init__(self, stream: bytes) -> None:
            self.stream = stream

        def __reduce__(self):
            return (torch.storage._load_from_bytes, (self.stream,))

    stream = legacy(torch.arange(2.0))
    for _ in range(3):
        stream = legacy({"x": Nested(stream)})
    path = tmp_path / "deep.pkl"
    path.write_bytes(pickle.dumps({"a": Nested(stream)}, protocol=2))
    assert pickle_loads(path)["outcome"] != "refused"
    report = inspect_paths([str(path)])
    assert report.problems == ()
    assert [f.code for f in report.findings] == ["PP202"]
    assert "nested 3 levels deep" in report.findings[0].message


# -- streams neither reader can read ------------------------------------------------------------


def _version_1000() -> bytes:
    stream = _legacy_stream()
    return stream.replace(b"M\xe9\x03.", b"M\xe8\x03.", 1)


def _legacy_stream() -> bytes:
    data = pickle.dumps({"w": torch.arange(4.0)}, protocol=3)
    start = data.index(b"\x80\x02\x8a\x0a")
    (length,) = struct.unpack("<I", data[start - 4 : start])
    return data[start : start + length]


@pytest.mark.parametrize(
    ("stream", "words", "refused_as_torch"),
    [
        (lambda: _saved({"w": torch.arange(4.0)})[:200], "nested torch.save zip", False),
        (lambda: b"not a stream", "holds no legacy torch.save stream", False),
        (lambda: _legacy_stream()[:60], "nested torch.save stream: truncated", False),
        (_version_1000, "version is 1000, not 1001", True),
    ],
    ids=["zip cut short", "no stream", "stream cut short", "another version"],
)
def test_a_nested_stream_pickle_load_refuses_is_refused(
    stream, words, refused_as_torch, tmp_path, pickle_loads
):
    path = tmp_path / "nested.pkl"
    path.write_bytes(_nested(stream()))
    assert pickle_loads(path)["outcome"] == "refused"
    with pytest.raises(DumpError, match=words) as caught:
        read_dump(str(path))
    assert isinstance(caught.value, TorchRefuses) == refused_as_torch
