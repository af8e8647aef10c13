"""Protocol-4 frames as CPython's pickler cuts them: it ends a frame only once the frame holds
64 KiB (at an object's boundary), before a payload of 64 KiB or more (written outside any
frame), and at the end of the pickle. A pickle under 64 KiB cut into several frames (the same
opcodes, reframed) is read by torch.load as the original, and is not as torch.save writes it
(PP118, a warning); torch.save's own frames, over several 64 KiB, stay clean."""

from __future__ import annotations

import io
import pickletools
import struct
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch_archives import torch_archive

from ppaux.dump import inspect_paths

pytestmark = pytest.mark.torch

_VALUE = {"a": torch.arange(3.0), "b": list(range(50)), "c": "x" * 40}


def _records(value: object) -> tuple[bytes, bytes]:
    buffer = io.BytesIO()
    torch.save(value, buffer, pickle_protocol=4)
    with torch.serialization._open_zipfile_reader(io.BytesIO(buffer.getvalue())) as archive:
        return bytes(archive.get_record("data.pkl")), bytes(archive.get_record("data/0"))


def _archive(path: Path, data_pkl: bytes, storage: bytes) -> Path:
    return torch_archive(path, data_pkl, {"0": storage})


def _reframed(data_pkl: bytes, cuts: list[int]) -> bytes:
    """``data_pkl`` (PROTO, one FRAME, the body) with its body cut into frames at ``cuts``."""
    body = data_pkl[11:]
    out, last = data_pkl[:2], 0
    for cut in [*sorted(set(cuts)), len(body)]:
        if cut > last:
            out += b"\x95" + struct.pack("<Q", cut - last) + body[last:cut]
            last = cut
    return out


def _codes(path: Path) -> dict[str, str]:
    report = inspect_paths([str(path)])
    return {f.code: f"{f.severity.value}: {f.message}" for f in report.findings}


_PICKLE, _STORAGE = _records(_VALUE)
_BOUNDARIES = [pos - 11 for _, _, pos in pickletools.genops(_PICKLE) if pos > 11]


def test_torch_saves_one_frame_is_in_the_model(tmp_path):
    assert _PICKLE[2] == 0x95 and struct.unpack_from("<Q", _PICKLE, 3)[0] == len(_PICKLE) - 11
    assert "PP118" not in _codes(_archive(tmp_path / "t.pt", _PICKLE, _STORAGE))


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(cuts=st.lists(st.sampled_from(_BOUNDARIES), min_size=1, max_size=6))
def test_a_small_pickle_in_several_frames_is_a_finding_and_reads_the_same(tmp_path_factory, cuts):
    path = _archive(tmp_path_factory.mktemp("frames") / "t.pt", _reframed(_PICKLE, cuts), _STORAGE)
    read = torch.load(path, weights_only=False)
    assert read["b"] == _VALUE["b"] and read["a"].tolist() == [0.0, 1.0, 2.0]
    found = _codes(path)
    assert found["PP118"].startswith("warning:") and "FRAME" in found["PP118"], found


def test_torch_saves_frames_over_64_kib_are_in_the_model(tmp_path):
    value = {"a": torch.ones(2), "b": list(range(40000)), "c": b"z" * 70000, "d": "q" * 9}
    data_pkl, storage = _records(value)
    frames = sum(1 for op, _, _ in pickletools.genops(data_pkl) if op.name == "FRAME")
    assert frames >= 3
    assert "PP118" not in _codes(_archive(tmp_path / "t.pt", data_pkl, storage))
