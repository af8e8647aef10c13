"""The pickler fills a container (or a reduced object) only right after creating it: a later
APPEND, SETITEM or BUILD on a value fetched from the memo, or on one already filled, is not
as torch.save writes it, whatever torch.load makes of it. The CRC fields the writer fills
are modelled at the end."""

from __future__ import annotations

import io
import pickle
import struct
import zipfile
from collections import OrderedDict
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_archives import torch_archive as _archive

from ppaux.dump import inspect_file, read_dump
from ppaux.dump.grammar import pickle_deviation

pytestmark = pytest.mark.torch


def _text(value: str) -> bytes:
    return b"X" + struct.pack("<I", len(value)) + value.encode()


def _memoized(*parts: bytes) -> bytes:
    """The parts joined by a BINPUT of the next memo index, as the pickler numbers them."""
    out = parts[0]
    for index, part in enumerate(parts[1:]):
        out += b"q" + bytes([index]) + part
    return out


def _codes(path: Path) -> dict[str, str]:
    _, findings = inspect_file(str(path))
    return {f.code: f"{f.severity.value}: {f.message}" for f in findings}


# The args of a float tensor of one element on storage '0', up to its hooks (``hooks``), in
# parts to memoize: 'storage', FloatStorage, '0', 'cpu', the id, size and stride, then hooks.
def _tensor_after(hooks: bytes) -> list[bytes]:
    return [
        b"((" + _text("storage"),
        b"ctorch\nFloatStorage\n",
        _text("0"),
        _text("cpu"),
        b"K\x01t",
        b"QK\x00K\x01\x85",
        b"K\x01\x85",
        b"\x89" + hooks,
    ]


def test_hooks_fetched_back_and_filled_after_the_rebuild(tmp_path, sandbox):
    # {'t': tensor, 'h': <its hooks, fetched with BINGET 11>}, the hooks given the item
    # 7 -> _rebuild_tensor_v2 (BINGET 2) by a SETITEM after the tensor was rebuilt.
    head = [b"\x80\x02}", b"(" + _text("t"), b"ctorch._utils\n_rebuild_tensor_v2\n"]
    hooks = _tensor_after(b"ccollections\nOrderedDict\n")
    tail = [b")R", b"t", b"R", _text("h")]
    pkl = _memoized(*head, *hooks, *tail, b"h\x0bK\x07h\x02su.")
    control = _memoized(*head, *hooks, *tail, b"h\x0bu.")
    storage = {"0": b"\0" * 4}
    assert read_dump(_archive(tmp_path / "control.pt", control, storage)).deviation is None
    path = _archive(tmp_path / "filled.pt", pkl, storage)
    found = _codes(path)
    setitem = len(pkl) - 3
    assert found["PP118"].startswith("error:"), found
    assert f"byte {setitem} (SETITEM)" in found["PP118"] and "fills a value" in found["PP118"]
    answer = sandbox.load(path)
    assert answer["outcome"] == "loaded"  # torch reads it: the hooks hold a function
    assert "builtins.function" in str(answer["value"])


def test_hooks_filled_in_writer_order_are_reported(tmp_path, sandbox):
    # {'h': hooks} where hooks = OrderedDict({(tensor,): _rebuild_tensor_v2}) and the tensor
    # is rebuilt with these hooks while they are still empty: each opcode is one the pickler
    # writes, but at the end of the load the tensor has a backward hook.
    parts = [
        b"\x80\x02}",
        _text("h"),
        b"ccollections\nOrderedDict\n",
        b")R",
        b"ctorch._utils\n_rebuild_tensor_v2\n",
        *_tensor_after(b"h\x03t"),
        b"R",
        b"\x85",
    ]
    # memo: 0 dict, 1 'h', 2 OrderedDict, 3 the hooks, 4 the rebuild function, 5 to 11 the
    # tensor's id, size and stride, 12 its args, 13 the tensor, 14 the key (tensor,).
    pkl = _memoized(*parts, b"h\x04ss.")
    path = _archive(tmp_path / "hooks.pt", pkl, {"0": b"\0" * 4})
    dump = read_dump(path)
    assert dump.deviation is not None and dump.deviation.severe
    assert "backward hooks filled after the tensor was rebuilt" in dump.deviation.what
    assert sandbox.load(path)["outcome"] in ("loaded", "refused", "blocked")


@pytest.mark.parametrize(
    ("pkl", "where"),
    [
        (b"\x80\x02]q\x00K\x01aK\x02a.", "byte 10 (APPEND)"),
        (b"\x80\x02}q\x00(K\x01K\x02K\x05K\x06uK\x03K\x04s.", "byte 19 (SETITEM)"),
        (b"\x80\x02]q\x00h\x00K\x01a\x86q\x01.", "byte 9 (APPEND)"),
        (b"\x80\x02]q\x00h\x00(K\x01K\x02e\x86q\x01.", "byte 12 (APPENDS)"),
        (b"\x80\x02cm\nC\nq\x00)Rq\x01}q\x02b}q\x03b.", "byte 20 (BUILD)"),
    ],
    ids=[
        "append_after_one_item",
        "setitem_after_a_short_batch",
        "append_on_a_memo_get",
        "appends_on_a_memo_get",
        "build_twice",
    ],
)
def test_a_fill_on_a_finished_value(pkl, where):
    found = pickle_deviation(pkl)
    assert found is not None and found.severe, found
    assert found.where == f"data.pkl {where}" and "fills a value" in found.what


class _ListWithState(list):
    """Pickled with NEWOBJ, then its items (APPEND or APPENDS), then BUILD of its state."""


def _filled_values() -> list[object]:
    recursive: list[object] = []
    recursive.append(recursive)
    looped: dict[str, object] = {}
    looped["self"] = [looped, looped]
    with_state = _ListWithState([1, 2, 3])
    with_state.note = "kept"  # type: ignore[attr-defined]
    one = _ListWithState([1])
    one.note = "one"  # type: ignore[attr-defined]
    return [
        recursive,
        looped,
        with_state,
        one,
        OrderedDict(a=1),
        OrderedDict((str(i), i) for i in range(1001)),
        [OrderedDict(), OrderedDict(b=[1])],
    ]


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_what_the_pickler_fills_is_in_the_model(protocol):
    for value in _filled_values():
        data = pickle.dumps(value, protocol)
        assert pickle_deviation(data, (2, 3, 4, 5)) is None, (value, protocol)


class _Storage:
    def __init__(self, key: str, numel: int) -> None:
        self.pid = ("storage", torch.FloatStorage, key, "cpu", numel)


class _Tensor:
    def __init__(self, storage: _Storage) -> None:
        # Size and stride made anew for each tensor, as torch.save makes them.
        self.args = (storage, 0, tuple([2]), tuple([1]), False, OrderedDict())

    def __reduce_ex__(self, protocol):
        return (torch._utils._rebuild_tensor_v2, self.args)


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        return obj.pid if isinstance(obj, _Storage) else None


@pytest.mark.parametrize("numel", [3, 2])
def test_one_storage_key_with_two_sizes(tmp_path, sandbox, numel):
    first = _Storage("0", 3)
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=2).dump({"a": _Tensor(first), "b": _Tensor(_Storage("0", numel))})
    path = _archive(tmp_path / "sizes.pt", buffer.getvalue(), {"0": b"\0" * 12})
    found = _codes(path)
    if numel == 3:
        assert "PP118" not in found, found
        return
    assert found["PP118"].startswith("error:"), found
    assert "storage key '0' written with 2 elements, first with 3" in found["PP118"]
    assert sandbox.load(path)["outcome"] in ("loaded", "refused", "blocked")


_base = torch.arange(6, dtype=torch.float32)
_LEAVES = [
    _base,
    _base[2:],
    _base.view(2, 3),
    torch.ones(2, dtype=torch.int64),
    torch.nn.Parameter(torch.zeros(2)),
    torch.tensor(1.5),
]


@settings(max_examples=25, deadline=None)
@given(
    value=st.recursive(
        st.sampled_from(_LEAVES) | st.integers(-3, 300) | st.text(max_size=3) | st.none(),
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(st.text(max_size=3), inner, max_size=4)
            | st.dictionaries(st.text(max_size=3), inner, max_size=4).map(OrderedDict)
            | st.tuples(inner, inner)
        ),
        max_leaves=12,
    )
)
def test_torch_save_of_nested_containers_is_in_the_model(tmp_path_factory, value):
    path = tmp_path_factory.mktemp("nested") / "value.pt"
    torch.save(value, path)
    assert read_dump(path).deviation is None


# -- the CRC fields: the data's, or 0 in every record when torch.save computes none ----------


def _without_crc(tmp_path: Path) -> Path:
    path = tmp_path / "nocrc.pt"
    torch.serialization.set_crc32_options(False)
    try:
        torch.save({"a": torch.arange(12, dtype=torch.float32).reshape(3, 4)}, path)
    finally:
        torch.serialization.set_crc32_options(True)
    return path


def test_torch_save_without_crcs_is_in_the_model(tmp_path, sandbox):
    path = _without_crc(tmp_path)
    with zipfile.ZipFile(path) as archive:
        assert {info.CRC for info in archive.infolist()} == {0}
    dump = read_dump(path)
    assert dump.deviation is None
    assert tuple(dump.root["a"].shape) == (3, 4)
    assert sandbox.load(path)["outcome"] == "loaded"


def _crc_replaced(tmp_path: Path, new: int) -> Path:
    """torch.save's file with data.pkl's CRC (in its data descriptor and its central
    directory entry) replaced by ``new``."""
    path = _saved_plain(tmp_path)
    with zipfile.ZipFile(path) as archive:
        crc = archive.getinfo("plain/data.pkl").CRC
    data = path.read_bytes()
    old = struct.pack("<L", crc)
    assert data.count(old) == 2
    out = tmp_path / "crc.pt"
    out.write_bytes(data.replace(old, struct.pack("<L", new)))
    return out


def _saved_plain(tmp_path: Path) -> Path:
    path = tmp_path / "plain.pt"
    torch.save({"a": torch.ones(3)}, path)
    return path


def test_a_crc_of_0_among_real_crcs(tmp_path):
    found = _codes(_crc_replaced(tmp_path, 0))
    assert found["PP118"].startswith("error:"), found
    assert "'plain/data.pkl': its CRC is not its data's" in found["PP118"]


def test_a_wrong_crc_is_a_finding_as_torch_reads_on(tmp_path, sandbox):
    # torch's zip reader checks no CRC: it loads the file, so ppaux reads it too (Python's
    # zipfile would refuse it) and reports the CRC.
    path = _crc_replaced(tmp_path, 0x12345678)
    assert sandbox.load(path)["outcome"] == "loaded"
    found = _codes(path)
    assert "'plain/data.pkl': its CRC is not its data's" in found["PP118"], found
