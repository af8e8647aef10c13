"""sglang's PP wire through a real torch.distributed group of two processes on loopback.

This process is the sender (rank 0 of the group, sglang's last pipeline stage); a child process
started with ``python -m ppaux.replay.distributed`` is the receiver (rank 1, sglang's PP rank 0).
They
meet through a ``TCPStore`` on 127.0.0.1 with a free port and talk over a gloo group (NCCL is
added for CUDA tensors), the way sglang's ``send_tensor_dict``/``recv_tensor_dict`` do:

1. the metadata list (see :mod:`ppaux.replay.wire`) is pickled and sent over gloo as a size tensor
and a
   uint8 tensor;
2. every non-empty tensor is sent on its own: CPU tensors over gloo, CUDA tensors over NCCL;
3. the receiver allocates each tensor from its metadata on its own current device, receives into
   it, then runs pop (and add, the way back) with the implementation asked for, and sends the
   outcome and the re-added tensors back so that the sender can compare them with what it sent.

The groups are built as objects (``ProcessGroupGloo(store, rank, size, options)``), never as the
default group, so nothing global in the calling process changes. A failure on either side ends
the child; the next transfer starts a fresh one. NCCL refuses two ranks on one GPU, so the CUDA
path needs two CUDA devices: the receiver uses the device after the sender's.

This module imports torch.
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

from ppaux.errors import PpauxError, setting
from ppaux.replay.protocol import Delivery, Exchange, WireFailure
from ppaux.replay.wire import (
    TensorMetadata,
    WireError,
    WireStats,
    allocate,
    fill,
    outgoing,
    pack_metadata,
    split_tensor_dict,
    unpack_metadata,
)

__all__ = ["DistributedWire", "WireSetupError", "clock", "serve"]

_HOST = "127.0.0.1"
_REPLY_KEY = "__ppaux_reply__"
_QUANTIZED_REPR = {torch.quint8: torch.uint8, torch.qint8: torch.int8, torch.qint32: torch.int32}


def clock() -> float:
    """Seconds on the system-wide monotonic clock, comparable between the two processes."""
    return time.clock_gettime(time.CLOCK_MONOTONIC)


class WireSetupError(PpauxError, RuntimeError):
    """The two-process group could not be set up (no second GPU, the receiver did not start)."""


def _gloo(store: Any, rank: int, timeout: datetime.timedelta) -> Any:
    # Private and absent from torch's type stubs, but the only way to choose gloo's device.
    options = dist.ProcessGroupGloo._Options()  # type: ignore[attr-defined]
    # Loopback explicitly: the default device follows the host name, which may not resolve
    # to an address both processes can reach.
    options._devices = [dist.ProcessGroupGloo.create_device(hostname=_HOST)]
    options._timeout = timeout
    return dist.ProcessGroupGloo(store, rank, 2, options)


def _nccl(store: Any, rank: int, timeout: datetime.timedelta) -> Any:
    options = dist.ProcessGroupNCCL.Options()
    options._timeout = timeout
    return dist.ProcessGroupNCCL(store, rank, 2, options)


class _Channel:
    """Point-to-point traffic with the peer rank: objects and tensors, as sglang sends them."""

    def __init__(self, peer: int, cpu_group: Any, device_group: Any = None) -> None:
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
                f"tensor (ppaux: the CUDA path needs {setting('device', 'cuda')})",
            )
        return self.device_group

    def send_tensor(self, tensor: torch.Tensor) -> None:
        self._group(tensor).send([tensor], self.peer, 0).wait()

    def recv_tensor(self, tensor: torch.Tensor) -> None:
        self._group(tensor).recv([tensor], self.peer, 0).wait()

    def send_bytes(self, data: bytes) -> None:
        self.send_tensor(torch.tensor([len(data)], dtype=torch.long))
        # bytearray: torch.frombuffer wants a writable buffer to share without warning.
        self.send_tensor(torch.frombuffer(bytearray(data), dtype=torch.uint8))

    def recv_bytes(self) -> bytes:
        size = torch.empty(1, dtype=torch.long)
        self.recv_tensor(size)
        data = torch.empty(int(size.item()), dtype=torch.uint8)
        self.recv_tensor(data)
        # ctypes rather than .numpy(): numpy is not a dependency.
        return ctypes.string_at(data.data_ptr(), data.numel())

    def send_object(self, obj: Any) -> None:
        self.send_bytes(pickle.dumps(obj))

    def recv_object(self) -> Any:
        # Only ppaux's own control messages travel here, from the process that started us.
        return pickle.loads(self.recv_bytes())

    def send_tensor_dict(
        self, tensor_dict: dict[str, Any], all_gather_size: int = 1, stats: WireStats | None = None
    ) -> None:
        """sglang's ``send_tensor_dict``: the pickled metadata, then each tensor on its own."""
        metadata, tensors = split_tensor_dict(tensor_dict)
        payload = pack_metadata(metadata)
        self.send_bytes(payload)
        if stats is not None:
            stats.metadata_bytes = len(payload)
        keys = [key for key, value in metadata if isinstance(value, TensorMetadata)]
        for key, tensor in zip(keys, tensors, strict=True):
            ranks = all_gather_size if _gathers(tensor.numel(), all_gather_size) else 1
            sent_any = False
            for rank in range(ranks):
                chunk = outgoing(key, tensor, all_gather_size=all_gather_size, all_gather_rank=rank)
                if chunk is None:
                    break
                self.send_tensor(chunk)
                sent_any = True
                if stats is not None:
                    stats.tensor_bytes += chunk.numel() * chunk.element_size()
            if stats is not None:
                # An empty or meta tensor sends nothing: the receiver makes its own.
                stats.tensors += 1 if sent_any else 0
                stats.empty += 0 if sent_any else 1

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
        ranks = all_gather_size if _gathers(target.numel(), all_gather_size) else 1
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


def _gathers(numel: int, all_gather_size: int) -> bool:
    return all_gather_size > 1 and numel % all_gather_size == 0


def _synchronize(device_type: str) -> None:
    if device_type == "cuda":
        torch.cuda.synchronize()


class DistributedWire:
    """The sending end of a two-process group; the receiver is started on first use.

    The message itself crosses by :meth:`_send_message` (ppaux's re-implementation of sglang's
    ``send_tensor_dict``); :class:`ppaux.replay.sglang_wire.SglangWire` replaces that one step
    with sglang's own ``GroupCoordinator`` and keeps the rest: the receiver's life, the control
    messages, the reply.

    ``device`` is where the sender's tensors are (CUDA needs a second GPU for the receiver);
    ``sglang_source`` is what :func:`ppaux.sglang.loader.load_transport_module` loads when the
    receiver is asked to run sglang's implementation. Close it (or use ``with``) to stop the
    receiver.
    """

    #: The module the receiver process runs (``python -m``).
    child_module = "ppaux.replay.distributed"
    #: The transport's name (see :class:`ppaux.replay.protocol.Wire`).
    transport = "torch-distributed"

    def __init__(
        self,
        device: torch.device,
        *,
        timeout_s: float = 60.0,
        all_gather_size: int = 1,
        sglang_source: str | None = None,
    ) -> None:
        self.device = device
        self.timeout = datetime.timedelta(seconds=timeout_s)
        self.all_gather_size = all_gather_size
        self.sglang_source = sglang_source
        self.receiver_device = self._receiver_device(device)
        self._store: Any = None
        self._process: subprocess.Popen[bytes] | None = None
        self._log: Any = None
        self._channel: _Channel | None = None
        self._sequence = 0

    @staticmethod
    def _receiver_device(device: torch.device) -> str:
        if device.type != "cuda":
            return "cpu"
        count = torch.cuda.device_count()
        if count < 2:
            raise WireSetupError(
                f"the torch-distributed transport on CUDA needs two CUDA devices, one per rank "
                f"(NCCL refuses two ranks on one GPU); this machine has {count}"
            )
        index = device.index if device.index is not None else torch.cuda.current_device()
        return f"cuda:{(index + 1) % count}"

    def __enter__(self) -> DistributedWire:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the receiver process ------------------------------------------------------------------
    def _start(self) -> _Channel:
        if self._channel is not None:
            return self._channel
        process = self._spawn()
        deadline = clock() + self.timeout.total_seconds()
        while not self._store.check(["ready"]):
            if process.poll() is not None:
                tail = self._log_tail()
                self._reset()
                raise WireSetupError(
                    f"the receiver process exited before joining the group"
                    f"{': ' + tail if tail else ''}"
                )
            if clock() > deadline:
                self._reset()
                raise WireSetupError(
                    "the receiver process did not join the group within "
                    f"{self.timeout.total_seconds():g} s"
                )
            time.sleep(0.01)
        prefix = dist.PrefixStore("gloo", self._store)
        cpu_group = _gloo(prefix, 0, self.timeout)
        device_group = None
        if self.device.type == "cuda":
            device_group = _nccl(dist.PrefixStore("nccl", self._store), 0, self.timeout)
        self._channel = _Channel(1, cpu_group, device_group)
        self._joined(self._store)
        return self._channel

    def _spawn(self) -> subprocess.Popen[bytes]:
        """Start the receiver process without waiting for it (the running one, if started):
        a subclass starts it early so that its start-up overlaps with this process's work."""
        if self._process is not None:
            return self._process
        self._store = dist.TCPStore(_HOST, 0, 2, True, timeout=self.timeout, wait_for_workers=False)
        config = {
            "port": self._store.port,
            "timeout_s": self.timeout.total_seconds(),
            "device": self.receiver_device,
            "sglang_source": self.sglang_source,
            **self._child_config(),
        }
        # ppaux/replay/distributed.py -> the directory that holds the ppaux package
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        self._log = tempfile.TemporaryFile()
        self._process = subprocess.Popen(
            [sys.executable, "-m", self.child_module, json.dumps(config)],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=self._log,
            env=env,
        )
        return self._process

    def _child_config(self) -> dict[str, Any]:
        """What the receiver needs beyond the common settings (none here)."""
        return {}

    def _joined(self, store: Any) -> None:
        """Called once the channel to a new receiver stands (nothing more to set up here)."""

    def _left(self) -> None:
        """Called when the receiver is gone, to drop what :meth:`_joined` set up."""

    def _check(self, sent: dict[str, Any]) -> None:
        """Split and pickle first: a dict that cannot be split fails before anything is sent,
        as in sglang, and the group stays usable."""
        split_tensor_dict(sent)

    def _send_message(self, channel: _Channel, sent: dict[str, Any], stats: WireStats) -> None:
        """Send the message itself, the way sglang's ``send_tensor_dict`` does."""
        channel.send_tensor_dict(sent, self.all_gather_size, stats)

    def _log_tail(self) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        lines = [
            line
            for line in self._log.read().decode("utf-8", "replace").splitlines()
            if line.strip() and "Failed to initialize NumPy" not in line
        ]
        return lines[-1].strip() if lines else ""

    def _reset(self) -> None:
        """Stop the receiver (if running) and forget the group; the next use starts afresh."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()
        if process is not None:
            process.wait()
        if self._channel is not None:
            self._left()
        self._channel = None
        self._store = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def close(self) -> None:
        """Tell the receiver to stop and wait for it."""
        if self._channel is not None and self._process is not None:
            try:
                self._channel.send_object({"op": "stop"})
                self._process.wait(timeout=self.timeout.total_seconds())
            except (RuntimeError, subprocess.TimeoutExpired):
                pass
        self._reset()

    def _receiver_failure(self, sequence: int, exc: BaseException) -> WireError:
        """What went wrong when traffic failed: the receiver's own error, if it reported one."""
        if self._process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=5)
        key = f"error/{sequence}"
        reported = None
        try:
            if self._store is not None and self._store.check([key]):
                reported = json.loads(self._store.get(key).decode("utf-8"))
        except RuntimeError:
            reported = None
        tail = self._log_tail()
        self._reset()
        if reported is not None:
            return WireError(
                reported["side"],
                reported["error_type"],
                reported["message"],
                key=reported.get("key"),
                metadata_sent=True,
            )
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if tail and tail not in message:
            message = f"{message} (receiver: {tail})"
        return WireError("sender", type(exc).__name__, message, metadata_sent=True)

    # -- transfers -----------------------------------------------------------------------------
    def _send(self, sent: dict[str, Any], control: dict[str, Any], stats: WireStats) -> float:
        """Tell the receiver what to do with the next message, then send ``sent`` itself.

        Returns when the message left (on the shared clock); raises :class:`WireError` where
        the wire fails.
        """
        self._check(sent)
        channel = self._start()
        self._sequence += 1
        sequence = self._sequence
        try:
            channel.send_object({"seq": sequence, "all_gather": self.all_gather_size, **control})
            _synchronize(self.device.type)
            started = clock()
            self._send_message(channel, sent, stats)
        except WireError as exc:
            # The sender failed midway (as gloo does on a non-contiguous tensor): the receiver
            # is left waiting for data that never comes. sglang's receiver sees the peer close.
            self._reset()
            raise exc
        except RuntimeError as exc:
            raise self._receiver_failure(sequence, exc) from None
        return started

    def exchange(self, sent: dict[str, Any], impl: str) -> Exchange:
        """Send ``sent`` to the receiver, which pops with ``impl`` ('reference' or 'sglang').

        Returns the receiver's :class:`~ppaux.replay.roundtrip.Reception`, the re-added
        auxiliary tensors it sent back and the wire's statistics, or where the wire failed.
        """
        stats = WireStats()
        try:
            started = self._send(sent, {"op": "dict", "impl": impl}, stats)
            channel = self._start()
            try:
                reply = channel.recv_tensor_dict()
            except (RuntimeError, WireError) as exc:
                raise self._receiver_failure(self._sequence, exc) from None
        except WireError as exc:
            return Exchange(self.transport, None, failure=WireFailure.from_error(exc))
        answer = reply.pop(_REPLY_KEY)
        stats.seconds = max(answer["received_at"] - started, 0.0)
        readded = reply if answer["readded"] else None
        return Exchange(self.transport, answer["info"], readded, stats)

    def deliver(self, sent: dict[str, Any]) -> Delivery:
        """Send ``sent``; return a copy, in this process, of the dict the receiver holds.

        The receiver sends back every tensor's device, dtype, shape and bytes and every other
        value as it unpickled it; the copy is rebuilt on the receiver's device.
        """
        stats = WireStats()
        try:
            started = self._send(sent, {"op": "deliver"}, stats)
            channel = self._start()
            try:
                answer = channel.recv_object()
            except (RuntimeError, WireError) as exc:
                raise self._receiver_failure(self._sequence, exc) from None
        except WireError as exc:
            return Delivery(self.transport, None, WireFailure.from_error(exc))
        stats.seconds = max(answer["received_at"] - started, 0.0)
        return Delivery(self.transport, _rebuild(answer["entries"]), stats=stats)

    def raw(self, tensors: list[torch.Tensor]) -> float:
        """Seconds to send ``tensors`` with bare send/recv (no metadata), for comparison."""
        channel = self._start()
        self._sequence += 1
        specs = [
            (list(t.shape), str(t.dtype).removeprefix("torch."), t.device.type) for t in tensors
        ]
        channel.send_object({"op": "raw", "seq": self._sequence, "specs": specs})
        _synchronize(self.device.type)
        started = clock()
        for tensor in tensors:
            channel.send_tensor(tensor)
        answer = channel.recv_object()
        received_at: float = answer["received_at"]
        return max(received_at - started, 0.0)


# ----------------------------------------------------------------------------------------------
# The receiving process


Receive = Callable[[_Channel, dict[str, Any]], dict[str, Any]]


def _receive_message(channel: _Channel, control: dict[str, Any]) -> dict[str, Any]:
    """The message, received the way sglang's ``recv_tensor_dict`` does."""
    return channel.recv_tensor_dict(control["all_gather"])


def serve(
    config: dict[str, Any],
    *,
    joined: Callable[[Any, dict[str, Any]], Receive] | None = None,
    implementation: Callable[[str, dict[str, Any], dict[str, Any]], Any] | None = None,
) -> int:
    """Receive until told to stop; report a failure through the store, then exit 3.

    ``joined(store, config)``, called once the channel stands, returns how the message is
    received (default: ppaux's re-implementation of ``recv_tensor_dict``); ``implementation``
    resolves the name of the pop/add implementation asked for.
    """
    timeout = datetime.timedelta(seconds=config["timeout_s"])
    store = dist.TCPStore(_HOST, config["port"], 2, False, timeout=timeout)
    device = torch.device(config["device"])
    if device.type == "cuda":
        # recv_tensor_dict allocates on the *current* device: make it this rank's GPU.
        torch.cuda.set_device(device)
    store.set("ready", "1")
    cpu_group = _gloo(dist.PrefixStore("gloo", store), 1, timeout)
    device_group = (
        _nccl(dist.PrefixStore("nccl", store), 1, timeout) if device.type == "cuda" else None
    )
    channel = _Channel(0, cpu_group, device_group)
    receive_message = joined(store, config) if joined is not None else _receive_message
    resolve = implementation if implementation is not None else _implementation
    implementations: dict[str, Any] = {}
    while True:
        control = channel.recv_object()
        if control["op"] == "stop":
            return 0
        try:
            if control["op"] == "raw":
                _serve_raw(channel, control, device.type)
            elif control["op"] == "deliver":
                _serve_delivery(channel, control, receive_message, device.type)
            else:
                _serve_dict(
                    channel,
                    control,
                    receive_message,
                    resolve(control["impl"], implementations, config),
                    device.type,
                )
        except Exception as exc:  # reported to the sender, whatever it was
            side = exc.side if isinstance(exc, WireError) else "receiver"
            error_type = exc.error_type if isinstance(exc, WireError) else type(exc).__name__
            message = (
                exc.message
                if isinstance(exc, WireError)
                else (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            )
            key = exc.key if isinstance(exc, WireError) else None
            store.set(
                f"error/{control['seq']}",
                json.dumps(
                    {
                        "side": side,
                        "error_type": error_type,
                        "message": message,
                        "key": key if isinstance(key, (str, type(None))) else repr(key),
                    }
                ),
            )
            return 3


def _implementation(name: str, cache: dict[str, Any], config: dict[str, Any]) -> Any:
    if name not in cache:
        if name == "sglang":
            from ppaux.sglang import load_transport_module

            cache[name] = load_transport_module(config["sglang_source"])
        else:
            from ppaux.replay import transport

            cache[name] = transport
    return cache[name]


def _serve_dict(
    channel: _Channel,
    control: dict[str, Any],
    receive_message: Receive,
    module: Any,
    device_type: str,
) -> None:
    from ppaux.replay.roundtrip import receive

    received = receive_message(channel, control)
    _synchronize(device_type)
    received_at = clock()
    info, readded = receive(
        received,
        pop=module.pop_auxiliary_output_from_pp_tensors,
        add=module.add_auxiliary_output_to_pp_tensors,
    )
    reply: dict[str, Any] = {
        _REPLY_KEY: {"info": info, "received_at": received_at, "readded": readded is not None}
    }
    reply.update(readded or {})
    channel.send_tensor_dict(reply)


def _serve_delivery(
    channel: _Channel, control: dict[str, Any], receive_message: Receive, device_type: str
) -> None:
    received = receive_message(channel, control)
    _synchronize(device_type)
    received_at = clock()
    channel.send_object({"received_at": received_at, "entries": _portable(received)})


def _portable(received: dict[Any, Any]) -> list[tuple[Any, ...]]:
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


def _rebuild(entries: list[tuple[Any, ...]]) -> dict[Any, Any]:
    """The dict :func:`_portable` described, with tensors on the devices they were on."""
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


def _serve_raw(channel: _Channel, control: dict[str, Any], device_type: str) -> None:
    for shape, dtype, kind in control["specs"]:
        target = torch.empty(
            shape, dtype=getattr(torch, dtype), device=device_type if kind == "cuda" else "cpu"
        )
        channel.recv_tensor(target)
    _synchronize(device_type)
    channel.send_object({"received_at": clock()})


if __name__ == "__main__":
    raise SystemExit(serve(json.loads(sys.argv[1])))
