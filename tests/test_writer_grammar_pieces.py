"""Files torch reads as it reads torch.save's, but that torch.save never writes, are not clean.

Each file is made by a few lines of script (a pickler with torch's persistent ids, torch's own
zip writer, a byte edit) and read by torch's real loader in the sandbox
(torch.load(weights_only=False)) and by its default reader (weights_only=True, which runs no
global outside torch's list); ppaux must report where it leaves the writer's grammar (PP118).
The last tests compare ppaux with torch where torch refuses: a numpy array numpy cannot rebuild,
and a storage location torch cannot restore, before or after a call.
"""

from __future__ import annotations

import collections
import io
import json
import pickle
import struct
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import cli
from torch_archives import torch_archive as _archive
from torch_children import Children

from ppaux.dump import inspect_file
from ppaux.dump.grammar import pickle_deviation

pytestmark = pytest.mark.torch

_ONES = struct.pack("<2f", 1.0, 1.0)


def _codes(path: Path) -> dict[str, str]:
    _, findings = inspect_file(str(path))
    return {f.code: f"{f.severity.value}: {f.message}" for f in findings}


class _Storage:
    def __init__(self, key: str) -> None:
        self.pid = ("storage", torch.FloatStorage, key, "cpu", 2)


class _Tensor:
    """Reduces as torch.save reduces a float tensor of 2 elements; the size, stride and hooks
    are new objects unless given (torch.save makes them anew for each tensor)."""

    def __init__(self, key: str, size=None, stride=None, hooks=None) -> None:
        size = tuple([2]) if size is None else size
        stride = tuple([1]) if stride is None else stride
        hooks = collections.OrderedDict() if hooks is None else hooks
        self.args = (_Storage(key), 0, size, stride, False, hooks)

    def __reduce_ex__(self, protocol):
        return (torch._utils._rebuild_tensor_v2, self.args)


class _Parameter:
    def __init__(self, data: _Tensor) -> None:
        self.data = data

    def __reduce_ex__(self, protocol):
        return (torch._utils._rebuild_parameter, (self.data, False, collections.OrderedDict()))


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        return obj.pid if isinstance(obj, _Storage) else None


def _hand(tmp_path: Path, name: str, value: object) -> Path:
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=2).dump(value)
    pkl = buffer.getvalue()
    keys = [k for k in ("0", "1") if f"X\x01\x00\x00\x00{k}".encode() in pkl]
    return _archive(tmp_path / f"{name}.pt", pkl, dict.fromkeys(keys, _ONES))


def _default_reader(path: Path) -> str:
    """torch.load's default reader (weights_only=True: no global outside torch's list runs)."""
    try:
        torch.load(path, weights_only=True)
    except Exception as exc:  # the reader's answer, whatever it raises
        return f"refused: {type(exc).__name__}"
    return "loaded"


def _cli_codes(path: Path) -> dict[str, str]:
    """The findings of ``ppaux inspect`` (a file torch refuses is a finding there, PP117)."""
    result = cli("inspect", str(path), "--format", "json")
    return {f["code"]: f["message"] for f in json.loads(result.stdout)["findings"]}


def _child_load(path: Path, children: Children) -> str:
    """torch.load(weights_only=False) of a file this test wrote, in a child process (the
    sandbox blocks numpy's globals): its last error line, or 'loaded'."""
    code = "import sys, torch\ntorch.load(sys.argv[1], weights_only=False)\n"
    done = children.run(code, str(path), timeout=120)
    return done.stderr.strip().splitlines()[-1] if done.returncode else "loaded"


def _read_alike(sandbox, path: Path, control: Path) -> None:
    """torch reads ``path`` as it reads ``control`` (torch.save's way), in both modes."""
    theirs, expected = sandbox.load(path), sandbox.load(control)
    assert theirs["outcome"] == expected["outcome"] == "loaded", theirs
    assert theirs["value"] == expected["value"]
    assert _default_reader(path) == _default_reader(control)


# -- pieces torch.save writes afresh for each tensor, fetched from the memo -----------------


def _shared(kind: str) -> dict[str, object]:
    if kind == "size":
        size = tuple([2])
        return {"a": _Tensor("0", size=size), "b": _Tensor("1", size=size)}
    if kind == "stride":
        stride = tuple([1])
        return {"a": _Tensor("0", stride=stride), "b": _Tensor("1", stride=stride)}
    if kind == "hooks":
        hooks: collections.OrderedDict[object, object] = collections.OrderedDict()
        return {"a": _Tensor("0", hooks=hooks), "b": _Tensor("1", hooks=hooks)}
    if kind == "user_tuple":  # a tuple of the dict's own, then used as a tensor's size
        size = tuple([2])
        return {"u": size, "a": _Tensor("0", size=size), "b": _Tensor("1")}
    tensor = _Tensor("0")
    return {"a": tensor, "p": _Parameter(tensor)}  # a Parameter's data: the tensor itself


_CONTROLS = {
    "size": {"a": _Tensor("0"), "b": _Tensor("1")},
    "user_tuple": {"u": (2,), "a": _Tensor("0"), "b": _Tensor("1")},
    "parameter_data": {"a": _Tensor("0"), "p": _Parameter(_Tensor("0"))},
}


@pytest.mark.parametrize(
    ("kind", "wording"),
    [
        ("size", "a tensor's size"),
        ("stride", "a tensor's stride"),
        ("hooks", "a tensor's backward hooks"),
        ("user_tuple", "a tensor's size"),
        ("parameter_data", "a Parameter's data"),
    ],
)
def test_a_rebuild_piece_fetched_from_the_memo(tmp_path, sandbox, kind, wording):
    path = _hand(tmp_path, kind, _shared(kind))
    control = _hand(tmp_path, "control", _CONTROLS.get(kind, _CONTROLS["size"]))
    assert "PP118" not in _codes(control)
    found = _codes(path)
    assert f"{wording} fetched from the memo" in found["PP118"], found
    assert found["PP118"].startswith("warning:")  # torch reads it alike: below
    _read_alike(sandbox, path, control)


def test_torch_saves_a_parameter_and_its_tensor_apart(tmp_path):
    # The control above as torch.save writes it: the Parameter's data is written afresh.
    tensor = torch.ones(2)
    path = tmp_path / "param.pt"
    torch.save({"a": tensor, "p": torch.nn.Parameter(tensor)}, path)
    assert "PP118" not in _codes(path)


# -- batches of fewer items than the pickler writes, and POP outside a recursive tuple ------


def _pkl(value: object) -> bytes:
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=2).dump(value)
    return buffer.getvalue()


def _one_item_appends(pkl: bytes) -> bytes:
    at = pkl.index(b"]q\x02") + 3  # the list's items follow its EMPTY_LIST and BINPUT
    end = pkl.index(b"aX", at)  # its one APPEND, before the next key
    return pkl[:at] + b"(" + pkl[at:end] + b"e" + pkl[end + 1 :]


def _empty_appends(pkl: bytes) -> bytes:
    at = pkl.index(b"]q\x02") + 3
    return pkl[:at] + b"(e" + pkl[at:]


def _empty_setitems(pkl: bytes) -> bytes:
    return pkl[:5] + b"(u" + pkl[5:]  # after the dict's EMPTY_DICT and BINPUT


def _one_pair_setitems(pkl: bytes) -> bytes:
    assert pkl.endswith(b"s.")
    return pkl[:5] + b"(" + pkl[5:-2] + b"u."


def _none_pop(pkl: bytes) -> bytes:
    at = pkl.index(b"h\x02((")  # the second tensor's GET of the rebuild function
    return pkl[:at] + b"N0" + pkl[at:]


_LIST = {"a": [_Tensor("0")], "b": _Tensor("1")}
_TWO = {"a": _Tensor("0"), "b": _Tensor("1")}
_ONE = {"a": _Tensor("0")}


@pytest.mark.parametrize(
    ("value", "edit", "wording", "severity"),
    [
        (_LIST, _one_item_appends, "a batch of 1 item", "warning"),
        (_LIST, _empty_appends, "0 items", "warning"),
        (_TWO, _empty_setitems, "fewer than 2 pairs", "warning"),
        (_ONE, _one_pair_setitems, "fewer than 2 pairs", "warning"),
        (_TWO, _none_pop, "POP", "error"),
    ],
    ids=["appends_one", "appends_empty", "setitems_empty", "setitems_one", "none_pop"],
)
def test_a_batch_or_pop_the_pickler_never_writes(tmp_path, sandbox, value, edit, wording, severity):
    pkl = _pkl(value)
    keys = {k: _ONES for k in ("0", "1") if f"X\x01\x00\x00\x00{k}".encode() in pkl}
    control = _archive(tmp_path / "control.pt", pkl, keys)
    assert "PP118" not in _codes(control)
    path = _archive(tmp_path / "edited.pt", edit(pkl), keys)
    found = _codes(path)
    assert found["PP118"].startswith(f"{severity}:") and wording in found["PP118"], found
    theirs = sandbox.load(path)
    assert theirs["outcome"] == "loaded" and theirs["value"] == sandbox.load(control)["value"]
    if edit is not _none_pop:  # the default reader runs no POP
        assert _default_reader(path) == "loaded"


class _Items(list):
    """A list subclass: the pickler writes its items by the generic batch_list."""


@pytest.mark.parametrize("size", [0, 1, 2, 3, 1000, 1001])
def test_every_batch_the_pickler_writes_is_in_the_model(size):
    values = [
        list(range(size)),
        _Items(range(size)),
        {str(i): i for i in range(size)},
        collections.OrderedDict((str(i), i) for i in range(size)),
        set(range(size)),
    ]
    for protocol in (2, 4):
        for value in values:
            data = pickle.dumps(value, protocol)
            assert pickle_deviation(data, (2, 3, 4, 5)) is None, (type(value), size, protocol)


# -- records torch.save writes one way ---------------------------------------------------------


def _with_serialization_id(path: Path, new: bytes) -> Path:
    data = path.read_bytes()
    with zipfile.ZipFile(path) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".data/serialization_id"))
        old, crc = archive.read(name), archive.getinfo(name).CRC
    assert len(old) == len(new) == 40 and data.count(old) == 1
    data = data.replace(old, new)
    data = data.replace(struct.pack("<L", crc), struct.pack("<L", zlib.crc32(new)))
    out = path.with_name("id.pt")
    out.write_bytes(data)
    return out


@pytest.mark.parametrize(("new", "clean"), [(b"9" * 40, False), (b"0" * 40, True)])
def test_a_serialization_id_of_another_shape(tmp_path, sandbox, new, clean):
    # PyTorchStreamWriter writes two unsigned 64-bit numbers, each as 20 zero-padded digits.
    saved = tmp_path / "plain.pt"
    torch.save({"a": torch.ones(2)}, saved)
    path = _with_serialization_id(saved, new)
    found = _codes(path)
    assert ("PP118" not in found) is clean, found
    if not clean:
        assert found["PP118"].startswith("warning:") and "serialization_id" in found["PP118"]
    _read_alike(sandbox, path, saved)


def test_a_legacy_storage_at_meta_with_data(tmp_path, sandbox):
    # torch.save cannot write a meta storage (either format); a meta tensor has no storage.
    with pytest.raises(NotImplementedError):
        torch.save({"m": torch.UntypedStorage(8, device="meta")}, io.BytesIO())
    buffer = io.BytesIO()
    torch.save({"m": torch.ones(2)}, buffer, _use_new_zipfile_serialization=False)
    data = buffer.getvalue()
    assert data.count(b"X\x03\x00\x00\x00cpu") == 1
    path = tmp_path / "meta.pt"
    path.write_bytes(data.replace(b"X\x03\x00\x00\x00cpu", b"X\x04\x00\x00\x00meta"))
    found = _codes(path)
    assert "at location 'meta'" in found["PP118"], found
    answer = sandbox.load(path)
    assert answer["outcome"] == "loaded" and _default_reader(path) == "loaded"


# -- what torch refuses: a numpy array numpy cannot rebuild --------------------------------------


@pytest.mark.parametrize("size", [8, 2])
def test_a_numpy_array_whose_shape_does_not_fit_its_buffer(tmp_path, torch_children, size):
    saved = tmp_path / "np.pt"
    torch.save({"w": torch.ones(2), "arr": np.arange(4, dtype="<f4")}, saved)
    with zipfile.ZipFile(saved) as archive:
        pkl = archive.read("np/data.pkl")
        storage = archive.read("np/data/0")
    assert pkl.count(b"K\x04\x85") == 1  # the array's shape (4,)
    edited = pkl.replace(b"K\x04\x85", b"K" + bytes([size]) + b"\x85")
    path = _archive(tmp_path / "short.pt", edited, {"0": storage})
    assert "ValueError: buffer size does not match array size" in _child_load(path, torch_children)
    _, findings = inspect_file(str(path))
    refusals = [f for f in findings if f.code == "PP116"]
    assert refusals and refusals[0].key == "arr" and "numpy refuses it" in refusals[0].message
    default = next(f for f in findings if f.code == "PP119")
    assert "would read it" not in default.message and "fails on it too" in default.message
    assert cli("inspect", str(path)).exit_code == 1


# The array's state as torch.save (protocol 2) pickles it: MARK, version 1, shape (4,), ...; and
# its bytes, made by the _codecs.encode memoized as entry 0x12.
@pytest.mark.parametrize(
    ("old", "new", "numpy_says", "ppaux_says"),
    [
        (b"(K\x01K\x04\x85", b"(K\x02K\x04\x85", "can't handle version 2", "version is 2"),
        (b"K\x04\x85q\x19", b"\x88\x85q\x19", "an integer is required", "shape (True,)"),
        (  # bytearray(<the bytes>), as protocol 2 pickles a bytearray
            b"h\x12X\x11\x00",
            b"c__builtin__\nbytearray\nh\x12X\x11\x00",
            "pickle not returning string",
            "data is a bytearray",
        ),
    ],
    ids=["version-2", "shape-true", "bytearray"],
)
def test_a_numpy_state_numpy_refuses_is_never_clean(
    tmp_path, torch_children, old, new, numpy_says, ppaux_says
):
    saved = tmp_path / "np.pt"
    torch.save({"w": torch.ones(2), "arr": np.arange(4, dtype="<f4")}, saved)
    with zipfile.ZipFile(saved) as archive:
        pkl = archive.read("np/data.pkl")
        storage = archive.read("np/data/0")
    assert pkl.count(old) == 1 and pkl.count(b'\x86q!Rq"') == 1
    edited = pkl.replace(old, new)
    if b"bytearray" in new:  # the call on the bytes the state's _codecs.encode made
        edited = edited.replace(b'\x86q!Rq"', b'\x86q!R\x85Rq"')
    path = _archive(tmp_path / "state.pt", edited, {"0": storage})
    assert numpy_says in _child_load(path, torch_children)
    assert _default_reader(path) == "refused: UnpicklingError"
    found = _cli_codes(path)
    assert "PP116" in found and ppaux_says in found["PP116"], found
    assert "numpy refuses it" in found["PP116"]
    assert cli("inspect", str(path)).exit_code == 1


# -- what torch refuses: a storage location it cannot restore, and a call -----------------------


class _Call:
    """A harmless call the sandbox blocks (and records) where torch's reader reaches it."""

    def __reduce__(self):
        return (print, ("called",))


def _bad_location(tmp_path: Path, value: dict[str, object]) -> Path:
    buffer = io.BytesIO()
    torch.save(value, buffer)
    with zipfile.ZipFile(buffer) as archive:
        prefix = archive.namelist()[0].split("/")[0]
        pkl = archive.read(f"{prefix}/data.pkl")
        storage = archive.read(f"{prefix}/data/0")
    assert pkl.count(b"cpu") == 1
    return _archive(tmp_path / "location.pt", pkl.replace(b"cpu", b"c\x07u"), {"0": storage})


def test_a_location_torch_cannot_restore_before_a_call(tmp_path, sandbox):
    # torch restores a storage's location at its BINPERSID and stops there: the call after it
    # is never reached (the sandbox blocks nothing), in either mode.
    path = _bad_location(tmp_path, {"a": torch.ones(2), "f": _Call()})
    answer = sandbox.load(path)
    assert answer["outcome"] == "refused" and answer["blocked"] == [], answer
    assert "restore data location" in answer["error"]
    found = _cli_codes(path)
    assert set(found) == {"PP117"}, found
    assert "BINPERSID" in found["PP117"] and "c\\x07u" in found["PP117"]


def test_a_call_before_a_location_torch_cannot_restore(tmp_path, sandbox):
    # The call comes first: torch.load(weights_only=False) makes it, then refuses the file.
    path = _bad_location(tmp_path, {"f": _Call(), "a": torch.ones(2)})
    answer = sandbox.load(path)
    assert answer["outcome"] == "blocked" and answer["blocked"], answer
    found = _cli_codes(path)
    assert {"PP201", "PP117"} <= set(found), found
    assert "c\\x07u" in found["PP117"]


# -- a stride of None: torch's Tensor.set_ takes it as the contiguous stride ----------------


@pytest.mark.parametrize("size", [(2,), (1, 2), (2, 1), (0, 2), ()], ids=str)
def test_a_stride_of_none_reads_contiguous_as_torch_reads_it(tmp_path, size):
    tensor = _Tensor("0", size=size)
    tensor.args = (*tensor.args[:3], None, *tensor.args[4:])
    path = _hand(tmp_path, "stride_none", {"t": tensor})
    loaded = torch.load(path, weights_only=True)["t"]  # a file this test wrote
    assert torch.load(path, weights_only=False)["t"].stride() == loaded.stride()
    result = cli("inspect", str(path), "--format", "json")
    assert result.exit_code != 2, result.stderr
    document = json.loads(result.stdout)
    (found,) = [f for f in document["findings"] if f["code"] == "PP118"]
    assert "stride None" in found["message"], found
    assert found["severity"] == "warning", found  # torch reads it as ppaux describes it
    assert result.exit_code == 0, result.stdout  # a warning: reported, still never clean
    (entry,) = document["files"][0]["payloads"][0]["entries"]
    assert tuple(entry["shape"]) == tuple(loaded.shape)
    assert tuple(entry["stride"]) == loaded.stride()
