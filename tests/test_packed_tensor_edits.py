"""Quantized and sparse tensors inside a value, edited after torch.save, checked against
torch's real loader: a file torch.load refuses (a view past the storage, an axis out of range,
scales of another length, a layout name torch does not know, indices and values of another
count) is refused with torch's reason (PP117), wherever the tensor sits; one it reads is
described with the shape and layout torch gives."""

from __future__ import annotations

import json
import pickletools
import re
import warnings
import zipfile
from pathlib import Path

import pytest
import torch
from helpers import cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.torch


def _torch_reads(path: Path) -> list[object]:
    """What each of torch.load's modes gives for ``path``'s ``"x"`` (a shape), or the refusal."""
    said: list[object] = []
    for weights_only in (True, False):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                value = torch.load(path, weights_only=weights_only)["x"][0]
        except Exception as exc:
            said.append(f"refused: {type(exc).__name__}")
        else:
            said.append(tuple(value.shape))
    return said


def _ppaux(path: Path) -> tuple[set[str], tuple[int, ...] | None]:
    """The codes of ppaux inspect's findings at warning or error, and the shape it describes
    for the tensor in ``"x"``."""
    result = cli("inspect", str(path), "--format", "json")
    assert result.exit_code != 2, result.stderr
    document = json.loads(result.stdout)
    codes = {f["code"].split("/")[0] for f in document["findings"] if f["severity"] != "info"}
    shape = None
    for payload in (p for f in document["files"] for p in f["payloads"]):
        for entry in payload["entries"]:
            found = re.fullmatch(
                r"\[<tensor \w+\[([0-9, ]*)\](?: \w+)? on cpu>\]", entry.get("repr") or ""
            )
            if entry["key"] == "x" and found:
                shape = tuple(int(n) for n in found.group(1).split(",") if n.strip())
    return codes, shape


def _edit(
    src: Path, dst: Path, edits: dict[int, int], replace: tuple[bytes, bytes] = (b"", b"")
) -> Path:
    """``src`` with the BININT1 operands at the given data.pkl offsets replaced (and the bytes
    ``replace[0]`` by ``replace[1]``), written by torch's own zip writer so that only those
    bytes differ."""
    with zipfile.ZipFile(src) as archive:
        records = [
            (info.filename.split("/", 1)[1], archive.read(info)) for info in archive.infolist()
        ]
    with torch.serialization._open_zipfile_writer(str(dst)) as writer:
        for name, data in records:
            if name == "data.pkl":
                buffer = bytearray(data)
                for offset, value in edits.items():
                    assert buffer[offset - 1] == ord("K")
                    buffer[offset] = value
                data = bytes(buffer)
                if replace[0]:
                    assert data.count(replace[0]) == 1
                    data = data.replace(*replace)
            writer.write_record(name, data, len(data))
    return dst


def _int_operands(path: Path) -> list[tuple[int, int]]:
    """(offset of the operand byte, value) of each BININT1 in data.pkl, in order."""
    with zipfile.ZipFile(path) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith("/data.pkl")]
        data = archive.read(name)
    return [(pos + 1, arg) for op, arg, pos in pickletools.genops(data) if op.name == "BININT1"]


def _per_channel(tmp_path: Path, rows: int, cols: int, axis: int | None) -> Path:
    """A quantized tensor per channel along ``axis``, or per tensor where it is None."""
    data = torch.arange(rows * cols, dtype=torch.float32).reshape(rows, cols)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if axis is None:
            q = torch.quantize_per_tensor(data, 0.5, 3, torch.quint8)
        else:
            channels = (rows, cols)[axis]
            scales = torch.linspace(0.25, 1.0, channels)
            q = torch.quantize_per_channel(
                data, scales, torch.zeros(channels, dtype=torch.long), axis, torch.qint8
            )
    path = tmp_path / "q.pt"
    torch.save({"x": [q]}, path)
    return path


def test_view_past_the_storage_inside_a_list_is_refused(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        q = torch.quantize_per_tensor(torch.arange(4.0), 0.5, 1, torch.quint8)
    torch.save({"x": [q]}, tmp_path / "q.pt")
    # The operands in order: storage numel 4, offset 0, size 4, stride 1, zero point 1.
    size_at, size = _int_operands(tmp_path / "q.pt")[2]
    assert size == 4
    path = _edit(tmp_path / "q.pt", tmp_path / "e.pt", {size_at: 5})
    assert _torch_reads(path) == ["refused: RuntimeError"] * 2
    codes, _ = _ppaux(path)
    assert "PP117" in codes


@pytest.mark.parametrize(
    ("position", "value", "torch_error"),
    [
        ("axis", 2, "ValueError"),  # out of the size's range
        ("axis", 1, "ValueError"),  # 3 scales for a dimension of 4
        ("scales_size", 4, "RuntimeError"),  # scales past their storage
    ],
)
def test_per_channel_edits_torch_refuses(tmp_path, position, value, torch_error):
    src = _per_channel(tmp_path, 3, 4, 0)
    ints = _int_operands(src)
    # qtensor: numel 12, offset 0, size 3, 4, stride 4, 1; scales: numel 3, offset 0, size 3,
    # stride 1; zero points: numel 3, offset 0, size 3, stride 1; then the axis.
    at = {"axis": ints[-1][0], "scales_size": ints[8][0]}[position]
    path = _edit(src, tmp_path / "e.pt", {at: value})
    assert _torch_reads(path) == [f"refused: {torch_error}"] * 2
    codes, _ = _ppaux(path)
    assert "PP117" in codes


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    rows=st.integers(1, 4),
    cols=st.integers(1, 4),
    axis=st.sampled_from([0, 1, None]),
    which=st.integers(0, 10),
    value=st.integers(0, 6),
)
def test_any_int_edit_is_clean_only_where_torch_reads_it_alike(
    tmp_path, rows, cols, axis, which, value
):
    """Each BININT1 of a quantized file (per channel or per tensor) set to another small
    value: ppaux's verdict is clean only where both of torch.load's modes read the tensor,
    with the shape ppaux describes; where torch refuses, ppaux has an error."""
    src = _per_channel(tmp_path, rows, cols, axis)
    ints = _int_operands(src)
    at = ints[which % len(ints)][0]
    path = _edit(src, tmp_path / "e.pt", {at: value})
    reads = _torch_reads(path)
    codes, shape = _ppaux(path)
    if any(isinstance(r, str) for r in reads):
        assert codes & {"PP117", "PP116", "PP118", "PP113"}, (reads, codes)
    elif not codes:
        assert reads == [shape, shape], (reads, shape)


def _sparse(tmp_path: Path, layout: str) -> Path:
    dense = torch.tensor([[1.0, 0.0, 0.0], [0.0, 2.0, 3.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sparse = dense.to_sparse() if layout == "coo" else dense.to_sparse_csr()
    path = tmp_path / "s.pt"
    torch.save({"x": [sparse]}, path)
    return path


def _layout_name(old: str, new: str) -> tuple[bytes, bytes]:
    """The BINUNICODE of layout name ``old`` and of ``new``."""

    def text(name: str) -> bytes:
        return b"X" + len(name).to_bytes(4, "little") + name.encode()

    return text(old), text(new)


def test_csr_edited_to_csc_is_described_as_torch_reads_it(tmp_path):
    edit = _layout_name("torch.sparse_csr", "torch.sparse_csc")
    path = _edit(_sparse(tmp_path, "csr"), tmp_path / "e.pt", {}, edit)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = torch.load(path, weights_only=True)["x"][0]
    assert loaded.layout == torch.sparse_csc
    result = cli("inspect", str(path), "--format", "json")
    document = json.loads(result.stdout)
    (entry,) = document["files"][0]["payloads"][0]["entries"]
    assert "sparse_csc" in entry["repr"]
    assert tuple(loaded.shape) == _ppaux(path)[1]


@pytest.mark.parametrize(
    ("new", "torch_error"),
    [
        ("torch.sparse_cox", "KeyError"),  # no such layout
        ("sparse_coo", "KeyError"),  # the name without its module
        ("torch.strided", "NotImplementedError"),  # a layout that is not sparse
    ],
)
def test_layout_names_torch_refuses(tmp_path, new, torch_error):
    edit = _layout_name("torch.sparse_coo", new)
    path = _edit(_sparse(tmp_path, "coo"), tmp_path / "e.pt", {}, edit)
    assert _torch_reads(path) == [f"refused: {torch_error}"] * 2
    assert "PP117" in _ppaux(path)[0]


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(layout=st.sampled_from(["coo", "csr"]), which=st.integers(0, 20), value=st.integers(0, 6))
def test_any_int_edit_of_a_sparse_tensor_is_clean_only_where_torch_reads_it(
    tmp_path, layout, which, value
):
    """Each BININT1 of a sparse tensor's file (its parts' storages, offsets, sizes and strides,
    its own size) set to another small value: where torch refuses, ppaux has an error; where
    ppaux finds nothing, torch reads the shape ppaux describes."""
    src = _sparse(tmp_path, layout)
    ints = _int_operands(src)
    path = _edit(src, tmp_path / "e.pt", {ints[which % len(ints)][0]: value})
    reads = _torch_reads(path)
    codes, shape = _ppaux(path)
    if any(isinstance(r, str) for r in reads):
        assert codes & {"PP117", "PP116", "PP118", "PP113"}, (reads, codes)
    elif not codes:
        assert reads == [shape, shape], (reads, shape)


@pytest.mark.parametrize("storage", ["ByteStorage", "FloatStorage", "CharStorage"])
def test_a_quantized_rebuild_over_a_storage_of_another_dtype_is_refused(tmp_path, storage):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        q = torch.quantize_per_tensor(torch.arange(4.0), 0.5, 1, torch.quint8)
    torch.save({"x": [q]}, tmp_path / "q.pt")
    edit = (b"ctorch\nQUInt8Storage\n", f"ctorch\n{storage}\n".encode())
    path = _edit(tmp_path / "q.pt", tmp_path / "e.pt", {}, edit)
    assert _torch_reads(path) == ["refused: RuntimeError"] * 2
    assert "PP117" in _ppaux(path)[0]
