"""sglang's own PP wire: ``GroupCoordinator.send_tensor_dict`` to ``recv_tensor_dict``.

The ``torch-distributed`` transport (:mod:`ppaux.replay.distributed`) sends the message with
ppaux's re-implementation of sglang's wire. This one runs sglang's code itself: both processes
import ``sglang.srt.distributed.parallel_state`` from the installed sglang (or from a tree given
with ``--sglang-path``, whose imports must resolve), join a default gloo process group on
loopback and build a real ``GroupCoordinator`` over ranks ``[0, 1]`` (every optional communicator
off: on CPU only gloo is used; NCCL joins for CUDA tensors). The last stage (this process, PP
rank 1) calls ``send_tensor_dict(message, dst=0)``; the receiver (a child process, PP rank 0)
calls ``recv_tensor_dict(src=1)`` and pops with the implementation asked for. The control
messages and the reply travel on ppaux's own channel, as in the ``torch-distributed`` transport.

Every release's scheduler passes its attention-TP group to both calls by default
(``all_gather_group=self.attn_tp_group``, :func:`ppaux.sglang.releases.output_group`), and with a
group sglang slices every tensor (``reshape(size, -1)[rank]``) even when the group has one rank.
With ``--all-gather 1`` (the default) both processes build a real one-rank attention-TP
``GroupCoordinator`` and pass it, as the scheduler does; ``--all-gather 0`` passes none.
Attention-TP all-gather over N > 1 ranks needs N ranks on each stage; this transport runs one
rank per stage, so that part is emulated: before sglang's send, every tensor whose element count
N divides is made contiguous, which is what the slicing on the sender and the all-gather on the
receiver do to it, and no group is passed. The result says so (``all_gather_emulated``).

This module imports torch; sglang is imported when the wire starts.
"""

from __future__ import annotations

import contextlib
import datetime
import importlib.util
import inspect
import os
import sys
import traceback
import types
import warnings
from typing import Any, TypeVar

import torch
import torch.distributed as dist

from ppaux.replay.distributed import DistributedWire, WireSetupError
from ppaux.replay.receiver import Receive, serve
from ppaux.replay.wire import WireError, WireStats
from ppaux.suggestions import Setting, Suggestion

__all__ = ["RUNTIME_MODULE", "SglangWire", "import_runtime"]

#: The group a wire passes on as it was given (sglang's GroupCoordinator).
_Group = TypeVar("_Group")

#: The module of sglang that holds the wire (``GroupCoordinator``).
RUNTIME_MODULE = "sglang.srt.distributed.parallel_state"

# PP ranks of sglang's group: rank 0 is the first stage (receiver), rank 1 the last (sender).
_FIRST, _LAST = 0, 1


def _put_on_path(sglang_path: str | None) -> None:
    """Put ``sglang_path`` first on ``sys.path`` (a :class:`WireSetupError` if not a directory)."""
    if sglang_path is None:
        return
    if not os.path.isdir(sglang_path):
        raise WireSetupError(
            f"{sglang_path}: not a directory (the sglang transport needs an unpacked sglang "
            "tree whose imports resolve)"
        )
    path = os.path.abspath(sglang_path)
    if path not in sys.path:
        sys.path.insert(0, path)


def import_runtime(sglang_path: str | None) -> Any:
    """Import sglang's ``parallel_state``; ``sglang_path`` is put first on ``sys.path``.

    Raises :class:`WireSetupError` naming the import that failed and where sglang made it.
    """
    _put_on_path(sglang_path)
    try:
        with warnings.catch_warnings():
            # sglang's third-party imports warn about missing GPUs and the like; not ours.
            warnings.simplefilter("ignore")
            import importlib

            module = importlib.import_module(RUNTIME_MODULE)
    except Exception as exc:  # any failure of sglang's import chain is reported, not raised
        raise WireSetupError(_import_failure(exc)).suggest(*_way_out(exc)) from None
    if not hasattr(module, "GroupCoordinator"):
        raise WireSetupError(f"{module.__file__}: has no GroupCoordinator")
    return module


def _import_failure(exc: BaseException) -> str:
    """'sglang's runtime cannot be imported: No module named 'x' (imported at FILE:LINE)'."""
    message = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if not isinstance(exc, ImportError):
        message = f"{type(exc).__name__}: {message}"
    frames = traceback.extract_tb(exc.__traceback__)
    # The frame that made the failing import: sglang's (or a package it imports), not ours.
    inside = [
        f
        for f in frames
        if "importlib" not in f.filename and "<frozen" not in f.filename and f.filename != __file__
    ]
    where = f" (at {inside[-1].filename}:{inside[-1].lineno})" if inside else ""
    missing = "" if _way_out(exc) else "; install the packages the tree imports"
    return f"sglang's runtime ({RUNTIME_MODULE}) cannot be imported: {message}{where}{missing}"


def _way_out(exc: BaseException) -> tuple[Suggestion, ...]:
    """Where to get what is missing, when it is sglang itself: an unpacked tree to give."""
    missing = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    if missing is not None and (missing == "sglang" or missing.startswith("sglang.")):
        return (
            Setting(
                "sglang_path",
                what="an unpacked sglang release wheel (unzip sglang-X.whl -d DIR) whose own "
                "imports resolve",
            ),
        )
    return ()


def _coordinator(
    runtime: types.ModuleType,
    rank: int,
    backend: str,
    group_ranks: list[list[int]] | None = None,
    name: str = "ppaux_pp",
) -> Any:
    """A real ``GroupCoordinator`` over ``group_ranks`` (default: the PP group, ranks [0, 1]),
    optional communicators off. Both processes build the same groups in the same order."""
    parameters = inspect.signature(runtime.GroupCoordinator.__init__).parameters
    kwargs: dict[str, Any] = {
        "group_ranks": group_ranks or [[_FIRST, _LAST]],
        "local_rank": rank,
        "torch_distributed_backend": backend,
        "group_name": name,
    }
    for name in parameters:
        if name.startswith("use_"):
            kwargs[name] = False
    return runtime.GroupCoordinator(**kwargs)


def _join_world(store: dist.Store, rank: int, timeout: datetime.timedelta) -> None:
    """The default process group sglang's ``GroupCoordinator`` builds its groups from."""
    if dist.is_initialized():
        raise WireSetupError(
            "a torch.distributed default group already exists in this "
            "process; the sglang transport needs its own"
        )
    dist.init_process_group(
        "gloo", store=dist.PrefixStore("world", store), rank=rank, world_size=2, timeout=timeout
    )


def _attention_tp(runtime: types.ModuleType, rank: int, backend: str) -> Any:
    """The one-rank attention-TP group of this stage, as the scheduler passes it."""
    return _coordinator(runtime, rank, backend, [[_FIRST], [_LAST]], "ppaux_attn_tp")


def _given_group(group: _Group, all_gather_size: int) -> _Group | None:
    """What this wire passes as ``all_gather_group``: the real one-rank group for size 1, none
    for 0 (no group) or for a larger size (whose slicing is emulated before the send)."""
    return group if all_gather_size == 1 else None


def _gathered(tensor_dict: dict[str, Any], size: int) -> dict[str, Any]:
    """What the all-gather path does to each tensor it slices: a contiguous copy."""
    out = {}
    for key, value in tensor_dict.items():
        if isinstance(value, torch.Tensor) and value.numel() and value.numel() % size == 0:
            value = value.contiguous()
        out[key] = value
    return out


class SglangWire(DistributedWire):
    """The sending end: this process is sglang's last PP stage, the receiver is started."""

    child_module = "ppaux.replay.sglang_wire"
    transport = "sglang"

    def __init__(
        self,
        device: torch.device,
        *,
        timeout_s: float = 60.0,
        all_gather_size: int = 1,
        sglang_path: str | None = None,
    ) -> None:
        super().__init__(device, timeout_s=timeout_s, all_gather_size=all_gather_size)
        self.sglang_path = sglang_path
        self._group: Any = None
        self._attention_tp: Any = None
        _put_on_path(sglang_path)
        # The receiver starts now, before this process imports sglang: the two processes
        # import sglang's runtime (seconds each) at the same time instead of one after the
        # other. Where sglang cannot be found the import below fails and nothing is started.
        if importlib.util.find_spec("sglang") is not None:
            self._spawn()
        try:
            self.runtime = import_runtime(sglang_path)
        except BaseException:
            self._reset()
            raise

    @property
    def sglang_file(self) -> str:
        """The file of sglang's wire that runs."""
        return str(self.runtime.__file__)

    def _child_config(self) -> dict[str, Any]:
        return {"sglang_path": self.sglang_path}

    def _joined(self, store: dist.Store) -> None:
        _join_world(store, _LAST, self.timeout)
        backend = "nccl" if self.device.type == "cuda" else "gloo"
        self._group = _coordinator(self.runtime, _LAST, backend)
        self._attention_tp = _attention_tp(self.runtime, _LAST, backend)

    def _left(self) -> None:
        self._group = None
        self._attention_tp = None
        if dist.is_initialized():
            with contextlib.suppress(RuntimeError, ValueError):
                dist.destroy_process_group()

    def _check(self, sent: dict[str, Any]) -> None:
        """Nothing of ppaux's runs before sglang's own send: it finds its own faults."""

    def _send_message(
        self, channel: object, sent: dict[str, Any], stats: WireStats, ready: object
    ) -> None:
        message = _gathered(sent, self.all_gather_size) if self.all_gather_size > 1 else sent
        tensors = [value for value in message.values() if isinstance(value, torch.Tensor)]
        try:
            with warnings.catch_warnings():
                # sglang's send_object warns about a read-only buffer on every call.
                warnings.simplefilter("ignore")
                self._group.send_tensor_dict(
                    message,
                    dst=_FIRST,
                    all_gather_group=_given_group(self._attention_tp, self.all_gather_size),
                )
        except Exception as exc:  # sglang's own failure on the sender is the result
            lines = str(exc).strip().splitlines()
            raise WireError(
                "sender", type(exc).__name__, lines[0] if lines else "", metadata_sent=True
            ) from None
        for tensor in tensors:
            stats.tensors += 1 if tensor.numel() else 0
            stats.empty += 0 if tensor.numel() else 1
            stats.tensor_bytes += tensor.numel() * tensor.element_size()


# ----------------------------------------------------------------------------------------------
# The receiving process


def _receiver_joined(store: dist.Store, config: dict[str, Any]) -> Receive:
    runtime = import_runtime(config.get("sglang_path"))
    timeout = datetime.timedelta(seconds=config["timeout_s"])
    _join_world(store, _FIRST, timeout)
    backend = "nccl" if config["device"].startswith("cuda") else "gloo"
    group = _coordinator(runtime, _FIRST, backend)
    attention_tp = _attention_tp(runtime, _FIRST, backend)

    def receive(channel: object, control: dict[str, Any]) -> dict[str, Any]:
        given = _given_group(attention_tp, int(control.get("all_gather", 1)))
        received = group.recv_tensor_dict(src=_LAST, all_gather_group=given)
        if received is None:
            raise WireError("receiver", "RuntimeError", "recv_tensor_dict returned None")
        return dict(received)

    return receive


def _receiver_implementation(name: str, cache: dict[str, Any], config: dict[str, Any]) -> Any:
    """sglang's own module as imported by the runtime, or ppaux's reference transport."""
    if name not in cache:
        import importlib

        if name == "sglang":
            cache[name] = importlib.import_module("sglang.srt.sampling.sampling_observer_pp")
        else:
            cache[name] = importlib.import_module("ppaux.replay.transport")
    return cache[name]


def _receiver_main(argv: list[str]) -> int:
    """The receiving process: sglang's runtime is imported first, before joining, so that its
    import overlaps with the sender's (the sender waits for the join, not for this import);
    a runtime that cannot be imported is one line on stderr and exit status 4, which the
    sender reports as the receiver's exit before joining."""
    import json

    config = json.loads(argv[1])
    try:
        import_runtime(config.get("sglang_path"))
    except WireSetupError as exc:
        print(exc, file=sys.stderr)
        return 4
    return serve(config, joined=_receiver_joined, implementation=_receiver_implementation)


if __name__ == "__main__":
    status = _receiver_main(sys.argv)
    # The receiver's work is done (what failed is in the store or on stderr): leave without the
    # interpreter's teardown, whose collections of sglang's ~5,000 modules take 1-2 s that the
    # sender would spend waiting in close().
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
