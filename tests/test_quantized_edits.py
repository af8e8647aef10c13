"""Quantized tensors inside a value, edited after torch.save, checked against torch's real
loader: a file torch.load refuses (a view past the storage, an axis out of range, scales of
another length, an unknown qscheme) is refused with torch's reason (PP117), wherever the
tensor sits; one it reads is described with the shape torch gives."""

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
            found = re.fullmatch(r"\[<tensor \w+\[([0-9, ]*)\] on cpu>\]", entry.get("repr") or "")
            if entry["key"] == "x" and found:
                shape = tuple(int(n) for n in found.group(1).split(",") if n.strip())
    return codes, shape


def _edit(src: Path, dst: Path, edits: dict[int, int]) -> Path:
    """``src`` with the BININT1 operands at the given data.pkl offsets replaced, written by
    torch's own zip writer so that only those bytes differ."""
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
            writer.write_record(name, data, len(data))
    return dst


def _int_operands(path: Path) -> list[tuple[int, int]]:
    """(offset of the operand byte, value) of each BININT1 in data.pkl, in order."""
    with zipfile.ZipFile(path) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith("/data.pkl")]
        data = archive.read(name)
    return [(pos + 1, arg) for op, arg, pos in pickletools.genops(data) if op.name == "BININT1"]


def _per_channel(tmp_path: Path, rows: int, cols: int, axis: int) -> Path:
    data = torch.arange(rows * cols, dtype=torch.float32).reshape(rows, cols)
    channels = (rows, cols)[axis]
    scales = torch.linspace(0.25, 1.0, channels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
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
    axis=st.integers(0, 1),
    which=st.integers(0, 10),
    value=st.integers(0, 6),
)
def test_any_int_edit_is_clean_only_where_torch_reads_it_alike(
    tmp_path, rows, cols, axis, which, value
):
    """Each BININT1 of a per-channel quantized file set to another small value: ppaux's
    verdict is clean only where both of torch.load's modes read the tensor, with the shape
    ppaux describes; where torch refuses, ppaux has an error."""
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
