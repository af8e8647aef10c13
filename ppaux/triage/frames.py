"""What a traceback's frames say: whose code each frame is, where sglang is installed, which
releases its line numbers fit, and the frames that are nobody's but the deployment's own.

A frame is sglang's when its path has a ``sglang`` directory (the last one: ``.../site-packages/
sglang/srt/...`` is a wheel, ``.../python/sglang/srt/...`` a source checkout); torch's when it
has a ``torch`` directory; ppaux's for a ``ppaux`` directory (its capture wraps sglang's
methods); the standard library's for ``<frozen ...>`` and files under ``lib/pythonX.Y/`` outside
``site-packages``/``dist-packages``. Anything else is *out of tree*.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ppaux.patterns import lazy
from ppaux.sglang import fitting_releases
from ppaux.triage.records import Frame

__all__ = [
    "Build",
    "build_of",
    "frame_owner",
    "in_scheduler_process",
    "in_sglang_server",
    "out_of_tree",
    "raised_by_capture",
]

_STDLIB = lazy(r"[/\\]lib(?:64)?[/\\]python3(?:\.\d+)?[/\\]")
_PACKAGES = lazy(r"[/\\](?:site|dist)-packages[/\\]")


def _parts(path: str) -> list[str]:
    return re.split(r"[/\\]", path)


#: What sglang's package holds (0.5.19 - 0.5.23 wheels): a directory named ``sglang`` followed
#: by one of these is the package, wherever it is.
_SGLANG_CONTENTS = frozenset(
    {"srt", "multimodal_gen", "kernels", "test", "benchmark", "lang", "cli", "api", "jit_kernel"}
)


def _sglang_index(parts: list[str]) -> int | None:
    """Where sglang's package directory is in a frame's path: a ``sglang`` directory in
    site-packages/dist-packages, in a checkout's ``python/``, or holding one of sglang's
    subpackages. A deployment's own directory that is merely called ``sglang`` (a Docker
    image's ``/sgl-workspace/sglang/my_scheduler.py``) is not."""
    for index in range(len(parts) - 2, -1, -1):
        if parts[index] != "sglang":
            continue
        before = parts[index - 1] if index else ""
        if before in ("site-packages", "dist-packages", "python"):
            return index
        if parts[index + 1] in _SGLANG_CONTENTS and index + 2 < len(parts):
            return index
    return None


#: Packages sglang's wheels require (``Requires-Dist`` of 0.5.23, by import name) and torch's
#: triton: what sglang calls on its own, never a deployment's plugin.
_DEPENDENCIES = frozenset(
    {
        "compressed_tensors", "cuda", "cutlass", "deep_ep", "deep_gemm", "einops", "fastapi",
        "flash_attn", "flash_mla", "flashinfer", "gguf", "huggingface_hub", "llguidance",
        "mistral_common", "msgspec", "numba", "numpy", "nvidia", "openai_harmony", "orjson",
        "outlines", "PIL", "psutil", "pydantic", "quack", "safetensors", "scipy", "sentencepiece",
        "setproctitle", "sgl_kernel", "sglang_kernel", "starlette", "tilelang", "tiktoken", "timm",
        "tokenizers", "torch_memory_saver", "torchaudio", "torchvision", "transformers", "triton",
        "tvm_ffi", "uvicorn", "uvloop", "xgrammar", "zmq",
    }
)  # fmt: skip


def frame_owner(frame: Frame) -> str:
    """'sglang', 'torch', 'ppaux', 'dependency' (a package sglang requires, installed beside
    it), 'stdlib' or 'other'."""
    path = frame.file
    if path.startswith("<"):
        return "stdlib"
    parts = _parts(path)
    if _sglang_index(parts) is not None:
        return "sglang"
    for owner in ("ppaux", "torch"):
        if owner in parts[:-1]:
            return owner
    for index, part in enumerate(parts[:-2]):
        if part in ("site-packages", "dist-packages") and parts[index + 1] in _DEPENDENCIES:
            return "dependency"
    if _STDLIB.search(path) and not _PACKAGES.search(path):
        return "stdlib"
    return "other"


def _sglang_relative(path: str) -> tuple[str, str]:
    """(directory that holds the ``sglang`` package, path relative to the package)."""
    parts = _parts(path)
    index = _sglang_index(parts)
    if index is None:
        raise ValueError(f"not a frame of sglang: {path}")
    return "/".join(parts[:index]) or "/", "/".join(parts[index + 1 :])


@dataclass(frozen=True)
class Build:
    """The sglang a traceback ran: ``kind`` 'wheel', 'source checkout', 'other layout' or
    'elided' (the paste cut the directory off: ``.../sglang/srt/...``);
    ``where`` the directory holding the package; ``fits`` the releases whose lines fit every
    frame the table can judge (None when it can judge none)."""

    kind: str
    where: str
    fits: tuple[str, ...] | None
    judged: int

    def fits_text(self) -> str:
        """'its lines fit 0.5.22, 0.5.23', or why no release can be named."""
        if self.fits is None:
            return "no frame of it is one the release table can judge"
        if not self.fits:
            return (
                "its lines fit no release in ppaux's table (a modified build, or a newer release)"
            )
        return "its lines fit " + ", ".join(self.fits)


#: A directory a paste elided (``.../sglang/srt/...``): where sglang was is not in the log.
_ELIDED = lazy(r"^(?:\.{3}|\u2026)(?:/|$)")


def build_of(frames: Iterable[Frame]) -> Build | None:
    """The sglang build the frames come from, or None when no frame is sglang's."""
    where = None
    fits: set[str] | None = None
    judged = 0
    order: list[str] = []
    for frame in frames:
        if frame_owner(frame) != "sglang":
            continue
        directory, relative = _sglang_relative(frame.file)
        where = where or directory
        found = fitting_releases(relative, frame.line, frame.function)
        if found is None:
            continue
        judged += 1
        order = order or list(found)
        fits = set(found) if fits is None else fits & set(found)
    if where is None:
        return None
    if _ELIDED.match(where):  # the one who pasted it cut the directory off
        kind = "elided"
    elif _PACKAGES.search(where + "/"):
        kind = "wheel"
    elif where.endswith("/python") or where == "python":
        kind = "source checkout"
    else:
        kind = "other layout"
    ordered = None if fits is None else tuple(v for v in order if v in fits)
    return Build(kind, where, ordered, judged)


def out_of_tree(frames: Iterable[Frame]) -> list[Frame]:
    """The frames that are neither sglang's, torch's, ppaux's nor the standard library's and
    that sglang called (inner to its outermost frame: a Scheduler subclass, a plugin, an
    observer), innermost first. Frames that called sglang (a launcher) are not culprits."""
    listed = list(frames)
    first = next((i for i, f in enumerate(listed) if frame_owner(f) == "sglang"), None)
    if first is None:
        return []
    return [f for f in reversed(listed[first + 1 :]) if frame_owner(f) == "other"]


#: sglang's files of what a scheduler process runs: its event loops and their mixins, the TP
#: worker, the model runner, the PP transport, sampling and its observers.
_SCHEDULER_FILES = lazy(
    r"^srt/(?:managers/(?:scheduler|tp_worker)[^/]*\.py|"
    r"model_executor/|distributed/|sampling/)"
)


def in_scheduler_process(frames: Iterable[Frame]) -> bool:
    """True when a frame is sglang's scheduler-process code (or ppaux's capture in it): a
    traceback a scheduler raised even where no prefix says so, unlike an HTTP request's."""
    for frame in frames:
        owner = frame_owner(frame)
        if owner == "ppaux":
            return True
        if owner == "sglang" and _SCHEDULER_FILES.match(_sglang_relative(frame.file)[1]):
            return True
    return False


#: sglang's files that serve an HTTP request: a traceback through them is a request refused
#: (its own error, answered to the client), not the server failing.
_REQUEST_FILES = lazy(r"^srt/(?:entrypoints/|openai_api/|managers/tokenizer_manager)")


def in_sglang_server(frames: Iterable[Frame]) -> bool:
    """True when a frame is sglang's own code outside what serves an HTTP request (its
    layers, its kernels' wrappers, a worker thread's loop): a traceback raised there, in a
    thread or not, is the server failing."""
    owners = [f for f in frames if frame_owner(f) == "sglang"]
    serving = any(_REQUEST_FILES.match(_sglang_relative(f.file)[1]) for f in owners)
    return bool(owners) and not serving


def raised_by_capture(frames: list[Frame]) -> bool:
    """True when the innermost frame is ppaux's own capture (strict mode raises there)."""
    return bool(frames) and frame_owner(frames[-1]) == "ppaux"
