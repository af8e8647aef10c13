"""The channel between the two processes of the ``torch-distributed`` and ``sglang`` wires.

Both ends meet through a ``TCPStore`` on :data:`HOST` and talk over a gloo group built as an
object (NCCL added for CUDA tensors), never the default group, so nothing global in either
process changes. :class:`Channel` sends and receives tensors, bytes, objects and tensor dicts the
way sglang's ``send_tensor_dict``/``recv_tensor_dict`` do; :func:`portable` and :func:`rebuild`
carry what the receiver holds back to the sender byte for byte. :func:`clock` is comparable
between the two processes.

This module imports torch.
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime
import os
import pickle
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

from ppaux.replay.wire import (
    TensorMetadata,
    WireError,
    WireStats,
    allocate,
    fill,
    gathers,
    outgoing,
    pack_metadata,
    split_tensor_dict,
    unpack_metadata,
)

__all__ = [
    "CONTROL_KEY",
    "HOST",
    "REPLY_KEY",
    "Channel",
    "Outgoing",
    "clock",
    "gloo_group",
    "nccl_group",
    "portable",
    "prepare",
    "rebuild",
    "stderr_held",
    "synchronize",
    "tcp_store",
]

#: Where the two processes meet (loopback).
HOST = "127.0.0.1"
REPLY_KEY = "__ppaux_reply__"
#: The store keys (``CONTROL_KEY/1``, ``/2``, ...) of the sender's control messages, in order.
CONTROL_KEY = "control"
_QUANTIZED_REPR = {torch.quint8: torch.uint8, torch.qint8: torch.int8, torch.qint32: torch.int32}


#: Seconds a store has to make its connection, however short the transfer timeout: connecting
#: on the loopback is no transfer, and a constructor whose connection times out writes torch's
#: C++ stack to the process's stderr before it raises.
CONNECT_S = 60.0


def tcp_store(port: int | None, timeout: datetime.timedelta) -> dist.TCPStore:
    """The group's store on :data:`HOST`: listening on a free port where ``port`` is None (the
    sender's), else joining the one on ``port`` (the receiver's). It connects within
    :data:`CONNECT_S` at the least, then bounds every wait by ``timeout``."""
    connect = max(timeout, datetime.timedelta(seconds=CONNECT_S))
    if port is None:
        store = dist.TCPStore(HOST, 0, 2, True, timeout=connect, wait_for_workers=False)
    else:
        store = dist.TCPStore(HOST, port, 2, False, timeout=connect)
    store.set_timeout(timeout)
    return store


@contextlib.contextmanager
def stderr_held() -> Iterator[None]:
    """Hold what is written to this process's stderr (descriptor 2: torch's C++ logging writes
    there directly) while the block runs: written out after it where it succeeds, left out
    where it raises (the error itself is then said in ppaux's words)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        held.seek(0)
        data = held.read()
        while data:
            data = data[os.write(2, data) :]


def clock() -> float:
    """Seconds on the system-wide monotonic clock, comparable between the two processes."""
    return time.clock_gettime(time.CLOCK_MONOTONIC)


def gloo_group(store: dist.Store, rank: int, timeout: datetime.timedelta) -> Any:
    # Private and absent from torch's type stubs, but the only way to choose gloo's device.
    options = dist.ProcessGroupGloo._Options()  # type: ignore[attr-defined]
    # Loopback explicitly: the default device follows the host name, which may not resolve
    # to an address both processes can reach.
    options._devices = [dist.ProcessGroupGloo.create_device(hostname=HOST)]
    options._timeout = timeout
    return dist.ProcessGroupGloo(store, rank, 2, options)


def nccl_group(store: dist.Store, rank: int, timeout: datetime.timedelta) -> Any:
    options = dist.ProcessGroupNCCL.Options()
    options._timeout = timeout
    return dist.ProcessGroupNCCL(store, rank, 2, options)


class Channel:
    """Point-to-point traffic with the peer rank: objects and tensors, as sglang sends them."""

    def __init__(
        self, peer: int, cpu_group: dist.ProcessGroup, device_group: object = None
    ) -> None:
        self.peer = peer
        self.cpu_group = cpu_group
        self.device_group = device_group

    def _group(self, tensor: torch.Tensor) -> Any:
        if tensor.is_cpu:
            return self.cpu_group
        if self.device_group is None:
            raise WireError(
                "sender",
                "RuntimeError",
                f"no device group for a {tensor.device} "
                "tensor (ppaux moves CUDA tensors only when it replays on the CUDA device)",
            )
        return self.device_group

    def send_tensor(self, tensor: torch.Tensor) -> None:
        self._group(tensor).send([tensor], self.peer, 0).wait()

    def recv_tensor(self, tensor: torch.Tensor) -> None:
        self._group(tensor).recv([tensor], self.peer, 0).wait()

    def send_bytes(self, data: bytes) -> None:
        # Every tensor made here names the CPU: the caller may have set another default device.
        self.send_tensor(torch.tensor([len(data)], dtype=torch.long, device="cpu"))
        # bytearray: torch.frombuffer wants a writable buffer to share without warning.
        self.send_tensor(torch.frombuffer(bytearray(data), dtype=torch.uint8))

    def recv_bytes(self) -> bytes:
        size = torch.empty(1, dtype=torch.long, device="cpu")
        self.recv_tensor(size)
        data = torch.empty(int(size.item()), dtype=torch.uint8, device="cpu")
        self.recv_tensor(data)
        # ctypes rather than .numpy(): numpy is not a dependency.
        return ctypes.string_at(data.data_ptr(), data.numel())

    def send_object(self, obj: object) -> None:
        self.send_bytes(pickle.dumps(obj))

    def recv_object(self) -> Any:
        # Only ppaux's own control messages travel here, from the process that started us.
        return pickle.loads(self.recv_bytes())

    def send_tensor_dict(
        self, tensor_dict: dict[str, Any], all_gather_size: int = 1, stats: WireStats | None = None
    ) -> None:
        """sglang's ``send_tensor_dict``: the pickled metadata, then each tensor on its own."""
        has_device_group = self.device_group is not None
        self.send_prepared(prepare(tensor_dict, all_gather_size, has_device_group), stats)

    def send_prepared(self, prepared: Outgoing, stats: WireStats | None = None) -> None:
        """Send what :func:`prepare` made ready: the metadata, then each tensor's chunks."""
        self.send_bytes(prepared.payload)
        if stats is not None:
            stats.metadata_bytes = len(prepared.payload)
        for chunks in prepared.chunks:
            for chunk in chunks:
                self.send_tensor(chunk)
                if stats is not None:
                    stats.tensor_bytes += chunk.numel() * chunk.element_size()
            if stats is not None:
                # An empty or meta tensor sends nothing: the receiver makes its own.
                stats.tensors += 1 if chunks else 0
                stats.empty += 0 if chunks else 1

    def recv_tensor_dict(self, all_gather_size: int = 1) -> dict[str, Any]:
        """sglang's ``recv_tensor_dict``: allocate from the metadata on this process's device."""
        received: dict[str, Any] = {}
        for key, value in unpack_metadata(self.recv_bytes()):
            if not isinstance(value, TensorMetadata):
                received[key] = value
                continue
            try:
                target = allocate(value)
            except (RuntimeError, TypeError, ValueError) as exc:
                raise WireError(
                    "receiver",
                    type(exc).__name__,
                    str(exc).splitlines()[0],
                    key=key,
                    metadata_sent=True,
                ) from None
            if target.numel() and target.device.type != "meta":
                self._receive_into(target, all_gather_size)
            received[key] = target
        return received

    def _receive_into(self, target: torch.Tensor, all_gather_size: int) -> None:
        ranks = all_gather_size if gathers(target.numel(), all_gather_size) else 1
        if not target.is_quantized:
            rows = target.view(ranks, -1)
            for rank in range(ranks):
                self.recv_tensor(rows[rank])
            return
        # A quantized buffer cannot be sliced into rows; receive its integer bytes instead.
        scratch = [
            torch.empty(
                target.numel() // ranks, dtype=_QUANTIZED_REPR[target.dtype], device=target.device
            )
            for _ in range(ranks)
        ]
        for chunk in scratch:
            self.recv_tensor(chunk)
        fill(target, scratch)


@dataclass(frozen=True)
class Outgoing:
    """A tensor dict made ready to send: the pickled metadata list and, per tensor in order,
    the chunks that go on the wire (none for an empty or meta tensor)."""

    payload: bytes
    chunks: list[list[torch.Tensor]]


def prepare(
    tensor_dict: dict[str, Any], all_gather_size: int = 1, has_device_group: bool = False
) -> Outgoing:
    """Everything ``send_tensor_dict`` would put on the wire, before any of it goes.

    Raises :class:`WireError` where the sender would fail: a value that cannot be split or
    pickled, a tensor torch refuses to send (:func:`ppaux.replay.wire.outgoing`), a device
    tensor with no device group. sglang sends the metadata before it meets a refused tensor,
    so such a refusal says the metadata was sent; here nothing has crossed yet, and the
    receiver is left ready for the next message.
    """
    metadata, tensors = split_tensor_dict(tensor_dict)
    payload = pack_metadata(metadata)
    keys = [key for key, value in metadata if isinstance(value, TensorMetadata)]
    prepared: list[list[torch.Tensor]] = []
    for key, tensor in zip(keys, tensors, strict=True):
        ranks = all_gather_size if gathers(tensor.numel(), all_gather_size) else 1
        chunks: list[torch.Tensor] = []
        for rank in range(ranks):
            chunk = outgoing(key, tensor, all_gather_size=all_gather_size, all_gather_rank=rank)
            if chunk is None:
                break
            if not chunk.is_cpu and not has_device_group:
                raise WireError(
                    "sender",
                    "RuntimeError",
                    f"no device group for a {chunk.device} tensor (ppaux moves CUDA tensors "
                    "only when it replays on the CUDA device)",
                    key=key,
                    metadata_sent=True,
                )
            chunks.append(chunk)
        prepared.append(chunks)
    return Outgoing(payload, prepared)


def synchronize(device_type: str) -> None:
    if device_type == "cuda":
        torch.cuda.synchronize()


def portable(received: dict[Any, Any]) -> list[tuple[Any, ...]]:
    """``received`` as picklable entries: (key, value) or (key, device, dtype, size, bytes).

    A received tensor is always dense (the receiver made it with ``torch.empty``), but a
    quantized one has no quantizer and cannot be pickled; its storage bytes can.
    """
    entries: list[tuple[Any, ...]] = []
    for key, value in received.items():
        if isinstance(value, torch.Tensor):
            data = b""
            if value.device.type != "meta" and value.numel():
                storage = value.untyped_storage().cpu()  # type: ignore[no-untyped-call]
                data = ctypes.string_at(storage.data_ptr(), storage.nbytes())
            entries.append((key, str(value.device), value.dtype, tuple(value.size()), data))
        else:
            entries.append((key, value))
    return entries


def rebuild(entries: list[tuple[Any, ...]]) -> dict[Any, Any]:
    """The dict :func:`portable` described, with tensors on the devices they were on."""
    from ppaux.replay.materialize import quantized_creation

    rebuilt: dict[Any, Any] = {}
    for entry in entries:
        if len(entry) == 2:
            rebuilt[entry[0]] = entry[1]
            continue
        key, device, dtype, size, data = entry
        with quantized_creation():
            tensor = torch.empty(size, dtype=dtype, device=device)
        if data:
            source = torch.frombuffer(bytearray(data), dtype=torch.uint8).to(tensor.device)
            tensor.untyped_storage().copy_(source.untyped_storage())
        rebuilt[key] = tensor
    return rebuilt
