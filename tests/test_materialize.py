"""Rebuilding tensors from the safe reader's stand-ins gives what torch.load gives, bit for bit."""

from __future__ import annotations

import pickle
import sys
import warnings
import zipfile
from pathlib import Path

import pytest
import torch
from helpers import REPO

from ppaux.dump.dumpfile import read_dump
from ppaux.dump.model import Opaque
from ppaux.dump.payload import find_payloads
from ppaux.replay.materialize import (
    DeviceError,
    MaterializeError,
    Materializer,
    resolve_device,
)
from ppaux.replay.stand_ins import StandIn

pytestmark = pytest.mark.torch

DUMPS = REPO / "fixtures" / "dumps"


def build(path: Path, device: str = "cpu"):
    dump = read_dump(path)
    with Materializer(dump, torch.device(device)) as materializer:
        return materializer.value(dump.root)


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    return (a.dtype, a.shape) == (b.dtype, b.shape) and torch.equal(
        a.detach().reshape(-1).contiguous().view(torch.uint8),
        b.detach().reshape(-1).contiguous().view(torch.uint8),
    )


def test_dtypes_views_and_strides_match_torch_load(tmp_path):
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    payload = {
        "f16": torch.tensor([1.5, -0.0, float("nan")], dtype=torch.float16),
        "bf16": torch.tensor([3.25, -2.0], dtype=torch.bfloat16),
        "bool": torch.tensor([True, False, True]),
        "c64": torch.tensor([1 + 2j, -3j], dtype=torch.complex64),
        "i8": torch.tensor([-128, 127], dtype=torch.int8),
        "u16": torch.tensor([1, 65535], dtype=torch.uint16),
        "scalar": torch.tensor(7, dtype=torch.int64),
        "base": base,
        "transpose": base.t(),
        "slice": base[1:, ::2],
        "empty": torch.empty(0, 3),
    }
    if hasattr(torch, "float8_e4m3fn"):  # torch 2.1+
        payload["f8"] = torch.tensor([0.5, -1.0]).to(torch.float8_e4m3fn)
    path = tmp_path / "dtypes.pt"
    torch.save(payload, path)
    expected = torch.load(path, weights_only=True)
    got = build(path)
    assert list(got) == list(expected)
    for key, tensor in expected.items():
        assert same_bits(got[key], tensor), key
        assert got[key].stride() == tensor.stride(), key
        assert got[key].storage_offset() == tensor.storage_offset(), key
    # Views of one storage share one buffer, as after torch.load.
    assert got["transpose"].untyped_storage().data_ptr() == got["base"].untyped_storage().data_ptr()
    assert got["slice"].untyped_storage().data_ptr() == got["base"].untyped_storage().data_ptr()


@pytest.mark.parametrize(
    "name",
    [
        "clean_output.pt",
        "cuda1_output.pt",
        "deflated_datapkl.pt",
        "aux_non_contiguous.pt",
        "aux_sparse.pt",
        "aux_quantized.pt",
        "aux_parameter.pt",
        "aux_empty_tensor.pt",
        "pp_proxy.pt",
    ],
)
def test_fixtures_match_torch_load(name):
    sys.path.insert(0, str(REPO / "fixtures"))  # the proxy fixture's class, for torch.load
    try:
        with warnings.catch_warnings():
            # torch.load itself warns about TypedStorage on quantized tensors.
            warnings.simplefilter("ignore", UserWarning)
            expected = torch.load(DUMPS / name, map_location="cpu", weights_only=False)
    finally:
        sys.path.remove(str(REPO / "fixtures"))
    dump = read_dump(DUMPS / name)
    (payload,) = find_payloads(dump)
    with Materializer(dump, torch.device("cpu")) as materializer:
        got = materializer.value(payload.mapping)
    if name == "pp_proxy.pt":
        assert isinstance(dump.root, Opaque)  # the object itself stays a placeholder
        expected = expected.tensors
    for key, tensor in expected.items():
        value = got[key]
        if not isinstance(tensor, torch.Tensor):
            assert value == tensor
            continue
        assert type(value) is type(tensor), key
        assert value.requires_grad == tensor.requires_grad
        if tensor.is_sparse:
            assert same_bits(value.to_dense(), tensor.to_dense())
        elif tensor.is_quantized:
            assert (value.q_scale(), value.q_zero_point()) == (
                tensor.q_scale(),
                tensor.q_zero_point(),
            )
            assert same_bits(value.int_repr(), tensor.int_repr())
        else:
            assert same_bits(value, tensor) and value.stride() == tensor.stride()


def test_plain_pickle_storages_come_from_the_pickle():
    expected = pickle.loads((DUMPS / "plain_pickle.pkl").read_bytes())  # a trusted fixture
    got = build(DUMPS / "plain_pickle.pkl")
    for key, tensor in expected.items():
        if isinstance(tensor, torch.Tensor):
            assert same_bits(got[key], tensor)
        else:
            assert got[key] == tensor


def test_placeholders_stay_non_tensors():
    got = build(DUMPS / "aux_custom_class.pt")
    value = got["__sampling_observer_output__.scores"]
    assert isinstance(value, StandIn) and isinstance(value.source, Opaque)
    assert type(value).__name__ == "SamplingScores"  # named like the class, never imported
    assert value.source.name == "ppaux_fixture_types.SamplingScores"
    assert not torch.is_tensor(value)
    assert pickle.loads(pickle.dumps(value)).source.name == value.source.name
    listed = build(DUMPS / "aux_list_of_tensors.pt")["__sampling_observer_output__.scores"]
    assert [t.tolist() for t in listed] == [[0.25, 0.75], [1.25, 1.75]]


def test_meta_tensor_stays_on_meta_and_saved_cuda_lands_on_the_device():
    meta = build(DUMPS / "aux_meta.pt")["__sampling_observer_output__.scores"]
    assert (meta.device.type, tuple(meta.shape), meta.dtype) == ("meta", (2, 4), torch.float32)
    moved = build(DUMPS / "cuda1_output.pt")
    assert {t.device.type for t in moved.values() if isinstance(t, torch.Tensor)} == {"cpu"}


def test_nested_csr_and_per_channel_tensors(tmp_path):
    path = tmp_path / "exotic.pt"
    payload = {
        "csr": torch.tensor([[0.0, 2.0], [3.0, 0.0]]).to_sparse_csr(),
        "qchannel": torch.quantize_per_channel(
            torch.tensor([[1.0, 2.0], [3.0, 4.0]]),
            torch.tensor([0.5, 0.25]),
            torch.tensor([0, 1]),
            0,
            torch.qint8,
        ),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # nested tensors are a prototype API
        payload["nested"] = torch.nested.nested_tensor([torch.ones(2), torch.arange(3.0)])
    torch.save(payload, path)
    got = build(path)
    assert same_bits(got["csr"].to_dense(), payload["csr"].to_dense())
    assert got["csr"].layout == torch.sparse_csr
    assert same_bits(got["qchannel"].int_repr(), payload["qchannel"].int_repr())
    assert got["qchannel"].q_per_channel_scales().tolist() == [0.5, 0.25]
    assert [t.tolist() for t in got["nested"].unbind()] == [[1.0, 1.0], [0.0, 1.0, 2.0]]


def test_big_endian_files_are_swapped(tmp_path):
    little = tmp_path / "little.pt"
    torch.save({"x": torch.tensor([1.5, -2.25]), "n": torch.tensor([1, 256])}, little)
    big = tmp_path / "big.pt"
    with zipfile.ZipFile(little) as source, zipfile.ZipFile(big, "w", zipfile.ZIP_STORED) as out:
        for info in source.infolist():
            data = source.read(info)
            if info.filename.endswith("/byteorder"):
                data = b"big"
            elif "/data/" in info.filename and not info.filename.endswith("serialization_id"):
                size = 4 if info.filename.endswith("/0") else 8
                data = b"".join(data[i : i + size][::-1] for i in range(0, len(data), size))
            out.writestr(info, data)
    expected = torch.load(big, weights_only=True)
    got = build(big)
    assert same_bits(got["x"], expected["x"]) and same_bits(got["n"], expected["n"])
    assert got["x"].tolist() == [1.5, -2.25]


def test_views_past_the_storage_are_refused(tmp_path):
    path = tmp_path / "short.pt"
    torch.save({"x": torch.arange(4.0)}, path)
    dump = read_dump(path)
    dump.root["x"].shape = (8,)
    dump.root["x"].stride = (1,)
    with (
        Materializer(dump, torch.device("cpu")) as materializer,
        pytest.raises(MaterializeError) as caught,
    ):
        materializer.value(dump.root)
    assert (
        caught.value.reason == "cannot rebuild tensor ['x']: it views element 7 of a storage "
        "of 4 elements"
    )


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a host without CUDA")
def test_resolve_device_without_cuda():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto") == torch.device("cpu")
    with pytest.raises(DeviceError) as caught:
        resolve_device("cuda:1")
    assert caught.value.value == "cuda:1"
    assert caught.value.reason.startswith("CUDA is not available here (")
