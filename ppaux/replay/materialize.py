"""Turn the safe reader's stand-ins into real tensors, for replay.

The structure of a dump always comes from :mod:`ppaux.dump.dumpfile` (nothing in the file is
unpickled). This module reads each storage's bytes straight from its zip record (or, for a plain
pickle, from the bytes the reader kept) into a buffer, and builds the tensor with torch from the
dtype, shape, stride and offset the reader recorded. Views of one storage share one buffer, as
after ``torch.load``. Every value the reader left as a placeholder (an object whose class was never
imported, a numpy array, a global) is kept as it is: those are exactly the non-tensors that make
sglang's transport fail, so replay must hand them on unchanged.

Tensors saved on any device (``cuda:1``, ``cpu``) are placed on the one device replay runs on; meta
tensors stay on the meta device. Files are opened read-only.

This module imports torch; import it only where real tensors are needed.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import warnings
from collections.abc import Iterator
from typing import Any

import torch

from ppaux.dump import (
    DTYPE_ITEMSIZE,
    Dump,
    Opaque,
    RecordReader,
    StorageRef,
    TensorRef,
    TorchValue,
    safe_repr,
    torch_byteorder,
)
from ppaux.errors import DumpError, PpauxError
from ppaux.limits import Limits
from ppaux.replay.stand_ins import stand_in
from ppaux.text import cut

__all__ = [
    "DeviceError",
    "MaterializeError",
    "Materializer",
    "quantized_creation",
    "resolve_device",
    "torch_dtype",
]

#: Values the rebuild keeps as they are.
_PLAIN = (str, bytes, int, float, complex, bool, type(None))

# How a quantized storage's elements are stored (its integer representation).
_QUANTIZED_REPR = {"quint8": "uint8", "qint8": "int8", "qint32": "int32"}


class DeviceError(PpauxError, ValueError):
    """A ``--device`` value that cannot be used here: ``str()`` is '<value>: <reason>'."""

    def __init__(self, value: str, reason: str) -> None:
        super().__init__(f"{value}: {reason}")
        self.value = value
        self.reason = reason


class MaterializeError(DumpError):
    """A tensor of the dump that cannot be rebuilt (missing or short storage record, ...)."""


def resolve_device(text: str) -> torch.device:
    """The device named by ``text``: 'cpu', 'cuda', 'cuda:N' or 'auto' (CUDA when present).

    Raises :class:`DeviceError` when CUDA is asked for and absent, or the index is out of range.
    """
    value = text.strip().lower()
    if value == "cpu":
        return torch.device("cpu")
    if value == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda", torch.cuda.current_device())
        return torch.device("cpu")
    kind, _, index = value.partition(":")
    if kind != "cuda" or (index and not index.isdigit()):
        raise DeviceError(text, "not a device; use cpu, cuda, cuda:N or auto")
    if not torch.cuda.is_available():
        why = (
            "torch was built without CUDA"
            if torch.version.cuda is None
            else "no CUDA device is visible"
        )
        raise DeviceError(text, f"CUDA is not available here ({why}; torch {torch.__version__})")
    count = torch.cuda.device_count()
    number = int(index) if index else torch.cuda.current_device()
    if number >= count:
        plural = "" if count == 1 else "s"
        raise DeviceError(
            text,
            f"there {'is' if count == 1 else 'are'} only {count} CUDA "
            f"device{plural} here (cuda:0 to cuda:{count - 1})",
        )
    return torch.device("cuda", number)


def torch_dtype(name: str) -> torch.dtype | None:
    """The torch dtype with canonical ``name`` in this torch, or None if this torch lacks it."""
    found = getattr(torch, name, None)
    return found if isinstance(found, torch.dtype) else None


class _Records:
    """Read-only access to the storage records of one torch.save zip, through the one record
    reader every command uses (:class:`ppaux.dump.records.RecordReader`): records found as
    torch finds them, the byte order read as torch reads it, every read error one line."""

    def __init__(self, path: str, prefix: str | None) -> None:
        self.path = path
        try:
            self._reader = RecordReader.open(path, prefix)
        except DumpError as exc:
            raise MaterializeError(path, exc.reason) from None
        try:
            record = self._reader.find("byteorder")
            text = None
            if record is not None:
                text = b"".join(self._reader.blocks(record, 0, min(record.file_size, 16)))
                if record.file_size > 16:
                    text += b"..."
            self.byteorder, refused = torch_byteorder(text)
        except DumpError as exc:
            self._reader.close()
            raise MaterializeError(path, exc.reason) from None
        if refused is not None:
            self._reader.close()
            raise MaterializeError(path, f"torch.load refuses the file: {refused}")

    def read(self, storage: StorageRef, nbytes: int) -> bytearray:
        """Exactly ``nbytes`` from the start of ``storage``'s record."""
        name = storage.record or ""
        record = self._reader.find_full(name)
        if record is None:
            raise MaterializeError(self.path, f"storage record {cut(name)} is missing")
        # Checked before allocating: the declared size, and what the record's compressed bytes
        # (which must lie in the file) could inflate to.
        why = self._reader.allocation_ok(record, nbytes)
        if why is not None:
            raise MaterializeError(self.path, why)
        buffer = bytearray(nbytes)
        try:
            self._reader.read_into(record, buffer)
        except DumpError as exc:
            raise MaterializeError(self.path, exc.reason) from None
        return buffer

    def close(self) -> None:
        """Close the file."""
        self._reader.close()


class Materializer:
    """Builds real values from one dump's stand-ins onto ``device``; use as a context manager.

    :meth:`value` rebuilds a value (containers are rebuilt, tensors created, placeholders kept).
    Storages are read once each and shared by every tensor that views them.
    """

    def __init__(self, dump: Dump, device: torch.device, limits: Limits | None = None) -> None:
        self.dump = dump
        self.device = device
        self.limits = limits if limits is not None else Limits()
        self._records: _Records | None = None
        self._bases: dict[int, torch.Tensor] = {}
        self._memo: dict[int, Any] = {}
        self._saved: dict[int, str] = {}

    def __enter__(self) -> Materializer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the dump file."""
        if self._records is not None:
            self._records.close()
            self._records = None

    def saved_locations(self) -> dict[int, str]:
        """Where each storage built so far was saved ('cpu', 'cuda:1'), by its data pointer.

        Tensors are rebuilt on one device; code that saves them again (``ppaux tensorize``)
        uses this to record each storage's original location rather than the rebuild device.
        """
        return dict(self._saved)

    # -- values --------------------------------------------------------------------------------
    def value(self, value: object, where: str = "", depth: int = 0) -> Any:
        """``value`` with every tensor stand-in replaced by a real tensor on the device."""
        if isinstance(value, _PLAIN):
            return value
        known = self._memo.get(id(value))
        if known is not None:
            return known
        if depth > self.limits.max_depth:
            raise MaterializeError(
                self.dump.path,
                f"{where or 'the payload'} nests too deeply "
                f"(limit max_depth={self.limits.max_depth})",
            )
        if isinstance(value, TensorRef):
            built: Any = self.tensor(value, where)
        elif isinstance(value, list):
            built = []
            self._memo[id(value)] = built  # before the items: a list may contain itself
            # Plain items are kept as they are, without working out their place (a list of a
            # million numbers would otherwise format a million places that no message uses).
            built.extend(
                v if isinstance(v, _PLAIN) else self.value(v, f"{where}[{i}]", depth + 1)
                for i, v in enumerate(value)
            )
        elif isinstance(value, dict):
            built = {}
            self._memo[id(value)] = built
            for k, v in value.items():
                key = k if isinstance(k, _PLAIN) else self.value(k, where, depth + 1)
                if isinstance(v, _PLAIN):
                    built[key] = v
                    continue
                inner = f"{where}[{safe_repr(k, 40)}]"  # a repr of a huge int would raise
                built[key] = self.value(v, inner, depth + 1)
        elif isinstance(value, tuple):
            built = tuple(self.value(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value))
        elif isinstance(value, (set, frozenset)):
            built = type(value)(self.value(v, where, depth + 1) for v in value)
        elif isinstance(value, TorchValue):
            built = _torch_value(value)
        elif isinstance(value, Opaque):
            # An object of a class ppaux never imports stays a non-tensor, but one whose type
            # carries the original class name, so Python's own messages (pop's AttributeError
            # on such a dict key) read as they would with the real class.
            built = stand_in(value)
        else:
            # Globals and numpy stand-ins: placeholders stay placeholders.
            return value
        self._memo[id(value)] = built
        return built

    # -- tensors -------------------------------------------------------------------------------
    def tensor(self, ref: TensorRef, where: str = "") -> torch.Tensor:
        """One real tensor for ``ref``; raises :class:`MaterializeError` if it cannot be built."""
        known: torch.Tensor | None = self._memo.get(id(ref))
        if known is not None:
            return known
        try:
            tensor = self._build(ref, where)
        except MaterializeError:
            raise
        except (RuntimeError, ValueError, TypeError, IndexError) as exc:
            raise self._error(where, ref, f"torch cannot rebuild it ({_first_line(exc)})") from None
        if ref.bits:
            # The conjugate and negative bits, set as torch.load sets them after the rebuild.
            torch._utils.set_tensor_metadata(tensor, dict.fromkeys(ref.bits, True))  # type: ignore[no-untyped-call]
        if ref.subclass in ("torch.nn.parameter.Parameter", "torch.nn.Parameter"):
            tensor = torch.nn.Parameter(tensor, requires_grad=ref.requires_grad)
        elif ref.requires_grad and (tensor.is_floating_point() or tensor.is_complex()):
            tensor.requires_grad_(True)
        self._memo[id(ref)] = tensor
        if ref.state:
            self._set_attributes(tensor, ref, where)
        return tensor

    def _set_attributes(self, tensor: torch.Tensor, ref: TensorRef, where: str) -> None:
        """The attributes torch.load sets from the saved state (its __dict__, then slots);
        a tensor's own fields, its class's data descriptors (requires_grad is set above),
        are left as rebuilt."""
        for part in ref.state if isinstance(ref.state, tuple) else (ref.state,):
            for name, value in part.items() if isinstance(part, dict) else ():
                field = getattr(type(tensor), name, None) if isinstance(name, str) else None
                if isinstance(name, str) and not hasattr(type(field), "__set__"):
                    setattr(tensor, name, self.value(value, f"{where}.{name}"))

    def _error(self, where: str, ref: TensorRef, reason: str) -> MaterializeError:
        return MaterializeError(
            self.dump.path, f"cannot rebuild tensor {where or repr(ref)}: {reason}"
        )

    def _build(self, ref: TensorRef, where: str) -> torch.Tensor:
        dtype = torch_dtype(ref.dtype)
        if dtype is None:
            raise self._error(
                where, ref, f"this torch ({torch.__version__}) has no dtype {ref.dtype}"
            )
        if ref.kind == "meta" or ref.device == "meta":
            return torch.empty_strided(
                ref.shape, ref.stride or _row_major(ref.shape), dtype=dtype, device="meta"
            )
        if ref.kind == "sparse":
            return self._sparse(ref, where)
        if ref.kind == "nested":
            return self._nested(ref, where)
        if ref.kind == "quantized":
            return self._quantized(ref, where, dtype)
        return self._strided(ref, where, dtype)

    def _strided(self, ref: TensorRef, where: str, dtype: torch.dtype) -> torch.Tensor:
        if ref.storage is None:
            raise self._error(where, ref, "the file keeps no data for it")
        base = self._base(ref.storage, where, ref)
        itemsize = _itemsize(dtype)
        elements = base.numel() // itemsize
        stride = ref.stride if ref.stride is not None else _row_major(ref.shape)
        if len(stride) != len(ref.shape):
            raise self._error(
                where, ref, f"shape {list(ref.shape)} and stride {list(stride)} differ in length"
            )
        if ref.numel:
            last = ref.offset + sum(
                (size - 1) * step for size, step in zip(ref.shape, stride, strict=True)
            )
            if ref.offset < 0 or last >= elements:
                raise self._error(
                    where, ref, f"it views element {last} of a storage of {elements} elements"
                )
        typed = base[: elements * itemsize].view(dtype) if dtype != torch.uint8 else base
        return typed.as_strided(ref.shape, stride, ref.offset)

    def _base(self, storage: StorageRef, where: str, ref: TensorRef) -> torch.Tensor:
        """The storage's bytes as a flat uint8 tensor on the device (read once, then shared)."""
        known = self._bases.get(id(storage))
        if known is not None:
            return known
        nbytes = storage.nbytes
        if storage.data is not None:
            if len(storage.data) < nbytes:
                raise self._error(
                    where, ref, f"its storage holds {len(storage.data)} bytes, {nbytes} declared"
                )
            buffer = bytearray(storage.data[:nbytes])
            byteorder = "little"
        elif storage.record is not None:
            if self._records is None:
                self._records = _Records(self.dump.path, self.dump.record_prefix)
            try:
                buffer = self._records.read(storage, nbytes)
            except MaterializeError as exc:
                raise self._error(where, ref, exc.reason) from None
            byteorder = self._records.byteorder
        else:
            raise self._error(where, ref, "the file keeps no data for it")
        flat = (
            torch.frombuffer(buffer, dtype=torch.uint8)
            if nbytes
            else torch.empty(0, dtype=torch.uint8, device="cpu")
        )
        itemsize = DTYPE_ITEMSIZE.get(storage.dtype, 1)
        if byteorder != sys.byteorder and itemsize > 1 and nbytes:
            # Saved on a machine of the other byte order: reverse each element's bytes.
            part = itemsize // 2 if storage.dtype.startswith("complex") else itemsize
            flat = flat[: nbytes - nbytes % part].view(-1, part).flip(1).reshape(-1)
        flat = flat.to(self.device)
        self._bases[id(storage)] = flat
        if nbytes:
            self._saved[flat.untyped_storage().data_ptr()] = storage.location
        return flat

    def _part(self, ref: TensorRef, where: str, name: str) -> Any:
        parts = ref.parts or {}
        if name not in parts:
            raise self._error(where, ref, f"the reader kept no {name} for this {ref.kind} tensor")
        return parts[name]

    def _part_tensor(self, ref: TensorRef, where: str, name: str) -> torch.Tensor:
        part = self._part(ref, where, name)
        if not isinstance(part, TensorRef):
            raise self._error(where, ref, f"its {name} is not a tensor")
        return self.tensor(part, f"{where}.{name}")

    def _sparse(self, ref: TensorRef, where: str) -> torch.Tensor:
        layout = getattr(torch, ref.layout.rpartition(".")[2], None)
        values = self._part_tensor(ref, where, "values")
        if layout is torch.sparse_coo:
            indices = self._part_tensor(ref, where, "indices")
            coalesced = self._part(ref, where, "coalesced")
            # check_invariants: indices come from an untrusted file and must stay in bounds.
            return torch.sparse_coo_tensor(
                indices,
                values,
                ref.shape,
                check_invariants=True,
                is_coalesced=coalesced if isinstance(coalesced, bool) else None,
            )
        if layout in (torch.sparse_csr, torch.sparse_csc, torch.sparse_bsr, torch.sparse_bsc):
            return torch.sparse_compressed_tensor(
                self._part_tensor(ref, where, "compressed_indices"),
                self._part_tensor(ref, where, "plain_indices"),
                values,
                ref.shape,
                layout=layout,
                check_invariants=True,
            )
        raise self._error(where, ref, f"unknown sparse layout {ref.layout}")

    def _nested(self, ref: TensorRef, where: str) -> torch.Tensor:
        buffer = self._part_tensor(ref, where, "buffer")
        sizes = self._part_tensor(ref, where, "sizes")
        strides = self._part_tensor(ref, where, "strides")
        offsets = self._part_tensor(ref, where, "offsets")
        # Metadata tensors live on the CPU, as torch keeps them.
        return torch._nested_view_from_buffer(buffer, sizes.cpu(), strides.cpu(), offsets.cpu())

    def _quantized(self, ref: TensorRef, where: str, dtype: torch.dtype) -> torch.Tensor:
        repr_name = _QUANTIZED_REPR.get(ref.dtype)
        if repr_name is None:
            raise self._error(where, ref, f"quantized dtype {ref.dtype} is not supported by replay")
        # Quantized tensors are made on the CPU, where every scheme exists, then moved.
        repr_dtype = torch_dtype(repr_name)
        if repr_dtype is None:
            raise self._error(where, ref, f"quantized dtype {ref.dtype} is not supported by replay")
        int_repr = self._strided(ref, where, repr_dtype).contiguous().cpu()
        quantizer = self._part(ref, where, "quantizer")
        if quantizer is None:
            raise self._error(
                where, ref, "it was saved without a quantizer (torch.load's has none)"
            )
        if not isinstance(quantizer, tuple) or not quantizer:
            raise self._error(where, ref, "its quantizer parameters are malformed")
        scheme = str(quantizer[0]).rpartition(".")[2]
        with quantized_creation():
            return self._quantize(ref, where, int_repr, scheme, quantizer).to(self.device)

    def _quantize(
        self,
        ref: TensorRef,
        where: str,
        int_repr: torch.Tensor,
        scheme: str,
        quantizer: tuple[Any, ...],
    ) -> torch.Tensor:
        if scheme == "per_tensor_affine" and len(quantizer) == 3:
            scale, zero_point = quantizer[1], quantizer[2]
            if not isinstance(scale, (int, float)) or not isinstance(zero_point, int):
                raise self._error(where, ref, "its scale or zero point is not a number")
            return torch._make_per_tensor_quantized_tensor(int_repr, float(scale), zero_point)
        per_channel = ("per_channel_affine", "per_channel_affine_float_qparams")
        if scheme in per_channel and len(quantizer) == 4:
            scales, zero_points, axis = quantizer[1], quantizer[2], quantizer[3]
            scales = self.value(scales, f"{where}.scales")
            zero_points = self.value(zero_points, f"{where}.zero_points")
            if not isinstance(axis, int) or not 0 <= axis < len(ref.shape):
                raise self._error(where, ref, "its quantization axis is out of range")
            scales = torch.as_tensor(scales, dtype=torch.float64, device=int_repr.device)
            zero_points = torch.as_tensor(zero_points, device=int_repr.device)
            return torch._make_per_channel_quantized_tensor(int_repr, scales, zero_points, axis)
        raise self._error(where, ref, f"quantization scheme {scheme} is not supported by replay")


@contextlib.contextmanager
def quantized_creation() -> Iterator[None]:
    """Silence torch's deprecation warning for creating quantized tensors (torch 2.13+).

    Replay rebuilds what the file holds; the deprecation concerns the file's author, not the
    person replaying it, and under ``-W error`` it would stop the replay.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=r".*quantized tensor creation functions", category=UserWarning
        )
        yield


def _torch_value(value: TorchValue) -> Any:
    """The torch.device, layout or qscheme itself (a key of that type fails pop as in torch)."""
    try:
        if value.type_name == "torch.device":
            return torch.device(value.name)
        found = getattr(torch, value.name.rpartition(".")[2], None)
    except (RuntimeError, ValueError, TypeError):
        return value
    return found if found is not None else value


def _row_major(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


@functools.cache
def _itemsize(dtype: torch.dtype) -> int:
    # dtype.itemsize is torch 2.1+; element_size() works everywhere.
    return torch.empty((), dtype=dtype, device="cpu").element_size()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
