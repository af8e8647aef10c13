"""The dump reader on real torch.save files: exact descriptions, no torch needed to read them."""

from __future__ import annotations

import io
import os
import pickle
import zipfile
from pathlib import Path

import pytest

from ppaux.dump.dumpfile import read_dump, read_dump_bytes
from ppaux.dump.model import Opaque, TensorRef
from ppaux.errors import DumpError, LimitExceeded, TorchRefuses
from ppaux.limits import Limits


@pytest.fixture
def torch():
    """torch, for the tests marked as needing it to make their dumps (the reader never does)."""
    import torch

    return torch


def save(tmp_path, obj, name="dump.pt", **kw):
    import torch

    path = tmp_path / name
    torch.save(obj, path, **kw)
    return str(path)


@pytest.mark.torch
def test_record_prefix_is_the_file_stem_or_archive(tmp_path, torch):
    dump = read_dump(save(tmp_path, {"a": torch.zeros(2)}, "my-dump.pt"))
    assert dump.container == "zip" and dump.record_prefix == "my-dump"
    buffer = io.BytesIO()
    torch.save({"a": torch.zeros(2)}, buffer)
    assert read_dump_bytes("mem", buffer.getvalue()).record_prefix == "archive"


@pytest.mark.torch
def test_dense_tensors_views_and_dtypes(tmp_path, torch):
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    obj = {
        "base": base,
        "view": base[1:, 1:3],
        "t": base.t(),
        "bf16": torch.ones(2, 5, dtype=torch.bfloat16),
        "ids": torch.tensor([1, 2, 3]),
        "grad": torch.ones(3, requires_grad=True),
        "f8": torch.zeros(4, dtype=torch.float8_e4m3fn),
    }
    dump = read_dump(save(tmp_path, obj))
    root = dump.root
    assert list(root) == list(obj)
    described = {
        k: (
            v.dtype,
            v.shape,
            v.stride,
            v.offset,
            v.device,
            v.storage.key,
            v.nbytes,
            v.requires_grad,
            v.contiguous,
        )
        for k, v in root.items()
    }
    assert described == {
        "base": ("float32", (3, 4), (4, 1), 0, "cpu", "0", 48, False, True),
        "view": ("float32", (2, 2), (4, 1), 5, "cpu", "0", 16, False, False),
        "t": ("float32", (4, 3), (1, 4), 0, "cpu", "0", 48, False, False),
        "bf16": ("bfloat16", (2, 5), (5, 1), 0, "cpu", "1", 20, False, True),
        "ids": ("int64", (3,), (1,), 0, "cpu", "2", 24, False, True),
        "grad": ("float32", (3,), (1,), 0, "cpu", "3", 12, True, True),
        "f8": ("float8_e4m3fn", (4,), (1,), 0, "cpu", "4", 4, False, True),
    }
    assert root["base"].storage is root["view"].storage  # views share one storage record
    assert {s.record for s in dump.storages} == {f"dump/data/{i}" for i in range(5)}
    assert all(s.record_size == s.nbytes for s in dump.storages)
    assert all(allowed for allowed in dump.globals_seen.values())


@pytest.mark.torch
def test_special_tensor_kinds(tmp_path, torch):
    sparse = torch.sparse_coo_tensor(torch.tensor([[0, 1]]), torch.tensor([1.0, 2.0]), (4,))
    csr = torch.eye(3).to_sparse_csr()
    quant = torch.quantize_per_tensor(torch.ones(3), 0.5, 0, torch.qint8)
    obj = {
        "param": torch.nn.Parameter(torch.ones(2)),
        "sparse": sparse,
        "csr": csr,
        "quant": quant,
        "meta": torch.empty(2, 3, device="meta"),
    }
    root = read_dump(save(tmp_path, obj)).root
    assert (root["param"].subclass, root["param"].requires_grad) == (
        "torch.nn.parameter.Parameter",
        True,
    )
    assert (root["sparse"].kind, root["sparse"].layout, root["sparse"].shape) == (
        "sparse",
        "torch.sparse_coo",
        (4,),
    )
    assert (root["csr"].kind, root["csr"].layout, root["csr"].shape) == (
        "sparse",
        "torch.sparse_csr",
        (3, 3),
    )
    assert (root["quant"].kind, root["quant"].dtype) == ("quantized", "qint8")
    assert (root["meta"].kind, root["meta"].device, root["meta"].shape) == ("meta", "meta", (2, 3))


@pytest.mark.torch
def test_device_is_kept_as_saved(tmp_path, torch):
    from tensor_tags import saved_as

    with saved_as("cuda:1"):
        path = save(tmp_path, {"x": torch.zeros(2), "y": torch.ones(1)})
    root = read_dump(path).root
    assert [t.device for t in root.values()] == ["cuda:1", "cuda:1"]


@pytest.mark.torch
def test_plain_pickle_with_nested_legacy_storage(tmp_path, torch):
    path = tmp_path / "plain.pkl"
    path.write_bytes(pickle.dumps({"x": torch.arange(3), "l": [1.0, None]}))
    dump = read_dump(str(path))
    x = dump.root["x"]
    assert dump.container == "pickle"
    assert isinstance(x, TensorRef) and (x.dtype, x.shape, x.device) == ("int64", (3,), "cpu")
    assert dump.root["l"] == [1.0, None]
    assert dump.globals_seen["torch.storage._load_from_bytes"] is True


def _nested_parts(data: bytes) -> tuple[int, int, list[bytes], bytes]:
    """Where a plain pickle holds a storage's nested legacy stream, its five pickles and the
    storage records after them."""
    import pickletools
    import struct

    start = data.index(b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19.")
    (size,) = struct.unpack("<I", data[start - 4 : start])
    inner = data[start : start + size]
    parts, pos = [], 0
    for _ in range(5):
        *_, last = pickletools.genops(inner[pos:])
        end = pos + last[2] + 1
        parts.append(inner[pos:end])
        pos = end
    return start, size, parts, inner[pos:]


def _with_inner(data: bytes, start: int, size: int, inner: bytes) -> bytes:
    import struct

    return data[: start - 4] + struct.pack("<I", len(inner)) + inner + data[start + size :]


@pytest.mark.torch
@pytest.mark.parametrize("edit", ["cut", "count", "location", "unlisted", "unknown key"])
def test_a_nested_stream_torch_would_not_read_as_written_is_never_clean(tmp_path, torch, edit):
    import struct

    from ppaux.dump.inspection import inspect_file
    from ppaux.errors import ReadMismatch

    data = pickle.dumps({"a": torch.arange(4.0)}, protocol=3)
    start, size, parts, records = _nested_parts(data)
    head = b"".join(parts[:4])
    inner = {
        "cut": b"".join(parts) + records[:-4],
        "count": b"".join(parts) + struct.pack("<q", 5) + records[8:],
        "location": b"".join(parts[:3])
        + parts[3].replace(b"X\x03\x00\x00\x00cpu", b"X\x03\x00\x00\x00foo")
        + parts[4]
        + records,
        "unlisted": head + pickle.dumps([], protocol=2),
        "unknown key": head + pickle.dumps([*pickle.loads(parts[4]), "7"], protocol=2) + records,
    }[edit]
    path = tmp_path / "edited.pkl"
    path.write_bytes(_with_inner(data, start, size, inner))
    if edit == "unlisted":
        # torch reads it, the tensor's memory left as it was allocated
        assert pickle.loads(path.read_bytes())["a"].shape == (4,)
    else:
        with pytest.raises(Exception):  # noqa: B017 - torch's refusals differ by edit
            pickle.loads(path.read_bytes())
    try:
        _, findings = inspect_file(str(path))
        codes = {f.code for f in findings}
    except ReadMismatch as exc:
        codes = {exc.code}
    assert codes == ({"PP202"} if edit == "unlisted" else {"PP117"})


class Custom:
    def __init__(self):
        import torch

        self.tensors = {"hidden_states": torch.zeros(2)}


@pytest.mark.torch
def test_custom_objects_are_described_not_imported(tmp_path):
    path = save(tmp_path, {"obj": Custom()})
    dump = read_dump(path)
    obj = dump.root["obj"]
    assert isinstance(obj, Opaque)
    assert obj.name == f"{__name__}.Custom"
    assert isinstance(obj.state["tensors"]["hidden_states"], TensorRef)
    assert dump.globals_seen[f"{__name__}.Custom"] is False


@pytest.mark.torch
def test_file_is_not_modified(tmp_path, torch):
    path = save(tmp_path, {"a": torch.zeros(3)})
    before = (os.stat(path).st_mtime_ns, Path(path).read_bytes())
    read_dump(path)
    assert (os.stat(path).st_mtime_ns, Path(path).read_bytes()) == before


def _zip(tmp_path, name, records: dict[str, bytes], compress=zipfile.ZIP_STORED):
    path = tmp_path / name
    with zipfile.ZipFile(path, "w", compression=compress) as archive:
        for record, data in records.items():
            archive.writestr(record, data)
    return str(path)


@pytest.mark.torch
def test_bad_inputs_have_one_clear_reason(tmp_path, torch):
    good = save(tmp_path, {"a": torch.zeros(64)})
    data = Path(good).read_bytes()
    cases = {}
    (tmp_path / "empty.pt").write_bytes(b"")
    cases["empty.pt"] = "empty file"
    (tmp_path / "half.pt").write_bytes(data[: len(data) // 2])
    cases["half.pt"] = "truncated or corrupt zip file (File is not a zip file)"
    (tmp_path / "text.pt").write_bytes(b"hello world\n")
    cases["text.pt"] = (
        "not a torch.save zip or a pickle file (malformed pickle at byte 0: "
        "memo entry 101 was never stored); it is text: if it is a server log, triage reads it "
        f"(ppaux triage {tmp_path / 'text.pt'})"
    )
    _zip(tmp_path, "nopkl.pt", {"x/version": b"3"})
    cases["nopkl.pt"] = "zip file without a data.pkl record: not a torch.save file"
    _zip(tmp_path, "two.pt", {"a/data.pkl": b"N.", "b/data.pkl": b"N."})
    # torch reads every record from the first record's folder and refuses any other.
    cases["two.pt"] = (
        "torch.load refuses the file: its zip reader finds record b/data.pkl outside the "
        "folder a/ of the first record, as it lists names (cut to 511 bytes): file in archive "
        "is not in a subdirectory"
    )
    for name, reason in cases.items():
        with pytest.raises(DumpError) as info:
            read_dump(str(tmp_path / name))
        assert info.value.reason == reason, name
    with pytest.raises(DumpError, match=r": no such file$"):
        read_dump(str(tmp_path / "missing.pt"))
    with pytest.raises(DumpError, match=r": is a directory, not a dump file$"):
        read_dump(str(tmp_path))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(DumpError, match=r"is not a regular file \(a FIFO, socket or device\)$"):
        read_dump(str(fifo))


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
@pytest.mark.torch
def test_permission_denied(tmp_path, torch):
    path = save(tmp_path, {"a": torch.zeros(1)})
    os.chmod(path, 0)
    with pytest.raises(DumpError, match="permission denied"):
        read_dump(path)


@pytest.mark.torch
def test_deflated_data_pkl_is_read_and_bombs_are_stopped(tmp_path, torch):
    buffer = io.BytesIO()
    torch.save({"a": torch.zeros(2)}, buffer)
    source = zipfile.ZipFile(io.BytesIO(buffer.getvalue()))
    records = {n: source.read(n) for n in source.namelist()}
    path = _zip(tmp_path, "deflated.pt", records, zipfile.ZIP_DEFLATED)
    assert read_dump(path).root["a"].shape == (2,)
    bomb = _zip(
        tmp_path,
        "bomb.pt",
        {"b/data.pkl": b"\x80\x02N" + b"0N" * 200_000 + b"."},
        zipfile.ZIP_DEFLATED,
    )
    with pytest.raises(LimitExceeded) as info:
        read_dump(bomb, Limits(max_pickle_bytes=100_000))
    assert info.value.reason == (
        "b/data.pkl declares 400004 bytes (limit max_pickle_bytes=100000 reached)"
    )


@pytest.mark.torch
def test_missing_storage_record_is_noted(tmp_path, torch):
    buffer = io.BytesIO()
    torch.save({"a": torch.zeros(2)}, buffer)
    source = zipfile.ZipFile(io.BytesIO(buffer.getvalue()))
    records = {n: source.read(n) for n in source.namelist() if not n.endswith("data/0")}
    dump = read_dump(_zip(tmp_path, "missing.pt", records))
    (storage,) = dump.storages
    assert (storage.record, storage.record_size) == ("archive/data/0", None)


def test_size_and_stride_of_different_lengths_are_refused(tmp_path):
    pickle_bytes = (
        b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n(("
        b"X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x04tQ"
        b"K\x00(K\x02K\x02t(K\x01t\x89ccollections\nOrderedDict\n)RtR."
    )
    path = _zip(
        tmp_path, "bad.pt", {"archive/data.pkl": pickle_bytes, "archive/data/0": b"\0" * 16}
    )
    # Tensor.set_ refuses it: torch.load does, in either mode (PP117).
    with pytest.raises(TorchRefuses) as info:
        read_dump(path)
    assert "unequal size length (2) and stride length (1)" in info.value.reason


def _three_dim_tensor() -> bytes:
    # A float tensor of size (1, 1, 1) and stride (1, 1, 1) over a storage of four floats.
    return (
        b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n(("
        b"X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x04tQ"
        b"K\x00(K\x01K\x01K\x01t(K\x01K\x01K\x01t\x89ccollections\nOrderedDict\n)RtR."
    )


@pytest.mark.parametrize("max_dims", [1, 2, 3, 4])
def test_dimensions_past_max_dims_are_refused_and_the_limit_raises(tmp_path, max_dims):
    records = {
        "archive/data.pkl": _three_dim_tensor(),
        "archive/data/0": b"\0" * 16,
        "archive/version": b"3\n",
    }
    path = _zip(tmp_path, "dims.pt", records)
    if max_dims >= 3:
        dump = read_dump(path, limits=Limits(max_dims=max_dims))
        assert isinstance(dump.root, TensorRef) and dump.root.shape == (1, 1, 1)
    else:
        with pytest.raises(LimitExceeded) as info:
            read_dump(path, limits=Limits(max_dims=max_dims))
        assert (info.value.limit, info.value.value) == ("max_dims", max_dims)
        assert "tensor size has 3 dimensions" in info.value.reason
