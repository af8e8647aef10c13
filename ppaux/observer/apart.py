"""Rank 0 in a process of its own: what it rebuilds from the bytes the last stage sent.

In sglang, rank 0 is another process than the last stage (another host under multi-node):
state the last stage's observer keeps at module or class level (``after_sample`` storing a
tensor in a global that ``from_pp_tensors`` reads back) is never there. The check's child runs
both sides in one process, where that state is shared; so, before it imports the target, it
forks a process (:func:`start`) that imports the target separately and runs only rank 0's
side: per step, the dict rank 0 received crosses to it as bytes (each tensor's dtype, shape,
strides, device and memory; other values as JSON), as sglang's wire carries it; it pops it
with rank 0's observer (``from_pp_tensors``), describes the rebuilt output, copies it to the
host and consumes it into requests of its own, and answers the description or the fault
(:class:`RankZero`), which the step's record carries to the judge (:mod:`.judge`): rank 0's
side as sglang would see it.

A step whose dict holds a value that cannot cross so (a tensor subclass, a tensor that is not
dense, a value other than a tensor or a JSON scalar) is not sent: rank 0's side of that step
is judged in the child's process only.

Runs in the check's child (:mod:`.worker`). Imports torch when used.
"""

from __future__ import annotations

import contextlib
import os
import struct
from collections.abc import Callable
from json import JSONDecoder, JSONEncoder
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import socket

    from ppaux.observer.options import ObserverOptions

__all__ = ["SIDE", "RankZero", "start"]

#: The side a fault of rank 0's own process is on, as the report names it.
SIDE = "rank 0 in a process of its own"

_HEADER = struct.Struct("!Q")
#: The most bytes one message's JSON part may take.
_MOST_JSON = 1 << 26
#: Made before the target loads: a target replacing ``json.dumps`` (or the classes' methods,
#: bound here) changes nothing of what crosses.
_ENCODER = JSONEncoder(ensure_ascii=True, allow_nan=True)
_ENCODER.iterencode = _ENCODER.iterencode  # type: ignore[method-assign]  # bound on the object
_ENCODE = _ENCODER.encode
_DECODER = JSONDecoder()
_DECODER.raw_decode = _DECODER.raw_decode  # type: ignore[method-assign]  # bound on the object
_DECODE = _DECODER.decode
#: Seconds rank 0's process is given to exit once the check is done with it.
_EXIT_WAIT_S = 2.0


def start(
    target: str,
    options: ObserverOptions,
    first: Callable[[], None],
    hide: Callable[[int], int],
) -> RankZero | None:
    """Fork rank 0's process (before this process imports ``target``); ``first`` runs in it
    before anything else (what it must not keep of this process's); each end of the socket
    between the two is moved by ``hide`` (to a descriptor the target is unlikely to write on).
    None where the system cannot fork."""
    import socket

    if not hasattr(os, "fork"):
        return None
    try:
        ours, theirs = socket.socketpair()
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        ours.close()
        theirs.close()
        return None
    if pid == 0:  # rank 0's process: it never returns
        code = 1
        try:
            ours.close()
            first()
            _serve(socket.socket(fileno=hide(theirs.detach())), target, options)
            code = 0
        finally:
            os._exit(code)
    theirs.close()
    return RankZero(socket.socket(fileno=hide(ours.detach())), pid)


def _send(sock: socket.socket, header: dict[str, Any], blobs: list[bytes]) -> None:
    data = _ENCODE(header).encode("utf-8")
    sock.sendall(_HEADER.pack(len(data)) + data)
    for blob in blobs:
        sock.sendall(blob)


def _receive_exactly(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(min(size - len(data), 1 << 20))
        if not chunk:
            raise EOFError("the other process closed its end")
        data += chunk
    return bytes(data)


def _receive(sock: socket.socket) -> dict[str, Any]:
    (size,) = _HEADER.unpack(_receive_exactly(sock, _HEADER.size))
    if size > _MOST_JSON:
        raise EOFError("a message past its bound")
    message = _DECODE(_receive_exactly(sock, size).decode("utf-8"))
    if not isinstance(message, dict):
        raise EOFError("a message that is not an object")
    return message


def _crossing(received: dict[Any, Any]) -> tuple[list[list[Any]], list[bytes]] | None:
    """The entries of ``received`` as they cross (``[key, "tensor", dtype, shape, strides,
    device, size]`` or ``[key, "value", value]``) and the tensors' bytes; None where one
    cannot cross (see the module's docstring)."""
    import ctypes

    import torch

    entries: list[list[Any]] = []
    blobs: list[bytes] = []
    for key, value in received.items():
        if not isinstance(key, str):
            return None
        if type(value) is not torch.Tensor:
            if value is None or type(value) in (str, int, float, bool):
                entries.append([key, "value", value])
                continue
            return None
        if value.layout != torch.strided or value.is_quantized or value.is_complex():
            return None
        if value.requires_grad or value.is_conj() or value.is_neg():
            return None
        if torch.empty_like(value).stride() != value.stride():  # not dense
            return None
        host = value.detach().cpu()
        size = host.numel() * host.element_size()
        blobs.append(ctypes.string_at(host.data_ptr(), size) if size else b"")
        dtype = str(value.dtype).removeprefix("torch.")
        entries.append(
            [key, "tensor", dtype, list(value.shape), list(value.stride()), str(value.device), size]
        )
    return entries, blobs


def _rebuilt(sock: socket.socket, entries: list[list[Any]]) -> dict[str, Any]:
    """The dict rank 0 received, rebuilt from ``entries`` and the bytes that follow them."""
    import ctypes

    import torch

    out: dict[str, Any] = {}
    for entry in entries:
        if entry[1] == "value":
            out[entry[0]] = entry[2]
            continue
        key, _, dtype, shape, strides, device, size = entry
        data = _receive_exactly(sock, size) if size else b""
        tensor = torch.empty_strided(shape, strides, dtype=getattr(torch, dtype), device="cpu")
        if size:
            ctypes.memmove(tensor.data_ptr(), data, size)
        out[key] = tensor.to(device) if device != "cpu" else tensor
    return out


class RankZero:
    """The check's end of rank 0's process: :meth:`send` a step's received dict, then
    :meth:`answer` (what rank 0 rebuilt, or its fault); :meth:`close` at the end."""

    def __init__(self, sock: socket.socket, pid: int) -> None:
        self.sock = sock
        self.pid = pid
        self.lost: str | None = None
        self.waiting = False

    def send(self, batch_size: int, index: int, received: dict[Any, Any] | None) -> bool:
        """Send step ``index``'s ``received`` dict; False where it cannot cross or rank 0's
        process is gone or could not load the target (nothing to answer then)."""
        if self.lost is not None or received is None:
            return False
        if self._ended():  # between steps: another process's doing (the target's), not rank 0's
            self.lost = ""
            return False
        crossing = _crossing(received)
        if crossing is None:
            return False
        try:
            _send(self.sock, {"batch_size": batch_size, "entries": crossing[0]}, crossing[1])
        except OSError:
            self.lost = self._how_ended()
            return True  # answered by what ended it
        self.waiting = True
        return True

    def answer(self) -> dict[str, Any] | None:
        """Rank 0's answer to the step sent: ``{"rebuilt_type", "rebuilt"}``, ``{"fault"}``,
        or None where it could not load the target (it is asked nothing more)."""
        if self.waiting:
            self.waiting = False
            try:
                reply = _receive(self.sock)
            except (OSError, EOFError, ValueError):
                self.lost = self._how_ended()
            else:
                if "unavailable" in reply:
                    self.lost = ""
                    return None
                return reply
        if not self.lost:
            return None
        fault = {
            "stage": "pop",
            "side": SIDE,
            "method": None,
            "error_type": "ProcessEnded",
            "message": f"rank 0's process ended ({self.lost}) in rank 0's side of the step",
            "name": None,
            "value": None,
            "where": None,
        }
        self.lost = ""  # said once
        return {"fault": fault}

    def _ended(self) -> bool:
        """Whether rank 0's process has already ended (it is then waited for)."""
        try:
            ended = self.pid == 0 or os.waitpid(self.pid, os.WNOHANG)[0] != 0
        except ChildProcessError:
            ended = True
        if ended:
            self.pid = 0
        return ended

    def _how_ended(self) -> str:
        """How rank 0's process ended (it is waited for a moment)."""
        import time

        deadline = time.monotonic() + _EXIT_WAIT_S
        while True:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return "gone"
            if pid:
                self.pid = 0
                if os.WIFSIGNALED(status):
                    return f"killed by signal {os.WTERMSIG(status)}"
                return f"exit code {os.waitstatus_to_exitcode(status)}"
            if time.monotonic() > deadline:
                return "it stopped answering"
            time.sleep(0.01)

    def close(self) -> None:
        """Rank 0's process told to end (its end of the socket closed), waited for a
        moment, killed where it does not end."""
        import signal
        import time

        with contextlib.suppress(OSError):
            self.sock.close()
        if not self.pid:
            return
        deadline = time.monotonic() + _EXIT_WAIT_S
        while time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                if os.waitpid(self.pid, os.WNOHANG)[0]:
                    return
            time.sleep(0.005)
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


def _serve(sock: socket.socket, target: str, options: ObserverOptions) -> None:
    """Rank 0's process: load ``target`` and its parts, then answer each step until the
    check closes its end."""
    from ppaux.observer.parts import rank0_machinery
    from ppaux.observer.target import load_observer

    loaded: Any = None
    batch = None
    rank0: Any = None
    reqs: list[Any] = []
    while True:
        try:
            header = _receive(sock)
            received = _rebuilt(sock, header["entries"])
        except (OSError, EOFError, ValueError, KeyError, TypeError):
            return  # the check closed its end (or the target wrote on it)
        if loaded is None:
            # Imported once the first step arrived: the check's process imported it whole
            # before (its import-time code never runs in both processes at once).
            try:
                loaded = load_observer(target, rank0_only=True)
                m = rank0_machinery(options)
            except BaseException:  # refused here (it loaded in the check's process)
                _send(sock, {"unavailable": True}, [])
                return
        if header["batch_size"] != batch:
            batch = header["batch_size"]
            try:
                rank0 = loaded.make_rank0()
            except BaseException:  # the check's own rank 0 says where it fails
                _send(sock, {"unavailable": True}, [])
                return
            reqs = m.make_requests(batch)
        _send(sock, _step(received, rank0, reqs, m), [])


def _step(received: dict[str, Any], rank0: Any, reqs: list[Any], m: Any) -> dict[str, Any]:
    """Rank 0's side of one step: pop, describe, copy to the host and consume."""
    from ppaux.observer.drive import HookFailure
    from ppaux.observer.paths import Fault, hook_fault, pp_host, pp_pop
    from ppaux.observer.watched import described

    def moved(fault: Fault) -> dict[str, Any]:
        data = fault.to_json()
        data["side"] = SIDE
        data["message"] = str(data["message"])[:2000]
        return data

    popped = pp_pop(received, rank0, m)
    if popped.fault is not None:
        return {"fault": moved(popped.fault)}
    reply: dict[str, Any] = {"rebuilt_type": type(popped.output).__qualname__}
    try:
        reply["rebuilt"] = described("the output rank 0 rebuilt", popped.output)
    except HookFailure as failure:
        return {"fault": moved(hook_fault(failure, SIDE))}
    host = pp_host(popped, reqs, received.get("next_token_ids"), m)
    if host.fault is not None:
        return {"fault": moved(host.fault)}
    return reply
