"""The zip64 end record and its locator as torch's zip reader (miniz 3.0.2,
``mz_zip_reader_read_central_dir``) takes them, each field edited in a file torch.save wrote:
a zip64 end record whose size field is under 44, or a locator counting other than 1 disk, is
refused by torch.load in both modes, so ppaux says PP117 with torch's reason (exit 1), not a
warning; a locator naming another disk for the zip64 end record, which miniz never reads (and
Python's zipfile refuses), is read as torch reads it and reported as not as torch.save writes
it (PP118); so is a zip64 directory size larger than the directory within the file, and a
comment length past the file's end, which both of torch.load's readers read as written.
torch.load runs in the sandbox (weights_only=False) or in a child (its default reader), never in
this process."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest
import torch
from helpers import REPO
from torch_children import Children

from ppaux.dump import inspect_paths

sys.path.insert(0, str(REPO / "fuzz"))

import torch_differential as harness

pytestmark = pytest.mark.torch


def _edited(tmp_path: Path, signature: bytes, offset: int, fmt: str, value: int) -> Path:
    """A file torch.save wrote, one field of an end record set to ``value``."""
    path = tmp_path / "edited.pt"
    torch.save({"a": torch.arange(3.0)}, path)
    data = bytearray(path.read_bytes())
    at = data.rfind(signature)
    assert at > 0
    struct.pack_into(fmt, data, at + offset, value)
    path.write_bytes(bytes(data))
    return path


def _codes(path: Path) -> dict[str, str]:
    report = inspect_paths([str(path)])
    return {f.code: f"{f.severity.value}: {f.message}" for f in report.findings}


@pytest.mark.parametrize(
    ("signature", "offset", "fmt", "value", "reason"),
    [
        (b"PK\x06\x06", 4, "<Q", 0, "invalid header or archive is corrupted"),
        (b"PK\x06\x06", 4, "<Q", 43, "invalid header or archive is corrupted"),
        (b"PK\x06\x07", 16, "<L", 0, "unsupported multidisk archive"),
        (b"PK\x06\x07", 16, "<L", 2, "unsupported multidisk archive"),
    ],
    ids=["size-0", "size-43", "disks-0", "disks-2"],
)
def test_an_end_record_field_torch_refuses_is_its_refusal(
    tmp_path, sandbox, signature, offset, fmt, value, reason
):
    path = _edited(tmp_path, signature, offset, fmt, value)
    answer = sandbox.load(path)
    assert answer["outcome"] == "refused" and reason in answer["error"], answer
    found = _codes(path)
    assert set(found) == {"PP117"}, found
    assert found["PP117"].startswith("error:") and reason in found["PP117"], found


@pytest.mark.parametrize("value", [1, 2, 0xFFFFFFFF])
def test_the_locators_disk_field_is_read_as_torch_reads_it(tmp_path, sandbox, value):
    path = _edited(tmp_path, b"PK\x06\x07", 4, "<L", value)
    answer = sandbox.load(path)
    assert answer["outcome"] == "loaded", answer
    ours = harness.ppaux_view(str(path))
    assert ours.codes == {"PP118"} and ours.value == answer["value"], ours
    found = _codes(path)
    assert found["PP118"].startswith("warning:") and "end records" in found["PP118"], found


@pytest.mark.parametrize("value", [44, 45, 2**63])
def test_a_zip64_record_size_of_44_or_more_is_read(tmp_path, sandbox, value):
    path = _edited(tmp_path, b"PK\x06\x06", 4, "<Q", value)
    answer = sandbox.load(path)
    assert answer["outcome"] == "loaded", answer
    ours = harness.ppaux_view(str(path))
    assert ours.value == answer["value"] and "PP117" not in ours.codes, ours


def _default_reader(path: Path, children: Children) -> str:
    """What torch.load's default reader (weights_only=True) reads of 'a', in a child."""
    code = "import sys, torch\nprint(torch.load(sys.argv[1], weights_only=True)['a'].tolist())"
    done = children.run(code, str(path), timeout=120)
    return done.stdout.strip() if done.returncode == 0 else f"refused: {done.stderr[-200:]}"


# torch.save's writer (miniz, torch 2.13) writes the zip64 end record's directory size as the
# directory's bytes and an end record without comment: 2 and 3 records of "a" as written.
@pytest.mark.parametrize(
    ("signature", "offset", "fmt", "change"),
    [
        (b"PK\x06\x06", 40, "<Q", 1),
        (b"PK\x06\x06", 40, "<Q", 22),
        (b"PK\x05\x06", 20, "<H", 1),
        (b"PK\x05\x06", 20, "<H", 0xFFFF),
    ],
    ids=["directory-size+1", "directory-size+22", "comment-length-1", "comment-length-65535"],
)
def test_end_record_fields_torch_reads_alike_are_outside_the_grammar(
    tmp_path, sandbox, torch_children, signature, offset, fmt, change
):
    # miniz reads the directory from its offset and walks the count of entries in a size that
    # ends within the file; zipfile cuts a comment at the file's end: both read as written.
    path = tmp_path / "written.pt"
    torch.save({"a": torch.arange(3.0)}, path)
    written = struct.unpack_from(
        fmt, path.read_bytes(), path.read_bytes().rfind(signature) + offset
    )
    assert written == (0,) or signature == b"PK\x06\x06"
    path = _edited(tmp_path, signature, offset, fmt, written[0] + change)
    answer = sandbox.load(path)
    assert answer["outcome"] == "loaded", answer
    assert _default_reader(path, torch_children) == "[0.0, 1.0, 2.0]"
    ours = harness.ppaux_view(str(path))
    assert ours.codes == {"PP118"} and ours.value == answer["value"], ours
    found = _codes(path)
    assert set(found) == {"PP118"}, found
    assert found["PP118"].startswith("warning:") and "end records" in found["PP118"], found


# torch.save writes the directory's size in the zip64 end record; miniz 3.0.2 refuses a size
# past 4 GiB ("unsupported central directory size"), under 46 bytes an entry, one that runs past
# the file's end, or one the entries it walks do not fit in ("invalid header"): -1 as an
# unsigned 32-bit or 64-bit number, or one byte short.
@pytest.mark.parametrize(
    ("objects", "size", "reason"),
    [
        (1, lambda written: written + 100, "invalid header or archive is corrupted"),
        (1, lambda written: written + 1000, "invalid header or archive is corrupted"),
        (1, lambda written: 0xFFFFFFFF, "invalid header or archive is corrupted"),
        (3, lambda written: 0xFFFFFFFF, "invalid header or archive is corrupted"),
        (1, lambda written: 2**64 - 1, "unsupported central directory size"),
        (1, lambda written: written - 1, "invalid header or archive is corrupted"),
        (3, lambda written: written - 1, "invalid header or archive is corrupted"),
        (3, lambda written: written - 60, "invalid header or archive is corrupted"),
        (1, lambda written: 45, "invalid header or archive is corrupted"),
    ],
    ids=["+100", "+1000", "2**32-1", "2**32-1-more", "2**64-1", "-1", "-1-more", "-60", "45"],
)
def test_a_directory_size_torch_refuses_is_its_refusal(
    tmp_path, sandbox, torch_children, objects, size, reason
):
    path = tmp_path / "written.pt"
    torch.save(
        {"a": torch.arange(3.0), **{f"b{i}": torch.ones(i) for i in range(1, objects)}}, path
    )
    data = bytearray(path.read_bytes())
    at = data.rfind(b"PK\x06\x06") + 40
    (written,) = struct.unpack_from("<Q", data, at)
    struct.pack_into("<Q", data, at, size(written))
    path.write_bytes(bytes(data))
    answer = sandbox.load(path)
    assert answer["outcome"] == "refused" and reason in answer["error"], answer
    assert _default_reader(path, torch_children).startswith("refused")
    found = _codes(path)
    assert set(found) == {"PP117"}, found
    assert found["PP117"].startswith("error:") and reason in found["PP117"], found
