"""sglang's PP wire through a real torch.distributed group of two processes on loopback.

This process is the sender (rank 0 of the group, sglang's last pipeline stage); a child process
started with ``python -m ppaux.replay.receiver`` is the receiver (rank 1, sglang's PP rank 0).
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
default group, so nothing global in the calling process changes. A message the sender refuses (a
tensor torch will not send, a value that cannot be pickled) is found before any of it crosses:
the receiver is told so and waits for the next, so one receiver serves a whole run. Any other
failure on either side ends the child; the next transfer starts a fresh one. NCCL refuses two
ranks on one GPU, so the CUDA path needs two CUDA devices: the receiver uses the device after the
sender's.

This module imports torch.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

import torch
import torch.distributed as dist

from ppaux.replay.channel import (
    CONTROL_KEY,
    REPLY_KEY,
    Channel,
    Outgoing,
    clock,
    gloo_group,
    nccl_group,
    prepare,
    rebuild,
    stderr_held,
    synchronize,
    tcp_store,
)
from ppaux.replay.import_path import BOOT, environment_entries, warning_options
from ppaux.replay.protocol import Delivery, Exchange, WireFailure, WireSetupError
from ppaux.replay.wire import WireError, WireStats
from ppaux.suggestions import Setting

__all__ = ["DistributedWire", "WireSetupError"]


def _signal_name(number: int) -> str:
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


#: The signals a process raises on itself by faulting (its own crash, not another's doing).
_FAULTS = frozenset({"SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGABRT", "SIGTRAP", "SIGSYS"})
_CRASHED = "the receiving process crashed ({name})"
#: What the sender says of a receiver that another process's signal ended while it ran
#: (ppaux signals it only after a transfer failed, to end it).
_SIGNALLED = (
    "the receiving process was ended by {name}; ppaux never signals it during a transfer, so "
    "the checked code or another process did"
)


#: Seconds the receiver process has, at least, to start and join the group. Its start-up
#: (importing torch, and sglang's runtime for the ``sglang`` transport: seconds of CPU) is not a
#: transfer, so the transfer timeout does not bound it: on a loaded machine those seconds of
#: CPU take minutes of the wall clock.
START_UP_S = 600.0


class DistributedWire:
    """The sending end of a two-process group; the receiver is started on first use.

    The message itself crosses by :meth:`_send_message` (ppaux's re-implementation of sglang's
    ``send_tensor_dict``); :class:`ppaux.replay.sglang_wire.SglangWire` replaces that one step
    with sglang's own ``GroupCoordinator`` and keeps the rest: the receiver's life, the control
    messages, the reply.

    ``device`` is where the sender's tensors are (CUDA needs a second GPU for the receiver);
    ``sglang_source`` is what :func:`ppaux.sglang_source.load_transport_module` loads when the
    receiver is asked to run sglang's implementation. Close it (or use ``with``) to stop the
    receiver.
    """

    #: The module the receiver process runs (``python -m``).
    child_module = "ppaux.replay.receiver"
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
        self._channel: Channel | None = None
        self._sequence = 0
        #: The control messages told to the running receiver (its store's keys count them).
        self._controls = 0

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
    def _start(self) -> Channel:
        if self._channel is not None:
            return self._channel
        process = self._spawn()
        start_up = max(START_UP_S, self.timeout.total_seconds())
        deadline = clock() + start_up
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
                    f"the receiver process did not start and join the group within {start_up:g} s"
                )
            time.sleep(0.01)
        cpu_group, device_group = self._groups()
        self._channel = Channel(1, cpu_group, device_group)
        self._joined(self._store)
        return self._channel

    def _groups(self) -> tuple[Any, Any]:
        """The gloo group and (on CUDA) the NCCL group with the receiver. Their connection is
        bounded by the timeout: a group that cannot be set up (one that does not connect
        within it) is a :class:`WireSetupError` in ppaux's words, and torch's own lines about
        it (C++, written to stderr) are left out (:func:`~ppaux.replay.channel.stderr_held`)."""
        try:
            with stderr_held():
                cpu_group = gloo_group(dist.PrefixStore("gloo", self._store), 0, self.timeout)
                device_group = None
                if self.device.type == "cuda":
                    store = dist.PrefixStore("nccl", self._store)
                    device_group = nccl_group(store, 0, self.timeout)
        except RuntimeError as exc:  # torch's DistError and gloo's own are RuntimeErrors
            self._reset()
            said = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            error = WireSetupError(
                f"the group with the receiver could not be set up (timeout "
                f"{self.timeout.total_seconds():g} s): {said}"
            )
            if "time" in said.lower():  # gloo's 'Connect timeout', torch's 'timed out'
                error.suggest(Setting("timeout_s", what="more seconds"))
            raise error from None
        return cpu_group, device_group

    def _spawn(self) -> subprocess.Popen[bytes]:
        """Start the receiver process without waiting for it (the running one, if started):
        a subclass starts it early so that its start-up overlaps with this process's work."""
        if self._process is not None:
            return self._process
        self._store = tcp_store(None, self.timeout)
        config = {
            "port": self._store.port,
            "timeout_s": self.timeout.total_seconds(),
            "device": self.receiver_device,
            "sglang_source": self.sglang_source,
            **self._child_config(),
        }
        # ppaux/replay/distributed.py -> the directory that holds the ppaux package
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        given = environment_entries(os.environ.get("PYTHONPATH"), os.getcwd())
        self._log = tempfile.TemporaryFile()
        # Isolated (-I): neither the current directory nor a checked target's folder is on its
        # path; the user's PYTHONPATH is placed as Python places it (import_path.py).
        self._process = subprocess.Popen(
            [
                sys.executable,
                "-I",
                *warning_options(),
                "-c",
                BOOT,
                root,
                json.dumps(given),
                self.child_module,
                json.dumps(config),
            ],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=self._log,
        )
        return self._process

    def _child_config(self) -> dict[str, Any]:
        """What the receiver needs beyond the common settings (none here)."""
        return {}

    def _joined(self, store: dist.Store) -> None:
        """Called once the channel to a new receiver stands (nothing more to set up here)."""

    def _left(self) -> None:
        """Called when the receiver is gone, to drop what :meth:`_joined` set up."""

    def _check(self, sent: dict[str, Any]) -> Outgoing | None:
        """Split, pickle and make every tensor ready first: a dict that cannot be split, or
        a tensor torch refuses to send, fails before anything is sent, and the receiver
        stays for the next message (sglang's receiver would wait for a tensor that never
        comes)."""
        return prepare(sent, self.all_gather_size, self.device.type == "cuda")

    def _send_message(
        self, channel: Channel, sent: dict[str, Any], stats: WireStats, ready: Outgoing | None
    ) -> None:
        """Send the message itself, the way sglang's ``send_tensor_dict`` does."""
        if ready is None:
            channel.send_tensor_dict(sent, self.all_gather_size, stats)
        else:
            channel.send_prepared(ready, stats)

    def _log_tail(self) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        lines = [
            line
            for line in self._log.read().decode("utf-8", "replace").splitlines()
            if line.strip()
            and "Failed to initialize NumPy" not in line
            # torch's own log line for each wait of the receiver's that timed out while the
            # sender was busy (receiver.next_control): the wait goes on, nothing failed.
            and not (line.startswith("[W") and "waitForInput" in line)
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
        self._controls = 0
        if self._log is not None:
            self._log.close()
            self._log = None

    def _control(self, message: dict[str, Any]) -> None:
        """Tell the receiver what comes next, through the store rather than the group: the
        receiver waits for it as long as this process lives (:func:`ppaux.replay.receiver.
        next_control`), so that the time between two messages (the checked code's own work,
        however slow) is never taken for a transfer past the timeout."""
        self._controls += 1
        self._store.set(f"{CONTROL_KEY}/{self._controls}", json.dumps(message))

    def close(self) -> None:
        """Tell the receiver to stop and wait for it."""
        if self._channel is not None and self._process is not None:
            try:
                self._control({"op": "stop"})
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
        # How the receiver ended, before this process ends it (None: it still runs).
        ended = None if self._process is None else self._process.poll()
        self._reset()
        if reported is not None:
            return WireError(
                reported["side"],
                reported["error_type"],
                reported["message"],
                key=reported.get("key"),
                metadata_sent=True,
            )
        if ended is not None and ended < 0:
            name = _signal_name(-ended)
            said = _CRASHED if name in _FAULTS else _SIGNALLED
            return WireError("receiver", name, said.format(name=name), metadata_sent=True)
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if tail and tail not in message:
            message = f"{message} (receiver: {tail})"
        return WireError("sender", type(exc).__name__, message, metadata_sent=True)

    def _refused(self, sequence: int) -> None:
        """Tell a running receiver that message ``sequence`` was refused on the sender and
        nothing of it follows; it goes on to the next. A receiver that cannot be told is
        stopped (the next message starts a fresh one)."""
        if self._channel is None:
            return
        try:
            self._control({"op": "refused", "seq": sequence})
        except RuntimeError:
            self._reset()

    # -- transfers -----------------------------------------------------------------------------
    def _send(self, sent: dict[str, Any], control: dict[str, Any], stats: WireStats) -> float:
        """Tell the receiver what to do with the next message, then send ``sent`` itself.

        Returns when the message left (on the shared clock); raises :class:`WireError` where
        the wire fails.
        """
        self._sequence += 1
        sequence = self._sequence
        try:
            ready = self._check(sent)
        except WireError:
            # Refused before anything crossed: the receiver, if running, hears that this
            # message is not coming and waits for the next one.
            self._refused(sequence)
            raise
        channel = self._start()
        try:
            self._control({"seq": sequence, "all_gather": self.all_gather_size, **control})
            synchronize(self.device.type)
            started = clock()
            self._send_message(channel, sent, stats, ready)
        except WireError as exc:
            # The sender failed midway (sglang's own send, which checks nothing beforehand):
            # the receiver is left waiting for data that never comes. sglang's receiver sees
            # the peer close.
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
        answer = reply.pop(REPLY_KEY)
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
        return Delivery(self.transport, rebuild(answer["entries"]), stats=stats)

    def raw(self, tensors: list[torch.Tensor]) -> float:
        """Seconds to send ``tensors`` with bare send/recv (no metadata), for comparison."""
        channel = self._start()
        self._sequence += 1
        specs = [
            (list(t.shape), str(t.dtype).removeprefix("torch."), t.device.type) for t in tensors
        ]
        self._control({"op": "raw", "seq": self._sequence, "specs": specs})
        synchronize(self.device.type)
        started = clock()
        for tensor in tensors:
            channel.send_tensor(tensor)
        answer = channel.recv_object()
        received_at: float = answer["received_at"]
        return max(received_at - started, 0.0)
