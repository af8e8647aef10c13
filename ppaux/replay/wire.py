"""sglang's PP wire (``send_tensor_dict`` / ``recv_tensor_dict``), emulated in one process.

What the wire does to a tensor dict, as in ``sglang/srt/distributed/parallel_state.py`` (the same
in 0.5.19 - 0.5.23), re-implemented here:

* the sender splits the dict: each ``torch.Tensor`` value becomes ``TensorMetadata(device type,
  dtype, size)`` and joins a list of tensors; **every other value stays in the metadata list as
  it is**; the whole list is pickled and sent as bytes;
* each tensor is then sent on its own: empty ones are skipped, CPU tensors go over gloo (which
  refuses non-contiguous and sparse tensors: "input tensor has to be contiguous"), CUDA tensors
  over NCCL (which refuses sparse ones and sends a non-contiguous one's memory as it lies). With
  an attention-TP all-gather group whose size divides the element count, each rank sends one
  slice and the receiver gathers them back into a contiguous tensor;
* the receiver unpickles the list, so non-tensors arrive as copies of the same Python objects;
  for each metadata entry it allocates ``torch.empty(size, dtype, device=<device type>)``, so a
  CUDA tensor lands on the receiver's *current* device (the sender's index is dropped), strides
  are not kept, subclasses and quantizer parameters are lost, and empty tensors are made locally.

:func:`transfer` runs both ends in this process; :mod:`ppaux.replay.distributed` runs them in two
processes over a real torch.distributed group with the same helpers. This module imports torch.
"""

from __future__ import annotations

import pickle
import time
from collections import namedtuple
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from ppaux.errors import PpauxError
from ppaux.replay.materialize import quantized_creation

__all__ = [
    "TensorMetadata",
    "WireError",
    "WireStats",
    "allocate",
    "dispatch_refusal",
    "fill",
    "gathers",
    "outgoing",
    "pack_metadata",
    "split_tensor_dict",
    "transfer",
    "unpack_metadata",
]

#: Same fields and order as sglang's namedtuple of the same name.
TensorMetadata = namedtuple("TensorMetadata", ["device", "dtype", "size"])

#: gloo's own message for a tensor it cannot send (``ProcessGroupGloo::send``).
GLOO_NOT_CONTIGUOUS = "input tensor has to be contiguous"


class WireError(PpauxError, RuntimeError):
    """The wire failed. ``side`` is 'sender' or 'receiver'; ``error_type`` and ``message`` are
    those of the exception raised there (verbatim where torch raised it); ``key`` is the entry
    being sent, if one was; ``metadata_sent`` says whether the receiver already got the list."""

    def __init__(
        self,
        side: str,
        error_type: str,
        message: str,
        *,
        key: object = None,
        metadata_sent: bool = False,
    ) -> None:
        super().__init__(message)
        self.side = side
        self.error_type = error_type
        self.message = message
        self.key = key
        self.metadata_sent = metadata_sent


@dataclass
class WireStats:
    """What crossed the wire: tensors sent, empty tensors rebuilt locally, bytes and time."""

    tensors: int = 0
    empty: int = 0
    tensor_bytes: int = 0
    metadata_bytes: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """The stats as plain data (throughput in MiB/s, or None when nothing took time)."""
        rate = self.tensor_bytes / self.seconds / 2**20 if self.seconds > 0 else None
        return {
            "tensors": self.tensors,
            "empty_tensors": self.empty,
            "tensor_bytes": self.tensor_bytes,
            "metadata_bytes": self.metadata_bytes,
            "seconds": round(self.seconds, 6),
            "throughput_mib_s": float(f"{rate:.3g}") if rate is not None else None,
        }


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def split_tensor_dict(
    tensor_dict: dict[str, Any],
) -> tuple[list[tuple[Any, Any]], list[torch.Tensor]]:
    """The metadata list and the tensor list, as sglang's ``_split_tensor_dict`` builds them.

    A tensor whose ``size()`` fails (a nested tensor) raises :class:`WireError` on the sender,
    before anything was sent.
    """
    metadata: list[tuple[Any, Any]] = []
    tensors: list[torch.Tensor] = []
    for key, value in tensor_dict.items():
        if isinstance(value, torch.Tensor):
            try:
                size = value.size()
            except RuntimeError as exc:
                raise WireError("sender", type(exc).__name__, _first_line(exc), key=key) from None
            metadata.append((key, TensorMetadata(value.device.type, value.dtype, size)))
            tensors.append(value)
        else:
            metadata.append((key, value))
    return metadata, tensors


def pack_metadata(metadata: list[Any]) -> bytes:
    """The pickled metadata list (a value that cannot be pickled fails on the sender)."""
    try:
        return pickle.dumps(metadata)
    except Exception as exc:  # pickle raises many types for unpicklable values
        raise WireError("sender", type(exc).__name__, _first_line(exc)) from None


def unpack_metadata(data: bytes) -> list[Any]:
    """The metadata list back from its bytes, on the receiver.

    These bytes were made by :func:`pack_metadata` from values ppaux built itself (real tensors,
    plain values and the safe reader's stand-ins), never bytes read from a dump.
    """
    try:
        values: list[Any] = pickle.loads(data)
        return values
    except Exception as exc:
        raise WireError(
            "receiver", type(exc).__name__, _first_line(exc), metadata_sent=True
        ) from None


def _gathers(tensor: torch.Tensor | TensorMetadata, all_gather_size: int) -> bool:
    """True where sglang slices the tensor: a group is given (``all_gather_size`` 1 or more:
    a group of one rank slices too) and its size divides the element count."""
    numel = tensor.numel() if isinstance(tensor, torch.Tensor) else _numel(tensor.size)
    return gathers(numel, all_gather_size)


def gathers(numel: int, all_gather_size: int) -> bool:
    """True where ``send_tensor_dict`` sends ``numel`` elements as ``reshape(size, -1)`` rows.

    ``all_gather_size`` 0 stands for no group (``all_gather_group=None``); 1 or more for a group
    of that many ranks. sglang tests the group for ``None``, not its size: the scheduler of every
    release passes its attention-TP group by default, and with one rank ``reshape(1, -1)[0]``
    still copies a tensor it cannot view (see :func:`ppaux.sglang.releases.output_group`).
    """
    return all_gather_size >= 1 and numel % all_gather_size == 0


def _numel(size: Iterable[int]) -> int:
    count = 1
    for dim in size:
        count *= int(dim)
    return count


def outgoing(
    key: object, tensor: torch.Tensor, *, all_gather_size: int = 1, all_gather_rank: int = 0
) -> torch.Tensor | None:
    """The tensor exactly as one sender rank puts it on the wire, or None for an empty one.

    Raises :class:`WireError` where torch refuses it: ``torch.distributed.send`` for a lazy
    conjugate (it views a complex tensor as real), its dispatcher for a sparse or quantized
    tensor (:func:`dispatch_refusal`), gloo (CPU) for a non-contiguous one. A meta tensor, like
    an empty one, sends nothing.
    """
    if tensor.numel() == 0 or tensor.device.type == "meta":
        # sglang hands a meta tensor to torch.distributed like any other; the meta kernel of
        # c10d's send moves nothing and the receiver's recv into its own meta tensor returns at
        # once (seen with sglang 0.5.19 and 0.5.23's GroupCoordinator over gloo).
        return None
    if _gathers(tensor, all_gather_size):
        try:
            # reshape copies a tensor it cannot view, which is why the group (even of one
            # rank) hides most non-contiguous layouts; a view it can keep (x[::2]) stays one.
            tensor = tensor.reshape(all_gather_size, -1)[all_gather_rank]
        except RuntimeError as exc:
            raise WireError(
                "sender", type(exc).__name__, _first_line(exc), key=key, metadata_sent=True
            ) from None
    if tensor.is_complex():
        try:
            # torch.distributed.send views a complex tensor as real before any backend sees
            # it, which torch refuses for a lazy conjugate (x.conj()): the sender raises.
            torch.view_as_real(tensor)
        except RuntimeError as exc:
            raise WireError(
                "sender", type(exc).__name__, _first_line(exc), key=key, metadata_sent=True
            ) from None
    refusal = dispatch_refusal(tensor)
    if refusal is not None:
        raise WireError("sender", "NotImplementedError", refusal, key=key, metadata_sent=True)
    if tensor.is_neg():
        # torch.distributed.send reaches the backend through c10d's dispatcher, whose fallback
        # for a negative view hands on the values it reads (torch 2.13: the receiver of
        # torch._neg_view(x) gets -x); ppaux calls the backend's own send, past the dispatcher.
        tensor = tensor.resolve_neg()
    if tensor.is_cpu:
        if tensor.layout != torch.strided or not tensor.is_contiguous():
            raise WireError(
                "sender", "RuntimeError", GLOO_NOT_CONTIGUOUS, key=key, metadata_sent=True
            )
        return tensor
    if not tensor.is_contiguous():
        # NCCL only warns for point-to-point sends and ships numel elements from the data
        # pointer: the receiver reads the storage order as if it were row-major.
        last = tensor.storage_offset() + tensor.numel()
        if last * tensor.element_size() > tensor.untyped_storage().nbytes():
            raise WireError(
                "sender",
                "RuntimeError",
                "a non-contiguous tensor whose memory "
                "ends past its storage (ppaux: NCCL would read beyond it)",
                key=key,
                metadata_sent=True,
            )
        tensor = tensor.as_strided((tensor.numel(),), (1,), tensor.storage_offset())
    return tensor


def dispatch_refusal(tensor: torch.Tensor) -> str | None:
    """torch's own refusal to send a tensor of this kind (first line), or None.

    c10d's ``send`` has kernels for dense tensors only: a sparse or quantized tensor stops in
    torch's dispatcher, before any backend is involved, with ``NotImplementedError`` (what
    sglang's real ``send_tensor_dict`` raises on the sender). A process group without a backend
    meets the same dispatcher, so it yields torch's exact message without sending anything.
    """
    if tensor.layout == torch.strided and not tensor.is_quantized:
        return None
    import torch.distributed as dist

    probe = dist.ProcessGroup(dist.HashStore(), 0, 2)
    try:
        probe.send([tensor], 1, 0)
    except NotImplementedError as exc:
        return _first_line(exc)
    except RuntimeError:  # a kernel exists (a later torch): the backend decides, as below
        return None
    return None


def allocate(metadata: TensorMetadata) -> torch.Tensor:
    """The receiver's empty tensor: device *type* only, so CUDA means the current device."""
    with quantized_creation():
        return torch.empty(metadata.size, dtype=metadata.dtype, device=metadata.device)


def fill(target: torch.Tensor, chunks: list[torch.Tensor]) -> None:
    """Copy what the sender ranks put on the wire into ``target`` byte for byte.

    ``chunks`` holds one tensor per sending rank: one without a gathering group, one slice per
    attention-TP rank with one, in rank order (what the all-gather puts back together).
    """
    # No autograd: the wire moves bytes, and the receiver's tensor must not inherit the
    # sender's requires_grad through the copy.
    with torch.no_grad():
        flat = [_raw(chunk.detach()).to(target.device) for chunk in chunks]
        data = flat[0] if len(flat) == 1 else torch.cat(flat)
        if target.is_quantized:
            # The receiver's quantized tensor has no quantizer; only the integer bytes travel.
            target.untyped_storage().copy_(data.clone().untyped_storage())
        else:
            target.view(-1).copy_(data)


def _raw(chunk: torch.Tensor) -> torch.Tensor:
    if chunk.is_quantized:
        return chunk.int_repr().reshape(-1)
    if chunk.is_neg():
        # a negative view crosses gloo as the values it reads (torch 2.13: the receiver of
        # torch._neg_view(x) gets -x); a conjugate one never reaches here (see outgoing)
        chunk = chunk.resolve_neg()
    return chunk.reshape(-1)


def transfer(
    tensor_dict: dict[str, Any], *, all_gather_size: int = 1
) -> tuple[dict[str, Any], WireStats]:
    """Send ``tensor_dict`` through the emulated wire; return what the receiver rebuilds.

    Raises :class:`WireError` where sglang's wire would fail, on the side it would fail on.
    """
    stats = WireStats()
    start = time.perf_counter()
    metadata, tensors = split_tensor_dict(tensor_dict)
    payload = pack_metadata(metadata)
    stats.metadata_bytes = len(payload)
    keys = [key for key, value in metadata if isinstance(value, TensorMetadata)]
    sent: list[list[torch.Tensor] | None] = []
    for key, tensor in zip(keys, tensors, strict=True):
        ranks = all_gather_size if _gathers(tensor, all_gather_size) else 1
        pieces = [
            outgoing(key, tensor, all_gather_size=all_gather_size, all_gather_rank=rank)
            for rank in range(ranks)
        ]
        sent.append(None if pieces[0] is None else pieces)  # type: ignore[arg-type]
    received: dict[str, Any] = {}
    pending: Iterator[list[torch.Tensor] | None] = iter(sent)
    for key, value in unpack_metadata(payload):
        if not isinstance(value, TensorMetadata):
            received[key] = value
            continue
        chunks = next(pending)
        target = allocate(value)
        if target.numel() and chunks is not None:
            fill(target, chunks)
            stats.tensors += 1
            stats.tensor_bytes += target.numel() * target.element_size()
        else:
            stats.empty += 1
        received[key] = target
    if any(t.is_cuda for t in received.values() if isinstance(t, torch.Tensor)):
        torch.cuda.synchronize()
    stats.seconds = time.perf_counter() - start
    return received, stats
