"""ppaux's view of a file against torch.load(weights_only=True)'s on the same file.

Each case is a file torch writes or reads in a way that is easy to model wrongly: non-string
keys that are torch objects, a state_dict with its metadata, an int storage key, a Parameter
made with NEWOBJ, views that torch refuses, a key spelled with a look-alike letter. The expected
answer is what torch itself does with the file (or with the loaded key), never ppaux's output.
"""

from __future__ import annotations

import collections
import copyreg
import warnings
import zipfile
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.torch

from ppaux.dump.inspection import inspect_file  # noqa: E402
from ppaux.sglang.names import OUTPUT_PREFIX  # noqa: E402


def _torch_load(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.load(path, weights_only=True)


def _entries(path: Path) -> tuple[dict, list]:
    description, findings = inspect_file(str(path))
    (payload,) = description["payloads"]
    return {e["key"]: e for e in payload["entries"]}, findings


@pytest.mark.parametrize("key", [torch.device("cpu"), torch.device("cuda", 1), torch.strided])
def test_torch_object_keys_are_not_strings(tmp_path, key):
    path = tmp_path / "k.pt"
    torch.save({key: torch.zeros(2), "__msg_type__": "output"}, path)
    loaded = _torch_load(path)
    (torch_key,) = [k for k in loaded if not isinstance(k, str)]
    with pytest.raises(AttributeError) as raised:
        torch_key.startswith(OUTPUT_PREFIX)  # what sglang's pop does with every key
    entries, findings = _entries(path)
    entry = entries[repr(torch_key)]
    assert entry["key_type"] == f"torch.{type(torch_key).__name__}"
    assert entry["kind"] == "tensor" and entry["shape"] == list(loaded[torch_key].shape)
    (pp103,) = [f for f in findings if f.code == "PP103"]
    assert pp103.sglang_error == str(raised.value)


def test_state_dict_with_metadata(tmp_path):
    path = tmp_path / "sd.pt"
    module = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.LayerNorm(2))
    torch.save(module.state_dict(), path)
    loaded = _torch_load(path)
    assert hasattr(loaded, "_metadata")  # set by BUILD on the OrderedDict
    entries, findings = _entries(path)
    assert list(entries) == list(loaded)
    for key, tensor in loaded.items():
        assert entries[key]["shape"] == list(tensor.shape)
        assert entries[key]["dtype"] == str(tensor.dtype).removeprefix("torch.")
    assert [f.code for f in findings if f.severity.value == "error"] == []


def _rewrite_data_pkl(path: Path, old: bytes, new: bytes) -> None:
    with zipfile.ZipFile(path) as archive:
        records = [(info.filename, archive.read(info)) for info in archive.infolist()]
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in records:
            if name.endswith("/data.pkl"):
                assert data.count(old) == 1
                data = data.replace(old, new)
            archive.writestr(name, data)


def test_int_storage_key(tmp_path):
    path = tmp_path / "int_key.pt"
    torch.save({"a": torch.arange(3, dtype=torch.float32)}, path)
    # The storage key '0' (BINUNICODE) becomes the int 0 (BININT1): torch names the record
    # f"data/{key}" either way.
    _rewrite_data_pkl(path, b"X\x01\x00\x00\x000", b"K\x00")
    loaded = _torch_load(path)
    entries, findings = _entries(path)
    assert entries["a"]["kind"] == "tensor"
    assert entries["a"]["shape"] == list(loaded["a"].shape)
    assert [f.code for f in findings if f.code == "PP113"] == []  # the record is found


class _NewParameter:
    """Pickles as NEWOBJ of torch.nn.Parameter (copyreg.__newobj__), not _rebuild_parameter."""

    def __init__(self, data, requires_grad):
        self.data, self.requires_grad = data, requires_grad

    @property
    def __class__(self):  # pickle checks that NEWOBJ's class is the object's
        return torch.nn.Parameter

    def __reduce_ex__(self, protocol):
        return copyreg.__newobj__, (torch.nn.Parameter, self.data, self.requires_grad)


@pytest.mark.parametrize("requires_grad", [True, False])
def test_parameter_made_with_newobj_is_a_tensor(tmp_path, requires_grad):
    path = tmp_path / "p.pt"
    key = OUTPUT_PREFIX + "w"
    torch.save({key: _NewParameter(torch.zeros(3), requires_grad)}, path)
    assert b"\x81" in zipfile.ZipFile(path).read("p/data.pkl")  # NEWOBJ
    loaded = _torch_load(path)[key]
    entries, findings = _entries(path)
    assert type(loaded) is torch.nn.Parameter
    assert entries[key]["kind"] == "tensor"
    assert entries[key]["subclass"] == "torch.nn.parameter.Parameter"
    assert entries[key]["requires_grad"] == loaded.requires_grad
    assert "PP101" not in [f.code for f in findings]


class _View:
    """Pickles as _rebuild_tensor_v2 of a storage with any offset, size and stride."""

    def __init__(self, storage, offset, size, stride):
        self.args = (storage, offset, size, stride, False, collections.OrderedDict())

    def __reduce_ex__(self, protocol):
        return torch._utils._rebuild_tensor_v2, self.args


@pytest.mark.parametrize(
    "offset, size, stride",
    [
        (2, (4,), (1,)),  # runs two elements past the storage
        (0, (2, 3), (3, 1)),  # six elements of a storage of four
        (0, (2**32, 2**32), (1, 1)),  # 2**64 elements: more than int64 counts
    ],
)
def test_views_torch_refuses_get_a_finding(tmp_path, offset, size, stride):
    path = tmp_path / "v.pt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        storage = torch.zeros(4).storage()
    key = OUTPUT_PREFIX + "v"
    torch.save({key: _View(storage, offset, size, stride), "__msg_type__": "output"}, path)
    with pytest.raises(RuntimeError):
        _torch_load(path)
    _, findings = _entries(path)
    (pp116,) = [f for f in findings if f.code == "PP116"]
    assert pp116.key == key and pp116.severity.value == "error"


def test_view_inside_its_storage_gets_none(tmp_path):
    path = tmp_path / "ok.pt"
    base = torch.arange(8.0)
    torch.save({"v": base[2:6], "w": base.view(2, 4).t()}, path)
    loaded = _torch_load(path)
    entries, findings = _entries(path)
    assert entries["w"]["shape"] == list(loaded["w"].shape)
    assert [f.code for f in findings if f.code == "PP116"] == []


@pytest.mark.parametrize(
    "key",
    [
        "__sampling_\u043ebserver_output__.scores",  # Cyrillic o
        "__\uff53ampling_observer_output__.scores",  # fullwidth s
        "__sampling\u200b_observer_output__.scores",  # zero-width space
    ],
)
def test_look_alike_prefix_is_a_near_miss(tmp_path, key):
    path = tmp_path / "l.pt"
    torch.save({key: torch.zeros(2), "__msg_type__": "output"}, path)
    (loaded_key,) = [k for k in _torch_load(path) if k != "__msg_type__"]
    assert not loaded_key.startswith(OUTPUT_PREFIX)  # pop ignores it
    _, findings = _entries(path)
    # The finding names the key as the file spells it; its str() shows it escaped.
    (near,) = [f for f in findings if f.code == "PP104"]
    assert near.key == loaded_key
    escaped = "".join(c if c.isprintable() else repr(c)[1:-1] for c in loaded_key)
    assert f"[{escaped}]" in str(near)


def test_files_written_by_torch_save_are_never_refused(tmp_path):
    # The reader's refusals (PP202) never hit what torch.save writes.
    cases = {
        "plain": {"a": torch.zeros(2)},
        "nested": {"x": [torch.ones(2), {"y": torch.zeros(1, dtype=torch.int64)}]},
        "many": {f"k{i}": torch.zeros(i % 3) for i in range(200)},
    }
    for name, value in cases.items():
        path = tmp_path / f"{name}.pt"
        torch.save(value, path)
        description, findings = inspect_file(str(path))
        assert description["container"] == "zip"
        assert "PP202" not in [f.code for f in findings]
