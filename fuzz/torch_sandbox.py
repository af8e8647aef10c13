"""torch.load(weights_only=False) in a sandbox: what the real loader makes of a file.

Run as a server (``python fuzz/torch_sandbox.py``): it imports torch, warms the loader up on a
file torch.save wrote, then installs an audit hook (:func:`sys.addaudithook`, which can never be
removed) and answers one request per line on stdin, a file path, with one JSON line on stdout.
Each request is served by a forked child, so nothing one file does can reach the next.

What the hook blocks (the event raises, so the operation never happens) and records:

- ``pickle.find_class`` of any global outside torch's own rebuild list (the names
  ``torch._weights_only_unpickler`` allows: tensor and storage rebuilds, ``OrderedDict``,
  ``torch.Size``, ``torch.device`` ...), so a pickle's hostile call never gets its callable;
- importing any module not yet imported, running or compiling code (``exec``, ``compile``,
  ``marshal.loads``), starting processes (``os.system``, ``subprocess.Popen``, ``os.exec*``,
  ``os.posix_spawn``, ``os.fork``), ``ctypes``, sockets, and writing or removing files;
- ``torch.jit.load`` (and the C++ import it calls): torch.load hands a TorchScript archive to
  it, and TorchScript runs outside Python's audit events, so the sandbox records the dispatch
  and refuses it.

Each answer is ``{"outcome": "loaded" | "refused" | "blocked", "error": ..., "blocked": [...],
"value": ...}``; ``value`` describes what torch read (see :func:`describe`): dict keys in order,
types, tensor dtypes, shapes, strides, storage offsets, a digest of each tensor's values in
native byte order, and each tensor's class, device, ``requires_grad`` and which storage it
shares. Only ever run hostile files here, never in a test process.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
import warnings
from typing import Any

__all__ = ["describe", "main"]

#: Audit events that a loaded file may never cause (prefixes).
FORBIDDEN = (
    "os.system",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "os.fork",
    "os.startfile",
    "os.remove",
    "os.rename",
    "os.unlink",
    "os.rmdir",
    "os.mkdir",
    "os.chmod",
    "os.kill",
    "subprocess.Popen",
    "exec",
    "compile",
    "marshal.loads",
    "ctypes.",
    "builtins.input",
    "shutil.",
    "socket.",
    "webbrowser.",
    "urllib.",
)


def describe(value: Any, depth: int = 0, storages: dict[int, int] | None = None) -> Any:
    """A JSON-able description of a loaded value: the same function describes what torch read
    (here) and what ppaux rebuilt (in the test), so the two can be compared as data.

    Tensors that share a storage (views of one record, as inspect's ``storage_key`` says) are
    told apart from tensors that do not: each tensor names its storage by the order in which
    the description first met it (``storages`` carries the numbering down the value)."""
    import torch

    if storages is None:
        storages = {}
    if depth > 50:
        return ["deep"]
    if isinstance(value, torch.Tensor):
        # What inspect reports of every tensor beyond its values: its class (a Parameter or a
        # plain tensor), device and requires_grad.
        carried = [
            f"{type(value).__module__}.{type(value).__qualname__}",
            str(value.device),
            bool(value.requires_grad),
        ]
        if value.is_sparse or value.is_quantized or value.device.type == "meta":
            return [
                "tensor",
                str(value.dtype),
                list(value.shape),
                value.layout.__repr__(),
                *carried,
            ]
        storage = value.untyped_storage()
        if storage.nbytes():
            carried.append(storages.setdefault(storage.data_ptr(), len(storages)))
        else:
            carried.append("empty")
        data = value.detach()
        if data.is_conj():
            data = data.resolve_conj()
        if data.is_neg():
            data = data.resolve_neg()
        # A fresh tensor of the standard layout: its bytes are the values, in order.
        fresh = torch.empty(tuple(data.shape), dtype=data.dtype).copy_(data)
        raw = fresh.reshape(-1).view(torch.uint8) if data.numel() else None
        digest = hashlib.sha256(bytes(raw.tolist()) if raw is not None else b"").hexdigest()
        return [
            "tensor",
            str(value.dtype),
            list(value.shape),
            list(value.stride()),
            value.storage_offset(),
            digest[:16],
            *carried,
        ]
    # An OrderedDict is described as a dict and a torch.Size as a tuple: ppaux's model keeps
    # them so (same items, same order), and reports name them so.
    if isinstance(value, dict):
        return [
            "dict",
            [
                [describe(k, depth + 1, storages), describe(v, depth + 1, storages)]
                for k, v in value.items()
            ],
        ]
    if isinstance(value, (list, tuple)):
        kind = "list" if isinstance(value, list) else "tuple"
        return [kind, [describe(v, depth + 1, storages) for v in value]]
    if isinstance(value, str):
        return ["str", value.encode("utf-8", "surrogatepass").hex()]
    if isinstance(value, bool) or value is None:
        return [type(value).__name__, value]
    if isinstance(value, int):
        return ["int", hex(value)]
    if isinstance(value, float):
        return ["float", value.hex()]
    if isinstance(value, bytes):
        return ["bytes", value.hex()]
    return ["object", f"{type(value).__module__}.{type(value).__qualname__}"]


class _Hook:
    def __init__(self, allowed: set[str]) -> None:
        self.allowed = allowed
        self.active = False
        self.blocked: list[str] = []
        self.modules: set[str] = set()

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.active:
            return
        if event == "pickle.find_class":
            name = f"{args[0]}.{args[1]}"
            if name not in self.allowed:
                self._block(f"global {name}")
        elif event == "import":
            module = args[0] if args else ""
            if isinstance(module, str) and module not in sys.modules:
                self._block(f"import {module}")
        elif event == "open":
            mode = args[1] if len(args) > 1 else "r"
            flags = args[2] if len(args) > 2 else 0
            writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)
            )
            if writes:
                self._block(f"open {args[0]!r} for writing")
        elif event.startswith(FORBIDDEN):
            self._block(event)

    def _block(self, what: str) -> None:
        self.blocked.append(what)
        self.active = False  # recording must not trigger the hook again
        try:
            raise RuntimeError(f"ppaux sandbox blocked {what}")
        finally:
            self.active = True


def _serve(path: str, hook: _Hook, out: Any) -> None:
    import torch

    hook.blocked = []
    answer: dict[str, Any] = {"outcome": "loaded", "error": None, "blocked": [], "value": None}
    hook.active = True
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # As a user loads: no map_location (a CUDA tensor on this CPU machine is refused,
            # and the harness counts that refusal as the machine's, not the file's).
            loaded = torch.load(path, weights_only=False)
    except BaseException as exc:
        hook.active = False
        answer["outcome"] = "refused"
        answer["error"] = f"{type(exc).__name__}: {str(exc)[:500]}"
    else:
        hook.active = False
        try:
            answer["value"] = describe(loaded)
        except BaseException as exc:
            answer["error"] = f"describe: {type(exc).__name__}: {exc}"[:500]
    answer["blocked"] = hook.blocked
    if hook.blocked:
        answer["outcome"] = "blocked"
    out.write(json.dumps(answer) + "\n")
    out.flush()


def main() -> None:
    """Serve requests (one path a line) until stdin closes."""
    import torch
    import torch._weights_only_unpickler as restricted

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        buffer = io.BytesIO()
        # A bytes value: protocol 2 writes it as _codecs.encode(text, 'latin1'), whose codec
        # is imported on first use, as it is for any file holding bytes.
        warm = {"a": torch.arange(3), "b": [torch.ones(2, dtype=torch.float16)], "c": b"\x00"}
        torch.save(warm, buffer)
        buffer.seek(0)
        torch.load(buffer, weights_only=False)  # imports what loading imports, once
        describe(torch.load(io.BytesIO(buffer.getvalue()), weights_only=False))
    allowed = set(restricted._get_allowed_globals())

    def refuse_torchscript(*args: Any, **kwargs: Any) -> Any:
        hook._block("torch.jit.load (a TorchScript archive)")
        raise RuntimeError("unreachable")

    torch.jit.load = refuse_torchscript  # type: ignore[assignment]
    torch._C.import_ir_module = refuse_torchscript
    torch._C.import_ir_module_from_buffer = refuse_torchscript
    hook = _Hook(allowed)
    sys.addaudithook(hook)
    out = sys.stdout
    for line in sys.stdin:
        path = line.rstrip("\n")
        if not path:
            continue
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            with os.fdopen(write, "w") as pipe:
                try:
                    _serve(path, hook, pipe)
                finally:
                    os._exit(0)
        os.close(write)
        with os.fdopen(read) as pipe:
            reply = pipe.read()
        _, status = os.waitpid(pid, 0)
        if not reply:
            reply = json.dumps(
                {
                    "outcome": "refused",
                    "error": f"the loader died ({os.waitstatus_to_exitcode(status)})",
                    "blocked": [],
                    "value": None,
                }
            )
        out.write(reply.rstrip("\n") + "\n")
        out.flush()


if __name__ == "__main__":
    main()
