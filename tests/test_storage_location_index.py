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
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.dump import inspect_paths
from ppaux.dump.device_index import device_refusal, parsed_index

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
    assert [device_refusal(f"cuda:{n}") for n in (0, 7, 10, 127)] == [None] * 4


_BACKENDS = ("cuda", "hpu", "xpu", "mtia", "privateuseone")


@settings(max_examples=200, deadline=None)
@given(
    name=st.sampled_from(_BACKENDS),
    digits=st.integers(0, 2**40).map(str) | st.from_regex(r"[0-9]{1,12}", fullmatch=True),
)
def test_the_parsed_index_is_torch_device_s(name: str, digits: str) -> None:
    index = parsed_index(digits)
    try:
        device = torch.device(f"{name}:{digits}")
    except RuntimeError as exc:
        assert isinstance(index, str) and index in str(exc), (digits, index, exc)
    else:
        assert index == device.index and device.type == name, (digits, index, device)


@pytest.mark.parametrize(
    ("location", "read"),
    [
        ("cuda:256", "cuda:0"),
        ("cuda:300", "cuda:44"),
        ("mtia:300", "mtia:44"),
        ("cuda:255", "cuda without an index"),
    ],
)
def test_an_index_torch_reads_as_another_is_not_as_torch_save_writes_it(
    tmp_path: Path, location: str, read: str
) -> None:
    path = _located(tmp_path, location)
    digits = location.partition(":")[2]
    parsed = torch.device(location)
    assert parsed.index != int(digits)  # torch reads another device
    findings = inspect_paths([str(path)]).findings
    assert [(f.code, f.severity.value) for f in findings] == [("PP118", "error")], findings
    assert read in findings[0].message and location in findings[0].message


def test_a_negative_index_is_refused_by_each_backend_that_checks_it() -> None:
    for name in ("cuda", "xpu", "mtia"):
        index = getattr(torch, name)._utils._get_device_index(f"{name}:200", True)
        with pytest.raises(RuntimeError, match="Device index must not be negative"):
            torch.device(name, index)
        assert device_refusal(f"{name}:200") == "Device index must not be negative"


def _legacy_located(tmp_path: Path, location: str) -> Path:
    """The legacy format (``_use_new_zipfile_serialization=False``) with the location edited."""
    saved = tmp_path / "saved_legacy.pt"
    torch.save({"x": torch.arange(3.0)}, saved, _use_new_zipfile_serialization=False)
    data = saved.read_bytes()
    old = b"X" + struct.pack("<I", 3) + b"cpu"
    assert data.count(old) == 1
    new = location.encode()
    path = tmp_path / "located_legacy.pt"
    path.write_bytes(data.replace(old, b"X" + struct.pack("<I", len(new)) + new))
    return path


@pytest.mark.parametrize(
    ("location", "reason"),
    [
        ("cuda:01", "Invalid device string: 'cuda:01'"),
        ("cuda:200", "Device index must not be negative"),
        ("cuda:99999999999", "Could not parse device index '99999999999'"),
    ],
)
def test_the_legacy_format_refuses_a_device_index_as_the_zip_format_does(
    tmp_path: Path, sandbox, location: str, reason: str
) -> None:
    path = _legacy_located(tmp_path, location)
    answer = sandbox.load(path)
    assert answer["outcome"] == "refused" and reason in answer["error"], answer
    findings = inspect_paths([str(path)]).findings
    assert [(f.code, f.severity.value) for f in findings] == [("PP117", "error")], findings
    assert reason in findings[0].message and location in findings[0].message


@pytest.mark.parametrize("legacy", [False, True])
@pytest.mark.parametrize(
    ("location", "read"),
    [
        ("cuda:256", "cuda:0"),
        ("hpu:200", "hpu:-56, a negative index"),
        ("privateuseone:128", "privateuseone:-128, a negative index"),
    ],
)
def test_an_index_read_as_another_device_is_an_error_in_either_format(
    tmp_path: Path, legacy: bool, location: str, read: str
) -> None:
    """torch reads these indexes as another device (hpu and privateuseone take a negative
    one, which names no device, where cuda refuses it): never as torch.save writes them."""
    path = (_legacy_located if legacy else _located)(tmp_path, location)
    assert str(torch.device(location)) == read.partition(",")[0]
    findings = inspect_paths([str(path)]).findings
    assert [(f.code, f.severity.value) for f in findings] == [("PP118", "error")], findings
    assert read in findings[0].message and location in findings[0].message
