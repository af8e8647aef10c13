"""A tensor nested in a payload's value, saved on a device other than the CPU: torch.load
needs that device where it loads the file (a CUDA device, or the module of hpu or
privateuseone), so whether it loads depends on the machine, not the file. inspect judges the
file, as for a tensor at the top level: the finding on the nested tensors names the device.
Each file is one torch.save wrote, its storage location then edited."""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import pytest
import torch

from ppaux.dump import inspect_paths

pytestmark = pytest.mark.torch


def _located(tmp_path: Path, location: str) -> Path:
    saved = tmp_path / "saved.pt"
    torch.save({"a": [torch.arange(3.0)]}, saved)
    with zipfile.ZipFile(saved) as archive:
        bodies = {n.split("/", 1)[1]: archive.read(n) for n in archive.namelist()}
    old = b"X" + struct.pack("<I", 3) + b"cpu"
    assert bodies["data.pkl"].count(old) == 1
    new = location.encode()
    bodies["data.pkl"] = bodies["data.pkl"].replace(old, b"X" + struct.pack("<I", len(new)) + new)
    path = tmp_path / "located.pt"
    writer = torch._C.PyTorchFileWriter(str(path))
    for name, body in bodies.items():
        if name not in ("version", ".data/serialization_id"):
            writer.write_record(name, body, len(body))
    writer.write_end_of_file()
    del writer
    return path


@pytest.mark.parametrize("location", ["hpu", "privateuseone", "cuda:0"])
def test_the_nested_tensors_finding_names_their_device(tmp_path, location):
    path = _located(tmp_path, location)
    if location.startswith("cuda") and torch.cuda.is_available():
        pytest.skip("this machine has the device")
    with pytest.raises(RuntimeError):
        torch.load(path, weights_only=False)  # this machine lacks the device
    report = inspect_paths([str(path)])
    [nested] = [f for f in report.findings if f.code == "PP110"]
    assert f"saved on {location}" in nested.message and nested.key == "a", nested


def test_tensors_on_the_cpu_name_no_device(tmp_path):
    path = _located(tmp_path, "cpu")
    torch.load(path, weights_only=False)
    [nested] = [f for f in inspect_paths([str(path)]).findings if f.code == "PP110"]
    assert "saved on" not in nested.message, nested
