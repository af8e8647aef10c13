"""The index values of packed tensors (sparse, nested, quantized per channel), checked against
what torch.save writes once the pickle has run and the storages are known.

torch.save writes a tensor torch made: its index tensors hold the values of a valid tensor.
torch.load (2.13) checks few of them: it builds sparse tensors unchecked, a nested jagged tensor
without looking at its offsets, a per-channel quantized tensor without its zero points' range;
the tensor it gives then fails, or reads past its values, where it is used. Each such value is
a deviation here (PP118, an error), worded as torch's own check words it. A strided nested
tensor is different: ``torch._nested_view_from_buffer`` sets each part's view on the buffer's
storage as it loads, and refuses a part whose view overflows or lies past the storage (PP117,
with torch's message); parts that overlap, or strides no tensor of those sizes has, torch reads,
but torch.save never writes them (a warning).
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from ppaux.dump.element_values import MAX_ELEMENT_BYTES, ElementReader
from ppaux.dump.model import DTYPE_ITEMSIZE, TensorRef
from ppaux.dump.pickle_vm import Machine
from ppaux.dump.quantizer_args import zero_point_problem
from ppaux.dump.sparse_invariants import compressed_problem, coo_problem
from ppaux.errors import TorchRefuses

__all__ = ["check_packed"]

_UNCHECKED = "torch.load reads it without checking"


def check_packed(m: Machine, reader: ElementReader) -> None:
    """Check the index values of every packed tensor the pickle built (``m.packed``): a
    deviation for each broken invariant (the first one kept, as :meth:`Machine.deviate`
    keeps it), :class:`TorchRefuses` for a strided nested tensor torch cannot rebuild."""
    for at, tensor in m.packed:
        m.op_pos = at
        if tensor.kind == "sparse":
            _sparse(m, tensor, reader)
        elif tensor.kind == "quantized":
            _per_channel(m, tensor, reader)
        elif tensor.layout == "torch.jagged":
            _jagged(m, tensor, reader)
        elif tensor.kind == "nested":
            _strided_nested(m, tensor, reader)
    if reader.over:
        m.deviate(
            f"index values of packed tensors past {MAX_ELEMENT_BYTES >> 20} MiB, left unchecked",
            False,
        )


def _sparse(m: Machine, tensor: TensorRef, reader: ElementReader) -> None:
    coo = tensor.layout == "torch.sparse_coo"
    problem = (coo_problem if coo else compressed_problem)(tensor, reader.values)
    if problem is not None:
        check = (
            "_validate_sparse_coo_tensor_args" if coo else "_validate_sparse_compressed_tensor_args"
        )
        m.deviate(
            f"a {tensor.layout} tensor whose indices torch's {check} refuses ({problem}); "
            f"{_UNCHECKED}, and the tensor fails or reads out of bounds where it is used"
        )


def _per_channel(m: Machine, tensor: TensorRef, reader: ElementReader) -> None:
    params = (tensor.parts or {}).get("quantizer")
    if not isinstance(params, (tuple, list)) or len(params) != 4:
        return
    zero_points = params[2]
    if not isinstance(zero_points, TensorRef) or zero_points.dtype != "int64":
        return
    for zero_point in reader.values(zero_points) or ():
        assert isinstance(zero_point, int)
        problem = zero_point_problem("per_channel", tensor.dtype, zero_point)
        if problem is not None:
            m.deviate(
                f"a quantized tensor whose zero point {zero_point} is out of range for "
                f"{tensor.dtype}; {_UNCHECKED}, and using its values fails (torch: {problem})"
            )
            return


def _jagged(m: Machine, tensor: TensorRef, reader: ElementReader) -> None:
    """A nested jagged tensor's offsets, lengths and cached sequence lengths as a valid
    tensor has them: offsets from 0 up, never decreasing, within the values' ragged
    dimension; lengths not negative, each part within the values; the cached minimum and
    maximum lengths (a tensor of that many rows) those of its parts."""
    parts = tensor.parts or {}
    kwargs: dict[Any, Any] = parts.get("kwargs", {})
    values, offsets, lengths = parts.get("values"), parts.get("offsets"), parts.get("lengths")
    ragged = kwargs.get("_ragged_idx", 1)
    if not isinstance(values, TensorRef) or not isinstance(offsets, TensorRef):
        return
    if type(ragged) is not int or not 1 <= ragged <= len(values.shape):
        return
    extent = values.shape[ragged - 1]
    starts = reader.values(offsets) if offsets.dtype == "int64" else None
    if not starts:
        return
    problem = _offsets_problem(starts, extent, lengths is None)
    seqlens = [int(b - a) for a, b in pairwise(starts)]
    if problem is None and isinstance(lengths, TensorRef) and lengths.dtype == "int64":
        given = reader.values(lengths)
        if given is not None:
            seqlens = [int(n) for n in given]
            problem = _lengths_problem(starts, seqlens, extent)
    if problem is None:
        problem = _cache_problem(kwargs.get("_metadata_cache"), seqlens)
    if problem is not None:
        m.deviate(
            f"a nested jagged tensor whose {problem}; {_UNCHECKED}, and the tensor fails or "
            "reads out of bounds where it is used"
        )


def _offsets_problem(starts: list[Any], extent: int, whole: bool) -> str | None:
    """Offsets as a valid tensor has them; ``whole`` (no lengths): its parts are all of its
    values' rows, from 0 to the last (torch splits the values at the offsets)."""
    if starts[0] < 0:
        return f"offsets start at {starts[0]}, below 0"
    for a, b in pairwise(starts):
        if b < a:
            return f"offsets decrease ({a}, then {b})"
    if starts[-1] > extent:
        return f"offsets end at {starts[-1]}, past the {extent} rows of its values"
    if whole and (starts[0] != 0 or starts[-1] != extent):
        return (
            f"offsets run from {starts[0]} to {starts[-1]} without lengths, where its parts "
            f"are the {extent} rows of its values, from 0"
        )
    return None


def _lengths_problem(starts: list[Any], lengths: list[int], extent: int) -> str | None:
    for start, length in zip(starts, lengths, strict=False):
        if length < 0:
            return f"length {length} is negative"
        if start + length > extent:
            return f"part at offset {start} of length {length} ends past its values' {extent} rows"
    return None


def _cache_problem(cache: object, seqlens: list[int]) -> str | None:
    if not isinstance(cache, dict) or not seqlens:
        return None
    for key, actual in (("max_seqlen", max(seqlens)), ("min_seqlen", min(seqlens))):
        cached = cache.get(key)
        if not isinstance(cached, TensorRef):
            continue
        if len(cached.shape) != 2 or cached.shape[1] != 0:
            # torch.save writes the length as the rows of an empty (length, 0) tensor, and
            # torch reads it back as its first dimension.
            return f"cached {key} is a tensor of shape {tuple(cached.shape)}, not (length, 0)"
        if cached.shape[0] != actual:
            return f"cached {key} is {cached.shape[0]}, where its parts' is {actual}"
    return None


def _strided_nested(m: Machine, tensor: TensorRef, reader: ElementReader) -> None:
    parts = tensor.parts or {}
    buffer, sizes, strides, offsets = (
        parts.get(k) for k in ("buffer", "sizes", "strides", "offsets")
    )
    if not all(isinstance(v, TensorRef) for v in (buffer, sizes, strides, offsets)):
        return
    assert isinstance(buffer, TensorRef) and isinstance(sizes, TensorRef)
    size_flat, stride_flat, starts = (reader.values(v) for v in (sizes, strides, offsets))
    if size_flat is None or stride_flat is None or starts is None or buffer.storage is None:
        return
    dims = sizes.shape[1] if len(sizes.shape) == 2 else 0
    item = DTYPE_ITEMSIZE.get(buffer.dtype, 1)
    storage_bytes = buffer.storage.nbytes
    spans = []
    for i, start in enumerate(starts):
        shape = [int(n) for n in size_flat[i * dims : (i + 1) * dims]]
        steps = [int(s) for s in stride_flat[i * dims : (i + 1) * dims]]
        if min(shape + steps + [int(start)], default=0) < 0:
            raise _refuse(
                m, f"Storage size calculation overflowed with sizes={shape} and strides={steps}"
            )
        if 0 in shape:
            continue
        need = (int(start) + 1 + sum((n - 1) * s for n, s in zip(shape, steps, strict=True))) * item
        if need > storage_bytes:
            raise _refuse(
                m,
                f"setStorage: sizes {shape}, strides {steps}, storage offset {start}, and "
                f"itemsize {item} requiring a storage size of {need} are out of bounds for "
                f"storage of size {storage_bytes}",
            )
        spans.append((int(start), _dense_numel(shape, steps)))
    _check_layout(m, spans)


def _dense_numel(shape: list[int], steps: list[int]) -> int | None:
    """The elements of a view that is dense and does not overlap itself, else None."""
    expected = 1
    for size, step in sorted(zip(shape, steps, strict=True), key=lambda p: p[1]):
        if size == 1:
            continue
        if step != expected:
            return None
        expected *= size
    return expected


def _check_layout(m: Machine, spans: list[tuple[int, int | None]]) -> None:
    end = None
    for start, numel in sorted(spans, key=lambda s: s[0]):
        if numel is None or (end is not None and start < end):
            m.deviate(
                "a strided nested tensor whose parts overlap, or have strides no tensor of "
                "their sizes has (torch reads them as they are; torch.save never writes them)",
                False,
            )
            return
        end = start + numel


def _refuse(m: Machine, why: str) -> TorchRefuses:
    return TorchRefuses(
        m.path,
        f"torch.load refuses the file: _rebuild_nested_tensor: {why} (at byte {m.op_pos})",
    )
