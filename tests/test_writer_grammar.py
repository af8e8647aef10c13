"""Clean means "as torch.save wrote it": the model of the writers in ppaux.dump.grammar.

Files torch.save and pickle.dump write are in the model; each file below is built by a few lines
of script from one torch wrote (or with torch's own zip writer), leaves the model at one place,
and must be reported there (PP118) whatever torch.load makes of it, which the sandbox says.
"""

from __future__ import annotations

import collections
import io
import pickle
import struct
import zipfile
import zlib
from pathlib import Path

import pytest
import torch
from helpers import REPO
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_archives import torch_archive as _torch_archive

from ppaux.dump import inspect_file, read_dump
from ppaux.dump.grammar import pickle_deviation

pytestmark = pytest.mark.torch


def _codes(path: Path) -> dict[str, str]:
    _, findings = inspect_file(str(path))
    return {f.code: f"{f.severity.value}: {f.message}" for f in findings}


def _saved(tmp_path: Path, name: str, value: object) -> Path:
    path = tmp_path / name
    torch.save(value, path)
    return path


def _data_pkl(path: Path) -> bytes:
    with zipfile.ZipFile(path) as archive:
        name = next(n for n in archive.namelist() if n.endswith("/data.pkl"))
        return archive.read(name)


# -- torch.save's own files are in the model -------------------------------------------------


def _values() -> dict[str, object]:
    import numpy

    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    values: dict[str, object] = {
        f"dtype_{dtype}".replace("torch.", ""): torch.zeros(3, dtype=dtype)
        for dtype in (
            torch.float32,
            torch.float64,
            torch.float16,
            torch.bfloat16,
            torch.int8,
            torch.uint8,
            torch.int16,
            torch.int32,
            torch.int64,
            torch.bool,
            torch.complex64,
            torch.uint16,
            torch.uint32,
            torch.float8_e4m3fn,
        )
    }
    values.update(
        {
            "view": base[1:, 2:],
            "transposed": base.t(),
            "shared": [base, base[0]],
            "parameter": torch.nn.Parameter(torch.ones(2)),
            "frozen": torch.nn.Parameter(torch.ones(2), requires_grad=False),
            "empty": torch.empty(0),
            "scalar": torch.tensor(3.5),
            "numpy": numpy.arange(6, dtype=numpy.float32).reshape(2, 3),
            "numpy_be": numpy.arange(3, dtype=">f4"),
            "mixed": {"a": 1, "b": 2**40, "c": -7, "d": 1.5, "e": None, "f": True, "g": b"xy"},
            "many": list(range(2500)),
            "big_dict": {str(i): i for i in range(1500)},
            "text": "é\u202e",
            "tuples": [(), (1,), (1, 2), (1, 2, 3), (1, 2, 3, 4)],
            "sets": [{1, 2}, frozenset({3})],
        }
    )
    return values


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_torch_save_files_are_in_the_model(tmp_path, protocol):
    # torch.save's pickle_protocol (2 unless given) is the pickler's protocol.
    for name, value in _values().items():
        path = tmp_path / f"{name}.pt"
        torch.save({"value": value}, path, pickle_protocol=protocol)
        with zipfile.ZipFile(path) as archive:
            assert archive.read(f"{name}/data.pkl")[:2] == bytes([0x80, protocol])
        dump = read_dump(path)
        assert dump.deviation is None, (name, dump.deviation)
        assert "PP118" not in _codes(path), name


@pytest.mark.parametrize("alignment", [64, 128, 4096])
def test_a_storage_alignment_the_user_set_is_in_the_model(tmp_path, alignment):
    # torch.utils.serialization.config.save.storage_alignment: the padding of every record's
    # data and the .storage_alignment record that says it.
    from torch.utils.serialization import config

    before = config.save.storage_alignment
    config.save.storage_alignment = alignment
    path = tmp_path / "aligned.pt"
    try:
        torch.save({"a": torch.arange(12.0).reshape(3, 4), "b": torch.ones(5)}, path)
    finally:
        config.save.storage_alignment = before
    with zipfile.ZipFile(path) as archive:
        assert archive.read("aligned/.storage_alignment") == str(alignment).encode()
    assert read_dump(path).deviation is None
    assert "PP118" not in _codes(path)
    if alignment == 128:
        # The record says another alignment than the padding holds: out of the model.
        data = path.read_bytes()
        assert data.count(b"128") >= 1
        with zipfile.ZipFile(path) as archive:
            info = archive.getinfo("aligned/.storage_alignment")
        start = data.index(b"aligned/.storage_alignment", info.header_offset) + len(
            "aligned/.storage_alignment"
        )
        body = data.index(b"128", start)
        patched = tmp_path / "patched.pt"
        patched.write_bytes(data[:body] + b"256" + data[body + 3 :])
        assert read_dump(patched).deviation is not None


def test_a_capture_ppaux_writes_is_in_the_model(tmp_path):
    from ppaux.capture import writer
    from ppaux.dump import make_capture, make_meta

    capture = make_capture(
        make_meta("add_auxiliary_output_to_pp_tensors", ValueError("bad")),
        {"next_token_ids": torch.tensor([1, 2]), "__msg_type__": "output"},
        {"scores": [0.25, 0.75]},
    )
    path = tmp_path / "capture.pt"
    writer._save(torch, capture, path)
    assert read_dump(path).deviation is None


def test_the_bundled_torch_save_fixtures_are_in_the_model():
    edited = {"deflated_datapkl.pt", "storage_record_missing.pt", "storage_record_short.pt"}
    for path in sorted((REPO / "fixtures" / "dumps").glob("*.pt")):
        deviation = read_dump(path).deviation
        assert (deviation is not None) == (path.name in edited), (path.name, deviation)


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
    ),
    protocol=st.integers(2, 5),
)
def test_pickle_dump_output_is_in_the_model(value, protocol):
    assert pickle_deviation(pickle.dumps(value, protocol), (2, 3, 4, 5)) is None


@pytest.mark.parametrize("size", [999, 1000, 1001, 2000, 2001])
def test_batches_at_and_past_1000_items_are_in_the_model(size):
    # The pickler writes a dict or set of exactly 1000 items with an empty batch after the
    # full one, and a list's last batch of one item with APPENDS.
    values = [list(range(size)), {str(i): i for i in range(size)}, set(range(size))]
    for protocol in (2, 4):
        for value in values:
            data = pickle.dumps(value, protocol)
            assert pickle_deviation(data, (2, 3, 4, 5)) is None, (type(value), size, protocol)


# -- each way out of the model is a finding -------------------------------------------------

# data.pkl of {'a': 8} where the 8 is written as protocol 0 'I010\n' (C unpickler: 8).
_INT_010 = b"\x80\x02}q\x00X\x01\x00\x00\x00aq\x01I010\ns."


def test_protocol_0_int_with_a_leading_zero(tmp_path, sandbox):
    path = _torch_archive(tmp_path / "int010.pt", _INT_010, {})
    found = _codes(path)
    assert found["PP118"].startswith("error:") and "byte 13 (INT)" in found["PP118"]
    answer = sandbox.load(path)
    assert answer["outcome"] == "loaded"  # torch reads it; ppaux will not call it clean


def _tensor_pkl(key: bytes) -> bytes:
    """data.pkl of {'t': float32 tensor of 1 element} whose storage key opcodes are ``key``;
    each '~' is a BINPUT of the next memo index, as the pickler numbers them."""
    template = (
        b"\x80\x02}~X\x01\x00\x00\x00t~ctorch._utils\n_rebuild_tensor_v2\n~"
        b"((X\x07\x00\x00\x00storage~ctorch\nFloatStorage\n~"
        + key
        + b"X\x03\x00\x00\x00cpu~K\x01t~QK\x00K\x01\x85~K\x01\x85~\x89"
        b"ccollections\nOrderedDict\n~)R~t~R~s."
    )
    parts = template.split(b"~")
    out = parts[0]
    for index, part in enumerate(parts[1:]):
        out += b"q" + bytes([index]) + part
    return out


def test_the_hand_tensor_pickle_is_as_torch_writes_it(tmp_path):
    # The control for the two cases below: with the key '0' the archive is in the model.
    path = _torch_archive(tmp_path / "ok.pt", _tensor_pkl(b"X\x01\x00\x00\x000~"), {"0": b"\0" * 4})
    assert read_dump(path).deviation is None


@pytest.mark.parametrize("key", [b"K\x00", b"\x88"], ids=["int_0", "true"])
def test_a_storage_key_that_is_not_a_decimal_string(tmp_path, sandbox, key):
    # torch caches storages by the key as unpickled: 0 and '0', 1 and True; torch.save
    # writes only '0', '1', ...
    pkl = _tensor_pkl(key)
    name = "0" if key == b"K\x00" else "True"
    path = _torch_archive(tmp_path / "key.pt", pkl, {name: b"\0" * 4})
    found = _codes(path)
    assert "PP118" in found and "storage key" in found["PP118"], found


def _patch_record(data: bytes, name: str, new: bytes) -> bytes:
    """``data`` with record ``name``'s bytes replaced by ``new`` (same length), its CRC fixed in
    the data descriptor and the central directory, as a careful hand would."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        info = archive.getinfo(name)
    assert len(new) == info.file_size
    local = info.header_offset
    name_len, extra_len = struct.unpack("<HH", data[local + 26 : local + 30])
    start = local + 30 + name_len + extra_len
    old_crc = struct.pack("<L", info.CRC)
    new_crc = struct.pack("<L", zlib.crc32(new))
    out = bytearray(data)
    out[start : start + len(new)] = new
    out[start + len(new) + 4 : start + len(new) + 8] = new_crc
    central = bytes(out).find(b"PK\x01\x02")
    at = bytes(out).find(old_crc, central)
    out[at : at + 4] = new_crc
    return bytes(out)


def test_a_serialization_id_that_is_not_decimal(tmp_path, sandbox):
    path = _saved(tmp_path, "plain.pt", {"a": torch.ones(2)})
    data = path.read_bytes()
    name = "plain/.data/serialization_id"
    with zipfile.ZipFile(path) as archive:
        size = archive.getinfo(name).file_size
    path.write_bytes(_patch_record(data, name, b"\xff" * size))
    found = _codes(path)
    assert found["PP118"].startswith("error:") and "serialization_id" in found["PP118"]


def test_a_record_name_without_the_utf8_flag(tmp_path, sandbox):
    path = _saved(tmp_path, "plain.pt", {"a": torch.ones(2)})
    data = bytearray(path.read_bytes())
    data[6:8] = struct.pack("<H", 0x0008)  # the first local header's flags
    path.write_bytes(bytes(data))
    found = _codes(path)
    assert "PP118" in found and "local header byte 7" in found["PP118"], found
    assert sandbox.load(path)["outcome"] == "loaded"


def test_parameter_state_that_sets_data(tmp_path, sandbox):
    param = torch.nn.Parameter(torch.ones(4))
    param.extra = 1  # a Parameter with state: torch.save writes _rebuild_parameter_with_state
    path = _saved(tmp_path, "param.pt", {"p": param})
    assert read_dump(path).deviation is None
    pkl = _data_pkl(path)
    assert b"_rebuild_parameter_with_state" in pkl and b"extra" in pkl
    # The state's key 'extra' renamed 'data': torch's setattr(param, 'data', 1) fails.
    edited = pkl.replace(b"X\x05\x00\x00\x00extra", b"X\x04\x00\x00\x00data", 1)
    with zipfile.ZipFile(path) as archive:
        storage = archive.read("param/data/0")
    out = _torch_archive(tmp_path / "param_data.pt", edited, {"0": storage})
    found = _inspected(out)
    assert found["PP117"].startswith("error:") and "'data'" in found["PP117"], found
    assert sandbox.load(out)["outcome"] != "loaded"


def test_newobj_on_a_function(tmp_path, sandbox):
    pkl = (
        b"\x80\x02}q\x00X\x01\x00\x00\x00aq\x01c_codecs\nencode\nq\x02"
        b"X\x01\x00\x00\x00xq\x03X\x06\x00\x00\x00latin1q\x04\x86q\x05\x81q\x06s."
    )
    path = _torch_archive(tmp_path / "newobj.pt", pkl, {})
    found = _codes(path)
    assert found["PP118"].startswith("error:") and "NEWOBJ" in found["PP118"], found
    assert sandbox.load(path)["outcome"] != "loaded"


def test_build_on_a_plain_dict(tmp_path, sandbox):
    pkl = b"\x80\x02}q\x00X\x01\x00\x00\x00aq\x01}q\x02}q\x03bs."
    path = _torch_archive(tmp_path / "build.pt", pkl, {})
    found = _codes(path)
    assert found["PP118"].startswith("error:") and "BUILD on a plain dict" in found["PP118"]
    assert sandbox.load(path)["outcome"] != "loaded"


def test_a_text_memo_index(tmp_path):
    pkl = b"\x80\x02}p-1\nX\x01\x00\x00\x00aq\x00K\x01s."
    path = _torch_archive(tmp_path / "memo.pt", pkl, {})
    found = _codes(path)
    assert found["PP118"].startswith("error:") and "(PUT)" in found["PP118"], found


def test_a_frame_whose_length_lies(tmp_path):
    data = bytearray(pickle.dumps({"a": [1, 2, 3]}, 4))
    assert data[2] == 0x95
    length = struct.unpack("<Q", data[3:11])[0]
    shorter = bytes(data[:3]) + struct.pack("<Q", length - 3) + bytes(data[11:])
    assert pickle_deviation(shorter, (2, 3, 4, 5)) is not None
    data[3:11] = struct.pack("<Q", length + 3)  # torch: pickle data was truncated
    deviation = pickle_deviation(bytes(data), (2, 3, 4, 5))
    assert deviation is not None and deviation.severe, deviation
    path = tmp_path / "frame.pkl"
    path.write_bytes(bytes(data))
    assert "PP118" in _codes(path) or pytest.fail("a lying FRAME is not clean")


def test_a_call_before_torch_stops_is_a_security_finding(tmp_path):
    # A tensor BUILD whose state calls posix.system: torch runs the call while it unpickles
    # the state, then Tensor.__setstate__ fails. The call is PP201; PP117 may come with it.
    torch_pkl = _data_pkl(_saved(tmp_path, "t.pt", {"t": torch.ones(1)}))
    at = torch_pkl.rindex(b"s.")
    call = b"cposix\nsystem\nq\x0eX\x04\x00\x00\x00trueq\x0f\x85q\x10Rq\x11b"
    pkl = torch_pkl[:at] + call + torch_pkl[at:]
    path = tmp_path / "build_call.pt"
    with zipfile.ZipFile(tmp_path / "t.pt") as archive:
        storage = archive.read("t/data/0")
    _torch_archive(path, pkl, {"0": storage})
    from ppaux.dump import inspect_paths

    report = inspect_paths([str(path)])
    codes = [f.code for f in report.findings]
    assert "PP201" in codes, [(f.code, f.message) for f in report.findings]
    assert any("posix.system" in f.message for f in report.findings if f.code == "PP201")


def test_a_zip64_end_record_with_0xffff_counts_torch_loads(tmp_path, sandbox):
    # The classic end record says 0xFFFF records (as when there are too many to count there);
    # miniz takes the counts from the zip64 end record, which torch.save always writes.
    path = _saved(tmp_path, "plain.pt", {"a": torch.ones(2)})
    data = bytearray(path.read_bytes())
    end = len(data) - 22
    assert data[end : end + 4] == b"PK\x05\x06"
    data[end + 8 : end + 12] = b"\xff\xff\xff\xff"  # entries on this disk, entries in all
    path.write_bytes(bytes(data))
    assert sandbox.load(path)["outcome"] == "loaded"
    found = _codes(path)
    assert "PP117" not in found, found
    assert found["PP118"].startswith("warning:") and "end records" in found["PP118"], found


_SAVE_SCRIPT = """
import sys, torch
folder = sys.argv[1]
base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
values = {
    "dtypes": {str(d): torch.zeros(2, dtype=d) for d in (
        torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8,
        torch.int16, torch.int32, torch.int64, torch.bool, torch.complex64)},
    "views": {"a": base, "b": base[1:, 2:], "t": base.t()},
    "parameter": torch.nn.Parameter(torch.ones(3)),
    "empty": torch.empty(0),
    "message": {"next_token_ids": torch.tensor([1, 2]), "__msg_type__": "output"},
}
for name, value in values.items():
    torch.save(value, f"{folder}/{name}.pt")
print(torch.__version__)
"""


@pytest.mark.skipif(
    not __import__("os").environ.get("PPAUX_TORCH_PYTHON"),
    reason="opt-in: PPAUX_TORCH_PYTHON names a Python with another torch (such as 2.14.1)",
)
def test_another_torchs_files_are_in_the_model(tmp_path):
    import os
    import subprocess

    done = subprocess.run(
        [os.environ["PPAUX_TORCH_PYTHON"], "-c", _SAVE_SCRIPT, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    files = sorted(tmp_path.glob("*.pt"))
    assert len(files) == 5, done.stdout
    for path in files:
        assert read_dump(path).deviation is None, (done.stdout, path.name)


def test_a_v3_rebuild_over_too_few_storage_bytes(tmp_path, sandbox):
    # torch.save writes a uint16 tensor with _rebuild_tensor_v3 over an untyped storage whose
    # numel counts bytes: 4 elements need 8; a storage of 4 bytes is one torch refuses.
    saved = _saved(tmp_path, "u16.pt", {"t": torch.zeros(4, dtype=torch.uint16)})
    pkl = _data_pkl(saved)
    assert b"_rebuild_tensor_v3" in pkl and b"cpuq\x06K\x08t" in pkl
    path = _torch_archive(
        tmp_path / "short.pt", pkl.replace(b"cpuq\x06K\x08t", b"cpuq\x06K\x04t"), {"0": bytes(4)}
    )
    assert sandbox.load(path)["outcome"] != "loaded"
    _, findings = inspect_file(str(path))
    assert any(f.code == "PP116" and "byte 8" in f.message for f in findings), findings


def _recursive_tuple(size: int) -> tuple[object, ...]:
    inner: list[object] = []
    value = (inner,) + (0,) * (size - 1)
    inner.append(value)
    return value


@pytest.mark.parametrize("size", [1, 3, 4])
def test_pop_for_a_recursive_tuple_is_in_the_model(size):
    # The one place the pickler writes POP (tuples of 1-3 items) or POP_MARK (more).
    data = pickle.dumps(_recursive_tuple(size), protocol=2)
    assert (b"0h" if size <= 3 else b"1h") in data
    assert pickle_deviation(data) is None


class _Itself:
    """An object whose reduction's arguments hold the object itself (through a list)."""

    def __init__(self) -> None:
        self.items: list[object] = [self]

    def __reduce__(self) -> tuple[object, ...]:
        return (_Itself.rebuild, (self.items,))

    @staticmethod
    def rebuild(items: list[object]) -> _Itself:
        return _Itself()


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_an_object_its_own_arguments_hold_is_popped_and_fetched(protocol):
    # save_reduce: the object was memoized while its arguments were written, so the pickler
    # discards the one REDUCE just built (POP) and writes the GET of the memoized one.
    data = pickle.dumps(_Itself(), protocol=protocol)
    assert b"R0h" in data or b"R0j" in data, data
    assert pickle_deviation(data, (2, 3, 4, 5)) is None
    at = data.index(b"R0") + 1
    deviation = pickle_deviation(data[:at] + b"0" + data[at:], (2, 3, 4, 5))
    assert deviation is not None and "POP" in deviation.what, deviation  # two POPs


@pytest.mark.parametrize("insert", [b"N0", b"(N1"], ids=["none_pop", "mark_none_pop_mark"])
def test_pop_outside_a_recursive_tuple(tmp_path, sandbox, insert):
    path = _saved(tmp_path, "plain.pt", {"a": torch.ones(2)})
    pkl = _data_pkl(path)
    with zipfile.ZipFile(path) as archive:
        storage = archive.read("plain/data/0")
    out = _torch_archive(tmp_path / "pop.pt", pkl[:2] + insert + pkl[2:], {"0": storage})
    found = _codes(out)
    assert found["PP118"].startswith("error:") and "POP" in found["PP118"], found
    assert sandbox.load(out)["outcome"] == "loaded"  # the sandbox's torch reads it past the POP


def _edited_tensor_file(tmp_path: Path, edit) -> Path:
    path = _saved(tmp_path, "plain.pt", {"a": torch.ones(2)})
    pkl = _data_pkl(path)
    with zipfile.ZipFile(path) as archive:
        storage = archive.read("plain/data/0")
    return _torch_archive(tmp_path / "edited.pt", edit(pkl), {"0": storage})


def _hooks_with_items(pkl: bytes) -> bytes:
    at = pkl.index(b")Rq") + 4  # after the OrderedDict's REDUCE and BINPUT
    return pkl[:at] + b"(K\x01K\x02K\x03K\x04u" + pkl[at:]  # two items, one batch


def _hooks_a_set(pkl: bytes) -> bytes:
    return pkl.replace(b"collections\nOrderedDict", b"__builtin__\nset", 1)


def _hooks_by_newobj(pkl: bytes) -> bytes:
    edited = pkl.replace(b"OrderedDict\nq\n)R", b"OrderedDict\nq\n)\x81", 1)
    assert edited != pkl
    return edited


@pytest.mark.parametrize(
    ("edit", "outcome"),
    [
        (_hooks_with_items, "loaded"),
        (_hooks_a_set, "blocked"),
        (_hooks_by_newobj, None),
    ],
    ids=["items", "set", "newobj"],
)
def test_backward_hooks_other_than_an_empty_ordered_dict(tmp_path, sandbox, edit, outcome):
    out = _edited_tensor_file(tmp_path, edit)
    found = _codes(out)
    assert found["PP118"].startswith("error:") and "backward hooks" in found["PP118"], found
    answer = sandbox.load(out)
    assert outcome is None or answer["outcome"] == outcome


class _Storage:
    def __init__(self, cls: type, key: str, location: str = "cpu") -> None:
        self.pid = ("storage", cls, key, location, 2)


class _Tensor:
    """Reduces as torch.save reduces a tensor of 2 elements on ``storage``."""

    def __init__(self, storage: _Storage) -> None:
        # Size and stride made anew for each tensor, as torch.save makes them (a shared tuple
        # would be written once and fetched from the memo).
        self.args = (storage, 0, tuple([2]), tuple([1]), False, collections.OrderedDict())

    def __reduce_ex__(self, protocol):
        return (torch._utils._rebuild_tensor_v2, self.args)


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        return obj.pid if isinstance(obj, _Storage) else None


def _hand_saved(tmp_path: Path, value: object, storages: dict[str, bytes]) -> Path:
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=2).dump(value)
    return _torch_archive(tmp_path / "hand.pt", buffer.getvalue(), storages)


@pytest.mark.parametrize(
    ("second", "wording"),
    [
        (_Storage(torch.IntStorage, "0"), "torch.IntStorage"),
        (_Storage(torch.FloatStorage, "0", "meta"), "location 'meta'"),
    ],
    ids=["dtype", "location"],
)
def test_one_storage_key_with_two_dtypes_or_locations(tmp_path, sandbox, second, wording):
    first = _Storage(torch.FloatStorage, "0")
    control = _hand_saved(tmp_path, {"a": _Tensor(first), "b": _Tensor(first)}, {"0": b"\0" * 8})
    assert read_dump(control).deviation is None
    path = _hand_saved(tmp_path, {"a": _Tensor(first), "b": _Tensor(second)}, {"0": b"\0" * 8})
    found = _codes(path)
    assert found["PP118"].startswith("error:") and wording in found["PP118"], found
    assert sandbox.load(path)["outcome"] in ("loaded", "refused", "blocked")


def test_untyped_storage_named_as_torch_does_not(tmp_path, sandbox):
    path = _saved(tmp_path, "untyped.pt", {"s": torch.UntypedStorage(4)})
    pkl = _data_pkl(path)
    assert b"torch.storage\nUntypedStorage" in pkl and read_dump(path).deviation is None
    with zipfile.ZipFile(path) as archive:
        storage = archive.read("untyped/data/0")
    edited = pkl.replace(b"torch.storage\nUntypedStorage", b"torch\nUntypedStorage", 1)
    out = _torch_archive(tmp_path / "edited.pt", edited, {"0": storage})
    found = _codes(out)
    assert found["PP118"].startswith("error:") and "torch.UntypedStorage" in found["PP118"]
    assert sandbox.load(out)["outcome"] == "blocked"  # weights_only refuses that name


def test_a_dict_key_written_twice(tmp_path, sandbox):
    path = _saved(tmp_path, "two.pt", {"a": torch.ones(2), "b": 1})
    pkl = _data_pkl(path)
    with zipfile.ZipFile(path) as archive:
        storage = archive.read("two/data/0")
    edited = pkl.replace(b"X\x01\x00\x00\x00bq", b"X\x01\x00\x00\x00aq", 1)
    out = _torch_archive(tmp_path / "dup.pt", edited, {"0": storage})
    found = _codes(out)
    assert found["PP118"].startswith("error:") and "key set twice" in found["PP118"], found
    assert sandbox.load(out)["outcome"] == "loaded"  # the last value wins


class _ListShapedTensor(_Tensor):
    def __init__(self, storage: _Storage) -> None:
        super().__init__(storage)
        self.args = (storage, 0, [2], [1], *self.args[4:])


def test_size_and_stride_as_lists(tmp_path, sandbox):
    storage = _Storage(torch.FloatStorage, "0")
    path = _hand_saved(tmp_path, {"a": _ListShapedTensor(storage)}, {"0": b"\0" * 8})
    found = _codes(path)
    assert found["PP118"].startswith("error:") and "size or stride" in found["PP118"], found
    assert sandbox.load(path)["outcome"] in ("loaded", "refused", "blocked")


class _PlainDictHooksTensor(_Tensor):
    def __init__(self, storage: _Storage) -> None:
        super().__init__(storage)
        self.args = (*self.args[:5], {})


def test_backward_hooks_as_a_plain_dict(tmp_path, sandbox):
    storage = _Storage(torch.FloatStorage, "0")
    control = _hand_saved(tmp_path, {"a": _Tensor(storage)}, {"0": b"\0" * 8})
    assert read_dump(control).deviation is None
    path = _hand_saved(tmp_path, {"a": _PlainDictHooksTensor(storage)}, {"0": b"\0" * 8})
    found = _codes(path)
    assert found["PP118"].startswith("error:") and "backward hooks" in found["PP118"], found
    assert sandbox.load(path)["outcome"] in ("loaded", "refused", "blocked")


# -- what torch.save never writes, read as torch's default (weights-only) loader reads it -------


def _inspected(path: Path) -> dict[str, str]:
    """The findings ``ppaux inspect`` reports for ``path``, by code."""
    from ppaux.dump import inspect_paths

    report = inspect_paths([str(path)])
    return {f.code: f"{f.severity.value}: {f.message}" for f in report.findings}


def _text_op(value: str) -> bytes:
    raw = value.encode()
    return b"X" + struct.pack("<I", len(raw)) + raw


def _hand_tensor(storage: str = "FloatStorage", numel: int = 3) -> bytes:
    """_rebuild_tensor_v2 of storage '0' as a (numel,) tensor, as opcodes without memo."""
    pid = b"(" + _text_op("storage") + f"ctorch\n{storage}\n".encode()
    pid += _text_op("0") + _text_op("cpu") + bytes([0x4B, numel]) + b"t"
    hooks = b"ccollections\nOrderedDict\n)R"
    args = b"(" + pid + b"QK\x00" + bytes([0x4B, numel, 0x85, 0x4B, 1, 0x85]) + b"\x89" + hooks
    return b"ctorch._utils\n_rebuild_tensor_v2\n" + args + b"tR"


def _hand_file(tmp_path: Path, name: str, value: bytes, item: int = 4) -> Path:
    """An archive of {'a': value} around hand-made opcodes, storage '0' of 3 items."""
    pkl = b"\x80\x02}" + _text_op("a") + value + b"s."
    return _torch_archive(tmp_path / name, pkl, {"0": bytes(range(3 * item))})


@pytest.mark.parametrize("first", [b"\x89", b"\x88"], ids=["false", "true"])
def test_build_on_a_tensor_with_setstate_arguments_is_refused(tmp_path, first, default_loads):
    # torch's weights-only loader runs BUILD on a plain tensor as tensor.set_(*state), which
    # takes no (requires_grad, _, hooks) triple; torch.save never writes BUILD on a tensor.
    state = b"(" + first + b"Nccollections\nOrderedDict\n)Rt"
    path = _hand_file(tmp_path, "build.pt", _hand_tensor() + state + b"b")
    found = _inspected(path)
    assert found["PP117"].startswith("error:") and "set_" in found["PP117"], found
    answer = default_loads(path)
    assert answer["outcome"] != "loaded" and "set_" in str(answer["error"]), answer


def test_build_on_a_tensor_that_set_reads_is_not_clean(tmp_path, sandbox, default_loads):
    # An empty state: set_() makes the tensor empty under the default loader, while
    # weights_only=False (Tensor.__setstate__) refuses it. Either way it is not clean.
    path = _hand_file(tmp_path, "build_empty.pt", _hand_tensor() + b")b")
    found = _inspected(path)
    assert found["PP202"].startswith("error:") and "set_" in found["PP202"], found
    assert default_loads(path)["outcome"] == "loaded"
    assert sandbox.load(path)["outcome"] == "refused"


@pytest.mark.parametrize(
    ("state", "kind"),
    [(b"K\x05", "int"), (b"(K\x01K\x02l", "list"), (b"(NNNt", "tuple")],
)
def test_parameter_state_of_a_shape_torch_save_never_writes(tmp_path, state, kind, default_loads):
    # _set_obj_state takes None, a dict, or a (dict, slots) pair; anything else fails.
    value = (
        b"ctorch._utils\n_rebuild_parameter_with_state\n("
        + _hand_tensor()
        + b"\x89ccollections\nOrderedDict\n)R"
        + state
        + b"tR"
    )
    path = _hand_file(tmp_path, f"param_{kind}.pt", value)
    found = _inspected(path)
    assert found["PP117"].startswith("error:"), found
    assert "_rebuild_parameter_with_state" in found["PP117"], found
    assert default_loads(path)["outcome"] != "loaded"


def test_parameter_called_by_reduce_on_an_integer_tensor(tmp_path, default_loads):
    # torch.nn.Parameter(t) requires gradients by default: torch refuses an int64 tensor.
    value = b"ctorch.nn.parameter\nParameter\n(" + _hand_tensor("LongStorage") + b"tR"
    path = _hand_file(tmp_path, "param_int.pt", value, item=8)
    found = _inspected(path)
    assert found["PP117"].startswith("error:") and "int64" in found["PP117"], found
    answer = default_loads(path)
    assert answer["outcome"] != "loaded" and "gradients" in str(answer["error"]), answer


def test_parameter_called_by_reduce_is_not_as_torch_save_writes_it(tmp_path, default_loads):
    # torch loads it (a Parameter), but torch.save writes a Parameter with _rebuild_parameter.
    class ParameterByReduce:  # pickled as the call torch.nn.Parameter(tensor, False)
        def __reduce__(self) -> tuple[object, ...]:
            return (torch.nn.Parameter, (torch.ones(3), False))

    path = _saved(tmp_path, "param_reduce.pt", {"a": ParameterByReduce()})
    assert b"Parameter\n" in _data_pkl(path) and b"_rebuild_parameter" not in _data_pkl(path)
    found = _inspected(path)
    assert found["PP118"].startswith("error:") and "REDUCE" in found["PP118"], found
    assert "PP101" not in found, found
    assert default_loads(path)["outcome"] == "loaded"
    saved = _saved(tmp_path, "param_saved.pt", {"a": torch.nn.Parameter(torch.ones(3))})
    assert read_dump(saved).deviation is None


@pytest.mark.parametrize("cls", [b"ctorch\nTensor\n", b"ctorch.nn.parameter\nParameter\n"])
def test_wrapper_subclass_of_a_class_without_torch_dispatch(tmp_path, cls, default_loads):
    value = (
        b"ctorch._utils\n_rebuild_wrapper_subclass\n("
        + cls
        + b"ctorch\nfloat32\nK\x03\x85K\x01\x85K\x00"
        + b"ctorch.serialization\n_get_layout\n"
        + _text_op("torch.strided")
        + b"\x85R"
        + b"ctorch\ndevice\n"
        + _text_op("cpu")
        + b"\x85R\x89tR"
    )
    path = _hand_file(tmp_path, "wrapper.pt", value)
    found = _inspected(path)
    assert found["PP117"].startswith("error:") and "__torch_dispatch__" in found["PP117"], found
    answer = default_loads(path)
    assert answer["outcome"] != "loaded" and "__torch_dispatch__" in str(answer["error"]), answer


_STATE_ITEMS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=3))


@settings(max_examples=40, deadline=None)
@given(
    state=st.one_of(
        _STATE_ITEMS,
        st.tuples(),
        st.lists(_STATE_ITEMS, max_size=5).map(tuple),
        st.lists(_STATE_ITEMS, max_size=5),
        st.dictionaries(st.text(max_size=3), _STATE_ITEMS, max_size=3),
    )
)
def test_build_on_a_plain_tensor_is_never_clean(tmp_path_factory, state):
    # Whatever the state, torch.save never writes BUILD on a tensor, and the default loader's
    # set_(*state) either refuses it or reshapes the tensor: an error finding, never clean.
    encoded = pickle.dumps(state, protocol=2)[2:-1]  # the state's opcodes, without PROTO/STOP
    path = _hand_file(tmp_path_factory.mktemp("build"), "build.pt", _hand_tensor() + encoded + b"b")
    found = _inspected(path)
    assert {"PP117", "PP202"} & set(found), found
    assert all(found[code].startswith("error:") for code in {"PP117", "PP202"} & set(found))


#: The fields torch.Tensor sets itself (its data descriptors), which are never attributes.
_FIELD_NAMES = {
    name
    for cls in torch.Tensor.__mro__
    for name, attr in vars(cls).items()
    if hasattr(type(attr), "__set__")
}

_PLAIN_STATES = {
    # state: (code, does torch.load read the file)
    "tuple1": (({"x": 1},), "PP117", False),
    "tuple3": (({"x": 1}, {"y": 2}, {"z": 3}), "PP117", False),
    "list": ([("x", 1)], "PP117", False),
    "int": (5, "PP117", False),
    "str": ("abc", "PP117", False),
    "int_key": ({1: 2}, "PP117", False),
    "pair_with_list": (({"x": 1}, [1]), "PP117", False),
    "weakref": ({"__weakref__": 1}, "PP117", False),
}


@pytest.mark.parametrize("case", sorted(_PLAIN_STATES))
def test_a_plain_tensor_state_torch_save_never_writes_is_an_error(
    tmp_path, sandbox, monkeypatch, case
):
    # torch.save writes a plain tensor's state from _get_obj_state: its __dict__ of attribute
    # names. Any other state either fails in torch's _set_obj_state or sets a tensor field.
    state, code, loads = _PLAIN_STATES[case]
    monkeypatch.setattr(torch._utils, "_get_obj_state", lambda obj: state)
    path = _saved(tmp_path, f"{case}.pt", {"a": torch.arange(4.0)})
    assert b"_rebuild_from_type_v2" in _data_pkl(path)
    found = _inspected(path)
    assert found[code].startswith("error:"), found
    assert (sandbox.load(path)["outcome"] == "loaded") is loads


@pytest.mark.parametrize(
    ("name", "value"), [("inner", "tensor"), ("hidden", {"s": "x", "n": [1, 2]})]
)
def test_an_attribute_set_on_a_tensor_is_never_dropped(tmp_path, name, value):
    from ppaux.sglang import OUTPUT_PREFIX

    tensor = torch.arange(4.0)
    setattr(tensor, name, torch.zeros(10) if value == "tensor" else value)
    path = _saved(tmp_path, "attr.pt", {"a": tensor, OUTPUT_PREFIX + "s": [1.0]})
    loaded = torch.load(path)
    assert hasattr(loaded["a"], name)
    from ppaux.dump import inspect_paths

    report = inspect_paths([str(path)])
    assert {f.code for f in report.findings} == {"PP101"}, report.findings  # the list, only
    entry = report.data["files"][0]["payloads"][0]["entries"][0]
    assert [a["name"] for a in entry["attributes"]] == [name]
    # tensorize writes the tensor back with its attribute, as torch.load read it.
    from ppaux.fix.tensorize import tensorize_dump

    out = tmp_path / "fixed.pt"
    assert not tensorize_dump(str(path), str(out)).refusals
    again = getattr(torch.load(out)["a"], name)
    want = getattr(loaded["a"], name)
    assert torch.equal(again, want) if value == "tensor" else again == want


def test_the_tensor_fields_are_every_data_descriptor_torch_tensor_has():
    from ppaux.dump.obj_state import TENSOR_FIELDS

    fields = {
        name
        for cls in torch.Tensor.__mro__
        for name, attr in vars(cls).items()
        if hasattr(type(attr), "__set__")
    }
    assert fields <= TENSOR_FIELDS, sorted(fields - TENSOR_FIELDS)


_NAME_CHARS = "abcxyzABC_019.- "


@settings(max_examples=30, deadline=None)
@given(st.text(_NAME_CHARS, min_size=1, max_size=12).filter(lambda s: s not in _FIELD_NAMES))
def test_any_attribute_set_on_a_plain_tensor_is_named_never_dropped(name):
    import tempfile

    from ppaux.dump import inspect_paths

    tensor = torch.arange(3.0)
    setattr(tensor, name, 1)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "attr.pt"
        torch.save({"a": tensor}, path)
        assert getattr(torch.load(path)["a"], name) == 1
        report = inspect_paths([str(path)])
    assert not report.findings, report.findings  # as torch.save writes it
    entry = report.data["files"][0]["payloads"][0]["entries"][0]
    assert entry["attributes"] == [{"name": name, "type": "int", "value": "1"}]


def test_the_first_tensor_rebuild_is_not_as_torch_save_writes_it(tmp_path, sandbox):
    # torch._utils._rebuild_tensor(storage, offset, size, stride): torch still reads it, but
    # torch.save 2.x writes every plain tensor through _rebuild_tensor_v2.
    parts = (
        b"\x80\x02}~X\x01\x00\x00\x00t~ctorch._utils\n_rebuild_tensor\n~"
        b"((X\x07\x00\x00\x00storage~ctorch\nFloatStorage\n~X\x01\x00\x00\x000~"
        b"X\x03\x00\x00\x00cpu~K\x01t~QK\x00K\x01\x85~K\x01\x85~t~R~s."
    ).split(b"~")
    pkl = parts[0] + b"".join(b"q" + bytes([n]) + part for n, part in enumerate(parts[1:]))
    path = _torch_archive(tmp_path / "v1.pt", pkl, {"0": struct.pack("<f", 2.5)})
    answer = sandbox.load(path)
    assert answer["outcome"] == "loaded", answer
    found = _codes(path)
    assert found["PP118"].startswith("warning:"), found
    assert "torch._utils._rebuild_tensor," in found["PP118"], found


def test_a_meta_storage_with_a_record_is_not_as_torch_save_writes_it(tmp_path, sandbox):
    # torch.save pickles a meta tensor through _rebuild_meta_tensor_no_storage, with no
    # storage and no record; torch still reads a 'meta' storage that has one.
    pkl = _tensor_pkl(b"X\x01\x00\x00\x000~").replace(
        b"X\x03\x00\x00\x00cpu", b"X\x04\x00\x00\x00meta"
    )
    path = _torch_archive(tmp_path / "meta.pt", pkl, {"0": struct.pack("<f", 2.5)})
    answer = sandbox.load(path)
    assert answer["outcome"] == "loaded", answer
    found = _codes(path)
    assert found["PP118"].startswith("warning:"), found
    assert "location 'meta'" in found["PP118"] and "data/0" in found["PP118"], found
