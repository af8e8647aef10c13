"""A storage location whose device index torch's device-string parser refuses, on any machine:
``cuda:00``, ``cuda:01`` (a leading zero), ``cuda:99999999999`` (past a C int), ``cuda:128``
(cut to 8 signed bits, negative). torch.save writes ``str(storage.device)``, an index in
canonical decimal, so these are never its output; torch.load refuses each in both modes, and
ppaux says PP117 with torch's reason. The files are torch.save's, the location edited in
data.pkl and the records written again by torch's own stream writer."""

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
    torch.save({"x": torch.arange(3.0)}, saved)
    with zipfile.ZipFile(saved) as archive:
        bodies = {n.split("/", 1)[1]: archive.read(n) for n in archive.namelist()}
    old = b"X" + struct.pack("<I", 3) + b"cpu"
    assert bodies["data.pkl"].count(old) == 1
    new = location.encode()
    bodies["data.pkl"] = bodies["data.pkl"].replace(old, b"X" + struct.pack("<I", len(new)) + new)
    path = tmp_path / "located.pt"
    writer = torch._C.PyTorchFileWriter(str(path))
    for name in ["data.pkl", ".format_version", ".storage_alignment", "byteorder", "data/0"]:
        writer.write_record(name, bodies[name], len(bodies[name]))
    writer.write_end_of_file()
    del writer
    return path


@pytest.mark.parametrize(
    ("location", "reason"),
    [
        ("cuda:00", "Invalid device string: 'cuda:00'"),
        ("cuda:01", "Invalid device string: 'cuda:01'"),
        ("xpu:01", "Invalid device string: 'xpu:01'"),
        ("cuda:128", "Device index must not be negative"),
        ("cuda:200", "Device index must not be negative"),
        ("cuda:99999999999", "Could not parse device index '99999999999'"),
    ],
)
def test_a_device_index_torch_cannot_parse_is_its_refusal(
    tmp_path: Path, sandbox, location: str, reason: str
) -> None:
    path = _located(tmp_path, location)
    answer = sandbox.load(path)
    assert answer["outcome"] == "refused" and reason in answer["error"], answer
    findings = inspect_paths([str(path)]).findings
    assert [(f.code, f.severity.value) for f in findings] == [("PP117", "error")], findings
    assert reason in findings[0].message and location in findings[0].message


def test_a_canonical_index_is_read() -> None:
    """The same edit to an index torch.save writes (``cuda:7``) is no refusal of the file's
    (whether the machine has that device is not the file's matter)."""
    from ppaux.dump.torch_reading import device_refusal

    assert [device_refusal(f"cuda:{n}") for n in (0, 7, 10, 127)] == [None] * 4
