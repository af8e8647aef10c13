"""tensorize writes every tensor it keeps as torch reads it from the input, and converts numpy
arrays from the bytes numpy pickled.

Kept tensors are compared with ``torch.load`` of the input (files torch.save wrote here, then
some rewritten to declare big-endian data): dtype, shape, strides, conjugate and negative bits,
requires_grad, class, device and every byte. numpy is not needed: arrays are pickled here opcode
by opcode, as numpy writes them, from numbers packed with ``struct``, and the tensors tensorize
makes are compared with those numbers.
"""

from __future__ import annotations

import struct
import sys
import zipfile
from pathlib import Path

import pytest
from helpers import REPO

from ppaux.fix import tensorize_dump

sys.path.insert(0, str(REPO / "fixtures"))

from make_adversarial import (
    BUILD,
    NEWFALSE,
    NEWTRUE,
    NONE,
    by,
    call,
    dct,
    g,
    i,
    message,
    pickle_of,
    s,
    torch_zip,
    tup,
)

pytestmark = pytest.mark.torch

P = "__sampling_observer_output__."


def _kept(torch):
    """Tensors of every shape of view torch saves with its own metadata."""
    complex_base = torch.tensor([1 + 2j, 3 - 4j, -5 + 0.5j], dtype=torch.complex64)
    grid = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    return {
        "conj": complex_base.conj(),
        "conj128": torch.tensor([1 - 1j], dtype=torch.complex128).conj(),
        "neg": torch._neg_view(torch.tensor([1.0, -2.0, float("nan")])),
        "transposed": grid.t(),
        "sliced": grid[1:, 2:],
        "bf16": torch.tensor([1.5, -2.25, 3e38], dtype=torch.bfloat16),
        "f16": torch.tensor([65504.0, -0.0], dtype=torch.float16),
        "bool": torch.tensor([True, False, True]),
        "i8": torch.tensor([-3, 4], dtype=torch.int8),
        "u8": torch.tensor([0, 255], dtype=torch.uint8),
        "i64": torch.tensor([-(2**63), 2**63 - 1]),
        "param": torch.nn.Parameter(torch.ones(2)),
        "grad": torch.ones(2, requires_grad=True),
        "empty": torch.empty(0, 3),
        "scalar": torch.tensor(7.0),
        "next_token_ids": torch.tensor([318, 262]),
    }


def _same(torch, a, b) -> list[str]:
    """What differs between two tensors, as torch reads them (empty when nothing does)."""
    facts = {
        "class": (type(a), type(b)),
        "dtype": (a.dtype, b.dtype),
        "shape": (a.shape, b.shape),
        "stride": (a.stride(), b.stride()),
        "conj": (a.is_conj(), b.is_conj()),
        "neg": (a.is_neg(), b.is_neg()),
        "requires_grad": (a.requires_grad, b.requires_grad),
        "device": (a.device, b.device),
    }
    out = [name for name, (x, y) in facts.items() if x != y]
    # Every byte of the values as they read (the bits resolved), NaNs included.
    x = a.detach().resolve_conj().resolve_neg().contiguous().reshape(-1).view(torch.uint8)
    y = b.detach().resolve_conj().resolve_neg().contiguous().reshape(-1).view(torch.uint8)
    if not torch.equal(x, y):
        out.append("values")
    return out


def _check_kept(torch, source: Path, output: Path) -> None:
    before = torch.load(source, weights_only=True)
    after = torch.load(output, weights_only=True)
    for key, value in before.items():
        if torch.is_tensor(value):
            assert _same(torch, value, after[key]) == [], key


def test_kept_tensors_read_as_torch_reads_the_input(tmp_path):
    import torch

    source = tmp_path / "in.pt"
    torch.save({**_kept(torch), P + "scores": [0.5, 0.25], P + "flag": True}, source)
    result = tensorize_dump(str(source), str(tmp_path / "out.pt"))
    assert result.written, result.refusals
    _check_kept(torch, source, tmp_path / "out.pt")
    after = torch.load(tmp_path / "out.pt", weights_only=True)
    assert after["conj"].is_conj() and after["neg"].is_neg()  # the bits, not resolved copies
    assert after[P + "scores"].dtype == torch.float32
    assert after[P + "scores"].tolist() == [0.5, 0.25]
    assert after[P + "flag"].dtype == torch.bool and after[P + "flag"].item() is True


def _big_endian(torch, source: Path, target: Path) -> None:
    """``source`` rewritten as a big-endian machine would have saved it: each storage's numbers
    byte-swapped (a complex number as its two parts) and the byteorder record saying 'big'."""
    itemsize = {}
    loaded = torch.load(source, weights_only=True)
    with zipfile.ZipFile(source) as archive:
        records = [(info.filename, archive.read(info)) for info in archive.infolist()]
    prefix = records[0][0].split("/")[0]
    # Each storage record's element size, from the tensors that view it (one dtype each).
    for value in loaded.values():
        if torch.is_tensor(value) and value.numel():
            storage = value.untyped_storage()
            size = value.element_size() // (2 if value.is_complex() else 1)
            itemsize[storage.data_ptr()] = size
    by_bytes = {}
    for value in loaded.values():
        if torch.is_tensor(value) and value.numel():
            storage = value.untyped_storage()
            by_bytes[bytes(storage)] = itemsize[storage.data_ptr()]
    out = []
    for name, data in records:
        if name == f"{prefix}/byteorder":
            data = b"big"
        elif name.startswith(f"{prefix}/data/") and by_bytes.get(data, 1) > 1:
            k = by_bytes[data]
            data = b"".join(data[j : j + k][::-1] for j in range(0, len(data), k))
        out.append((name, data))
    with zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as archive:
        for name, data in out:
            archive.writestr(name, data)


def test_big_endian_files_are_read_in_their_byte_order(tmp_path):
    import torch

    little, big = tmp_path / "little.pt", tmp_path / "big.pt"
    kept = {k: v for k, v in _kept(torch).items() if k not in ("transposed", "sliced")}
    torch.save({**kept, P + "scores": [0.5, 0.25]}, little)
    _big_endian(torch, little, big)
    # torch swaps the bytes back: the big-endian file reads as the little-endian one.
    _check_kept(torch, little, big)
    result = tensorize_dump(str(big), str(tmp_path / "out.pt"))
    assert result.written, result.refusals
    _check_kept(torch, big, tmp_path / "out.pt")


# ---------------------------------------------------------------------------------------------
# numpy arrays, pickled as numpy pickles them (protocol 3: the data is a bytes object)


def _ndarray(spec: str, order: str, shape: tuple[int, ...], raw: bytes, fortran=False) -> bytes:
    """``numpy._core.multiarray._reconstruct(numpy.ndarray, (0,), b'b')`` then BUILD with
    ``(1, shape, dtype, fortran, raw)``, the dtype being ``numpy.dtype(spec, False, True)``
    with BUILD state ``(3, order, None, None, None, -1, -1, 0)``."""
    dtype = call(g("numpy", "dtype"), s(spec), NEWFALSE, NEWTRUE)
    dtype += tup(i(3), s(order), NONE, NONE, NONE, i(-1), i(-1), i(0))
    dtype += BUILD
    array = call(
        g("numpy._core.multiarray", "_reconstruct"), g("numpy", "ndarray"), tup(i(0)), by(b"b")
    )
    state = tup(i(1), tup(*map(i, shape)), dtype, NEWTRUE if fortran else NEWFALSE, by(raw))
    return array + state + BUILD


def _numpy_dump(path: Path, array: bytes) -> Path:
    body = message((s(P + "values"), array))
    path.write_bytes(torch_zip(pickle_of(body, protocol=3)).data)
    return path


#: (dtype spec, byte order, shape, struct format, numbers, torch dtype name, fortran order)
ARRAYS = {
    "float32": ("f4", "<", (2,), "<2f", [0.25, 0.75], "float32", False),
    "float64 big-endian": ("f8", ">", (3,), ">3d", [1.5, -2.0, 1e300], "float64", False),
    "int16 2x3 row-major": ("i2", "<", (2, 3), "<6h", [1, 2, 3, -4, 5, 6], "int16", False),
    "int32 2x3 column-major": ("i4", "<", (2, 3), "<6i", [1, 4, 2, 5, 3, 6], "int32", True),
    "uint8": ("u1", "|", (4,), "4B", [0, 1, 254, 255], "uint8", False),
    "int64 big-endian": ("i8", ">", (2,), ">2q", [-(2**63), 7], "int64", False),
    "bool": ("b1", "|", (3,), "3B", [1, 0, 2], "bool", False),
    "float16": ("f2", "<", (2,), "<2e", [0.5, -1.0], "float16", False),
    "complex64 big-endian": ("c8", ">", (2,), ">4f", [1.0, 2.0, -3.0, 0.5], "complex64", False),
    "empty": ("f4", "<", (0, 3), "<0f", [], "float32", False),
}

#: What each array reads as: numbers in row-major order (complex as (real, imaginary) pairs).
EXPECTED = {
    "int32 2x3 column-major": [[1, 2, 3], [4, 5, 6]],
    "bool": [True, False, True],  # numpy reads any non-zero byte as True
    "complex64 big-endian": [complex(1.0, 2.0), complex(-3.0, 0.5)],
}


@pytest.mark.parametrize("name", sorted(ARRAYS))
def test_numpy_arrays_convert_from_their_bytes(name, tmp_path):
    import torch

    spec, order, shape, fmt, numbers, dtype, fortran = ARRAYS[name]
    source = _numpy_dump(
        tmp_path / "in.pt", _ndarray(spec, order, shape, struct.pack(fmt, *numbers), fortran)
    )
    result = tensorize_dump(str(source), str(tmp_path / "out.pt"))
    assert result.written, result.refusals
    [conversion] = result.conversions
    assert conversion.after == f"{dtype} tensor of shape {shape} on cpu"
    value = torch.load(tmp_path / "out.pt", weights_only=True)[P + "values"]
    assert value.dtype == getattr(torch, dtype) and tuple(value.shape) == shape
    expected = EXPECTED.get(name)
    if expected is None:
        expected = (
            torch.tensor(numbers, dtype=value.dtype).reshape(shape).tolist() if numbers else []
        )
    assert value.tolist() == (expected if shape != (0, 3) else [])


@pytest.mark.parametrize(
    ("array", "reason"),
    [
        (
            # An object array: its data is a list of pickled objects, not bytes.
            call(
                g("numpy._core.multiarray", "_reconstruct"),
                g("numpy", "ndarray"),
                tup(i(0)),
                by(b"b"),
            )
            + tup(
                i(1),
                tup(i(1)),
                call(g("numpy", "dtype"), s("O8"), NEWFALSE, NEWTRUE),
                NEWFALSE,
                b"]",
            )
            + BUILD,
            "a numpy array of objects holds Python objects, not numbers",
        ),
        (_ndarray("f16", "<", (1,), bytes(16)), "numpy dtype float128 has no torch equivalent"),
        (_ndarray("U4", "<", (1,), bytes(16)), "numpy dtype U4 has no torch equivalent"),
        (_ndarray("f4", "<", (3,), bytes(8)), "its data holds 8 bytes, not the 12 that its dtype"),
    ],
)
def test_numpy_arrays_that_are_not_numbers_are_refused(array, reason, tmp_path):
    source = _numpy_dump(tmp_path / "in.pt", array)
    result = tensorize_dump(str(source), str(tmp_path / "out.pt"))
    assert not result.written and not (tmp_path / "out.pt").exists()
    [refusal] = result.refusals
    assert refusal.key == P + "values" and reason in refusal.reason


def test_numpy_array_through_the_cli_pops_cleanly(tmp_path):
    from helpers import cli

    raw = struct.pack("<2f", 0.25, 0.75)
    source = _numpy_dump(tmp_path / "in.pt", _ndarray("f4", "<", (2,), raw))
    done = cli("tensorize", str(source), "-o", str(tmp_path / "out.pt"), env={"COLUMNS": "1000"})
    assert done.exit_code == 0, done.output
    fixed = cli("replay", str(tmp_path / "out.pt"), "--format", "json")
    assert fixed.exit_code == 0, fixed.output
    assert "PP101" not in cli("inspect", str(tmp_path / "out.pt")).output
    assert done.output.splitlines()[-1] == f"wrote {tmp_path / 'out.pt'} (1 value converted)"


def _with_metadata(metadata: bytes, storage: str = "FloatStorage") -> bytes:
    """data.pkl of one tensor rebuilt by ``_rebuild_tensor_v2`` with a 7th, metadata argument."""
    pid = tup(s("storage"), g("torch", storage), s("1"), s("cpu"), i(2)) + b"Q"
    rebuilt = call(
        g("torch._utils", "_rebuild_tensor_v2"),
        pid,
        i(0),
        tup(i(2)),
        tup(i(1)),
        NEWFALSE,
        call(g("collections", "OrderedDict")),
        metadata,
    )
    return pickle_of(dct((s("x"), rebuilt)))


@pytest.mark.parametrize(
    ("metadata", "storage", "bits", "refused"),
    [
        (dct((s("neg"), NEWTRUE)), "FloatStorage", (False, True), 0),
        # torch sets the bit whatever the value. This hand-made archive also leaves torch.save's
        # record order (a warning); PP118 names the metadata, where torch's reading could
        # differ, the worse of the two (an error): test_writer_grammar_metadata.py checks it.
        (dct((s("conj"), NEWFALSE)), "ComplexFloatStorage", (True, False), 1),
        (dct((s("other"), NEWTRUE)), "FloatStorage", (False, False), 0),
        (dct(), "FloatStorage", (False, False), 0),
        (NONE, "FloatStorage", (False, False), 0),
        (dct((s("conj"), NEWTRUE)), "FloatStorage", None, "has the conjugate bit"),
        (dct((s("neg"), s("yes"))), "FloatStorage", None, "maps 'neg' to a str"),
        (tup(i(1)), "FloatStorage", None, "metadata is a tuple, not a dict"),
    ],
)
def test_tensor_metadata_is_read_as_torch_reads_it(metadata, storage, bits, refused, tmp_path):
    import torch
    from helpers import cli

    source = tmp_path / "in.pt"
    data = {"1": bytes(16 if storage.startswith("Complex") else 8)}  # two elements
    source.write_bytes(torch_zip(_with_metadata(metadata, storage), storages=data).data)
    done = cli("inspect", str(source))
    if isinstance(refused, int):
        # weights_only=False: the file is made here, and the weights-only unpickler knows no
        # SHORT_BINUNICODE; the full unpickler applies the metadata as every torch.load does.
        loaded = torch.load(source, weights_only=False)["x"]
        assert (loaded.is_conj(), loaded.is_neg()) == bits
        assert done.exit_code == refused, done.output
        result = tensorize_dump(str(source), str(tmp_path / "out.pt"))
        assert not result.written  # nothing to convert; the bits are read all the same
    else:
        with pytest.raises(Exception):  # noqa: B017 - torch's own errors vary by case
            torch.load(source, weights_only=False)
        assert done.exit_code == 1 and "PP117" in done.output, done.output
        assert refused in " ".join(done.output.split()), done.output


@pytest.mark.parametrize(
    "value, shown",
    [
        (1e40, "float64: float32 would turn 1e+40 into inf"),
        ([0.5, -1e39], "float64: float32 would turn -1e+39 at [1] into -inf"),
        (1e40j, "complex128: complex64 would turn 1e+40j into infj"),
        ([1.0, 1e-310], "float64: float32 would turn 1e-310 at [1] into 0.0"),
        ([16777217.0, 0.1], "float64: float32 would turn 16777217.0 at [0] into 16777216.0"),
        (0.1, "float64: float32 would turn 0.1 into 0.10000000149011612"),
    ],
    ids=["float", "list", "complex", "subnormal", "rounded", "scalar"],
)
def test_a_float_float32_would_change_is_written_as_float64(value, shown, tmp_path):
    # torch.tensor(1e40) is float32 inf, torch.tensor(1e-310) 0.0: a file rewritten with them
    # would hold other values; Python floats are doubles, and float64 holds them.
    import torch

    source = tmp_path / "big.pt"
    torch.save({"next_token_ids": torch.tensor([1, 2]), P + "scores": value}, source)
    result = tensorize_dump(str(source), str(tmp_path / "out.pt"))
    assert result.written, result.refusals
    [conversion] = result.conversions
    assert shown in conversion.after, conversion.after
    out = torch.load(tmp_path / "out.pt", weights_only=True)[P + "scores"]
    assert out.dtype == (torch.complex128 if isinstance(value, complex) else torch.float64)
    assert out.tolist() == value


def test_a_float_float32_holds_converts_to_float32(tmp_path):
    import torch

    source = tmp_path / "ok.pt"
    value = [2.0**127, float("inf"), -0.0, 0.5]  # each a float32 value, bit for bit
    torch.save({"next_token_ids": torch.tensor([1, 2]), P + "scores": value}, source)
    result = tensorize_dump(str(source), str(tmp_path / "out.pt"))
    assert result.written, result.refusals
    out = torch.load(tmp_path / "out.pt")[P + "scores"]
    assert out.dtype == torch.float32 and out.tolist() == value
    assert str(out[2].item()) == "-0.0"
