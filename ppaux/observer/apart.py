"""Rank 0 in a process of its own, as sglang's rank 0 is another process than its last stage.

State the last stage's observer keeps at module or class level (``after_sample`` storing a
tensor in a global that ``from_pp_tensors`` reads back) is never there (another host under
multi-node). So, before it imports the target, the check's child starts a fresh interpreter
(:mod:`.fresh`; where it cannot, or under the test suite's hook, it forks a process:
:func:`start`) that imports the target itself (at the first question, once the child loaded it)
and runs rank 0's side alone (:class:`~ppaux.observer.rankzero.RankZeroSide`): rank 0's
observer, its pop, its output's ``copy_to_host`` and ``consume`` into rank 0's requests, and
the descriptions of those. None of rank 0's methods runs in the child.

Per step, the dict rank 0 received crosses to it as bytes (:class:`RankZero`), as sglang's wire
carries it: each plain dense tensor as its dtype, shape, strides, device and memory; a JSON
scalar as itself; anything else pickled, as sglang's ``send_tensor_dict`` pickles what is not a
tensor (unpickled in rank 0's process, which runs the target's code anyway; never in the
parent). Every other question (make rank 0's observer, describe its requests, where its methods
are) and its answer are JSON. Rank 0's process ending (an exit, a signal, answers it cannot
make) is rank 0's fault at the step it was at: "rank 0's process ended (exit code 3)"; it hangs
as the child does, until the parent's ``--timeout`` kills the child's process group, which it
is in; a fork of it that reaches one of the target's methods ends there, told to the parent
as the child's forks are. Runs in the check's child (:mod:`.worker`); imports torch when used.
"""

from __future__ import annotations

import contextlib
import os
import struct
from collections.abc import Callable
from json import JSONDecoder, JSONEncoder
from typing import TYPE_CHECKING, Any

from ppaux.observer.crossing import crossing

if TYPE_CHECKING:
    import socket

    from ppaux.observer.options import ObserverOptions

__all__ = [
    "Load",
    "RankZero",
    "how_loaded",
    "loader",
    "ready",
    "send",
    "serve",
    "start",
    "threads_left",
]

#: What makes rank 0's side in its process: the side, or why it could not be made.
Load = Callable[[], tuple[Any, "str | None"]]

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
    load: Load,
    how: dict[str, Any],
    first: Callable[[], None],
    hide: Callable[[int], int],
    announce: Callable[[str | None, Any], None],
) -> RankZero | None:
    """Fork rank 0's process, which makes rank 0's side with ``load`` at the first question
    (see :func:`loader`) and describes values under the bounds ``how`` names (``budget``,
    ``nesting``: see :func:`~ppaux.observer.digests.digest_budget`); ``first`` runs in it
    before anything else (what it must not keep of this process's); each end of the socket
    between the two is moved by ``hide`` (to a descriptor the target is unlikely to write on);
    ``announce`` tells the parent which of the target's methods it runs. None where the
    system cannot fork."""
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
            serve(socket.socket(fileno=hide(theirs.detach())), load, how, announce)
            code = 0
        finally:
            os._exit(code)
    theirs.close()
    return RankZero(socket.socket(fileno=hide(ours.detach())), pid)


def loader(
    target: str,
    options: ObserverOptions,
    how: dict[str, Any],
    announce: Callable[[str | None, Any], None],
) -> Load:
    """What makes rank 0's side by importing ``target`` in rank 0's process, as ``how`` says
    (``rank0_only``, see :func:`~ppaux.observer.target.load_observer`)."""
    return lambda: _load(target, options, bool(how.get("rank0_only")), announce)


def threads_left() -> list[str]:
    """The names of the threads of this process that the target started and left running
    (not daemons, not torch's own: :mod:`.torch_threads`), at most 20."""
    import threading

    from ppaux.observer.torch_threads import is_torchs

    return [
        thread.name
        for thread in threading.enumerate()
        if thread is not threading.main_thread()
        and thread.is_alive()
        and not thread.daemon
        and not is_torchs(thread)
    ][:20]


def how_loaded(request: dict[str, Any]) -> dict[str, Any]:
    """How rank 0's process loads the target of the child's ``request`` and describes values:
    as the child loads it (only ``from_pp_tensors`` asked of an observer whose outputs are
    given), under the same bounds."""
    asked = request.get("limits", {})
    return {
        "rank0_only": request.get("outputs") is not None,
        "budget": int(asked.get("max_digested_items", 0)) or None,
        "nesting": int(asked.get("max_value_nesting", 0)) or None,
        "elements": int(asked.get("max_digested_elements", 0)) or None,
    }


def ready(sock: socket.socket) -> None:
    """Rank 0's fresh process (:mod:`.fresh`) says it has imported what comes before the
    target (:meth:`RankZero.wait_ready`)."""
    send(sock, {"ready": True}, [])


def send(sock: socket.socket, header: dict[str, Any], blobs: list[bytes]) -> None:
    """One message to the other process: ``header``, length-prefixed JSON, then ``blobs``."""
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


def _rebuilt(sock: socket.socket, entries: list[list[Any]]) -> dict[Any, Any]:
    """The dict rank 0 received, rebuilt from ``entries`` and the bytes that follow them
    (all read before anything is rebuilt, so that a failure leaves nothing unread)."""
    import ctypes
    import pickle

    import torch

    from ppaux.observer.drive import release_grad_mode

    sizes = [_size(entry) for entry in entries]
    blobs = [_receive_exactly(sock, size) if size else b"" for size in sizes]
    out: dict[Any, Any] = {}
    for entry, data in zip(entries, blobs, strict=True):
        if entry[1] == "value":
            out[entry[0]] = entry[2]
        elif entry[1] == "pickled":
            value = pickle.loads(data)  # the target's own process: its code may run
            if entry[0] is None:
                return dict(value)
            out[entry[0]] = value
        else:
            key, _, dtype, shape, strides, device, size = entry
            place = "meta" if device == "meta" else "cpu"
            with release_grad_mode():  # sglang's recv_tensor_dict runs inside event_loop_pp
                tensor = torch.empty_strided(
                    shape, strides, dtype=getattr(torch, dtype), device=place
                )
                if size:
                    ctypes.memmove(tensor.data_ptr(), data, size)
                out[key] = tensor.to(device) if place == "cpu" and device != "cpu" else tensor
    return out


def _size(entry: list[Any]) -> int:
    if entry[1] == "pickled":
        return int(entry[2])
    if entry[1] == "tensor":
        return int(entry[6])
    return 0


class RankZero:
    """The check's end of rank 0's process, answering as
    :class:`~ppaux.observer.rankzero.RankZeroSide` does: :meth:`send` a step's received dict,
    then :meth:`answer`; :meth:`ask` any other question; :meth:`close` at the end. Once the
    process is gone, every answer says so."""

    def __init__(self, sock: socket.socket, pid: int) -> None:
        self.sock = sock
        self.pid = pid
        self.lost: str | None = None
        self.local: dict[str, Any] | None = None
        self.crossing: tuple[list[list[Any]], list[bytes]] | None = None
        #: A fresh process's ``Popen`` (:mod:`.fresh`), kept while its pid is waited for here.
        self.process: Any = None
        #: Seconds an answer is waited for, and why it hung (an in-hand copy: :mod:`.handhang`).
        self.wait_s: float | None = None
        self.hung = ""
        #: Where rank 0's process said it was in the step under way (:func:`_answer`).
        self.phase: str | None = None

    def wait_ready(self) -> None:
        """Wait for a fresh process (:mod:`.fresh`) to say it is ready; where it ended
        first, every answer says how."""
        self._reply()

    def send(self, received: dict[Any, Any]) -> None:
        """Take what rank 0 received at this step as it crosses (its bytes, now: the
        single stage's copy_to_host may change the tensors in place next); it is sent by
        :meth:`answer`, so that rank 0's methods never run while the child's do (the hook
        slot names the one that runs)."""
        from ppaux.observer.drive import message_line
        from ppaux.observer.paths import Fault

        self.local = None
        self.crossing = None
        try:
            self.crossing = crossing(received)
        except Exception as exc:  # a value sglang's wire could not pickle either
            fault = Fault("wire", type(exc).__name__, message_line(exc), "sender")
            self.local = {"fault": fault.to_json()}

    def answer(self) -> dict[str, Any]:
        """Rank 0's answer to the step taken by :meth:`send` (see ``RankZeroSide.answer``)."""
        from ppaux.observer.rankzero import ended_fault

        if self.local is not None:
            return self.local
        crossing, self.crossing = self.crossing, None
        if self.lost is None and crossing is not None:
            try:
                send(self.sock, {"op": "step", "entries": crossing[0]}, crossing[1])
            except OSError:
                self.lost = self._how_ended()
        reply = self._reply()
        if reply is not None:
            return reply
        return {"fault": ended_fault(self.lost or "gone", self.phase)}

    def threads(self) -> list[str]:
        """The threads the target left running in rank 0's process (none once it is gone)."""
        found = self.ask("threads", {}).get("threads")
        return [str(name)[:200] for name in found] if isinstance(found, list) else []

    def ask(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        """Rank 0's answer to ``op`` (see ``RankZeroSide.ask``)."""
        if self.lost is None:
            try:
                send(self.sock, {"op": op, **args}, [])
            except OSError:
                self.lost = self._how_ended()
        reply = self._reply()
        if reply is not None:
            return reply
        message = f"rank 0's process ended ({self.lost or 'gone'})"
        if op == "begin":
            return {"reason": message}
        if op == "made":
            return {"events": []}
        if op == "locations":
            return {"rank0": {}}
        lost = {"what": "rank 0's process", "error_type": "ProcessEnded", "message": message}
        return {"undescribable": {**lost, "location": None}}

    def _reply(self) -> dict[str, Any] | None:
        if self.lost is not None:
            return None
        try:
            self.sock.settimeout(self.wait_s)
            while len(message := _receive(self.sock)) == 1 and "phase" in message:
                self.phase = str(message["phase"])[:20]  # where rank 0 is in the step
            self.phase = "answered"
            return message
        except TimeoutError:  # an in-hand copy that gave no answer in time: killed
            from ppaux.observer.handhang import killed

            self.lost = killed(self)
            return None
        except (OSError, EOFError, ValueError):
            self.lost = self._how_ended()
            return None

    def _how_ended(self) -> str:
        """How rank 0's process ended (it is waited for a moment)."""
        import signal
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
                    number = os.WTERMSIG(status)
                    with contextlib.suppress(ValueError):
                        return f"killed by signal {signal.Signals(number).name}"
                    return f"killed by signal {number}"
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


def serve(
    sock: socket.socket,
    load: Load,
    how: dict[str, Any],
    announce: Callable[[str | None, Any], None],
) -> None:
    """Rank 0's process: make its side with ``load`` at the first question, then answer
    each until the check closes its end (under the child's bounds: see :func:`start`)."""
    from ppaux.observer.digests import digest_budget

    if how.get("budget") is None:
        _answer(sock, load, announce)
        return
    with digest_budget(how["budget"], how.get("nesting"), how.get("elements")):
        _answer(sock, load, announce)


def _answer(sock: socket.socket, load: Load, announce: Callable[[str | None, Any], None]) -> None:
    side: Any = None
    refused: str | None = None
    while True:
        try:
            header = _receive(sock)
            op = header.pop("op")
        except (OSError, EOFError, ValueError, KeyError, TypeError):
            return  # the check closed its end (or the target wrote on it)
        if op == "threads":  # the last question: the threads the target left running here
            send(sock, {"threads": threads_left()}, [])
            continue
        if side is None and refused is None:
            # Loaded at the first question: the check's process loaded it whole before (its
            # import-time code never runs in both processes at once).
            side, refused = load()
        reply: dict[str, Any]
        if refused is not None:
            reply = {"reason": refused} if op == "begin" else {"refused": refused}
        elif op != "step":
            reply = side.ask(op, header)
        else:
            side.tell = lambda phase: send(sock, {"phase": phase}, [])
            side.tell("pop")
            try:
                received = _rebuilt(sock, header["entries"])
            except (OSError, EOFError):
                return
            except Exception as exc:  # the target's class could not be rebuilt here
                reply = {"fault": _unreceived(exc)}
            else:
                side.send(received)
                reply = side.answer()
        # Between the target's methods: a fork of this process made in one of them ends
        # here, said to the parent, before it could answer for this process.
        announce(None, None)
        send(sock, reply, [])


def _load(
    target: str,
    options: ObserverOptions,
    rank0_only: bool,
    announce: Callable[[str | None, Any], None],
) -> tuple[Any, str | None]:
    """Rank 0's side of ``target``, or why it could not be made here."""
    from ppaux.observer.drive import message_line
    from ppaux.observer.endings import LOADING
    from ppaux.observer.parts import rank0_machinery
    from ppaux.observer.rankzero import RankZeroSide
    from ppaux.observer.target import TargetError, load_observer

    announce(LOADING, None)
    try:
        loaded = load_observer(target, rank0_only=rank0_only)
        side = RankZeroSide(loaded.make_rank0, rank0_machinery(options))
    except TargetError as exc:
        return None, f"rank 0's process could not load the target: {exc.reason}"
    except BaseException as exc:  # the target's own, as it ran here
        line = message_line(exc)
        return None, f"rank 0's process could not load the target: {type(exc).__name__}: {line}"
    finally:
        announce(None, None)
    return side, None


def _unreceived(exc: BaseException) -> dict[str, Any]:
    from ppaux.observer.drive import message_line
    from ppaux.observer.paths import Fault

    return Fault("wire", type(exc).__name__, message_line(exc), "receiver").to_json()
