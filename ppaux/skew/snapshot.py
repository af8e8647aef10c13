"""Taking a fingerprint: :func:`collect` snapshots this process in a fraction of a second.

Nothing is imported to learn it: package versions come from ``importlib.metadata``, torch's
build facts from ``torch/version.py`` read as text, the NCCL version from the ``nvidia-nccl-*``
package or its header, the driver from ``/proc/driver/nvidia/version``, and sglang's transport
capability from its source (:mod:`ppaux.sglang_source.analysis`). The document it makes is
:class:`ppaux.skew.fingerprint.Fingerprint`.
"""

from __future__ import annotations

import ast
import datetime
import importlib.metadata
import importlib.util
import os
import platform
import re
import socket
import sys
from collections.abc import Mapping
from typing import Any

from ppaux._version import __version__
from ppaux.limits import Limits
from ppaux.sglang_source import analyse
from ppaux.skew.fingerprint import PACKAGES, SCHEMA, Fingerprint, RankInfo

__all__ = ["REDACTED", "collect", "redact_environment"]

# Environment variables that change how PP stages talk, by prefix and by exact name.
_ENV_PREFIXES = ("SGLANG_", "SGL_", "NCCL_", "TORCH_", "PYTORCH_", "GLOO_", "CUDA_", "NVIDIA_")
_ENV_NAMES = frozenset(
    {
        "MASTER_ADDR",
        "MASTER_PORT",
        "RANK",
        "LOCAL_RANK",
        "WORLD_SIZE",
        "LOCAL_WORLD_SIZE",
        "OMP_NUM_THREADS",
        "LD_LIBRARY_PATH",
    }
)
# A name holding any of these words keeps its value to itself.
_SECRET_WORDS = (
    "TOKEN",
    "SECRET",
    "KEY",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "CREDENTIAL",
    "AUTH",
    "COOKIE",
    "PRIVATE",
    "SIGNATURE",
)
REDACTED = "<redacted>"
# user:password@ inside a URL-like value.
_URL_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]+@")

_DRIVER_FILE = "/proc/driver/nvidia/version"
_DRIVER_RE = re.compile(r"Kernel Module(?:\s+for\s+\S+)?\s+(?P<v>\d+(?:\.\d+)+)")
_NCCL_DEFINE_RE = re.compile(r"^#define\s+NCCL_(MAJOR|MINOR|PATCH)\s+(\d+)", re.MULTILINE)


def redact_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The PP-relevant variables of ``environ``, sorted, with secret values replaced."""
    out: dict[str, str] = {}
    for name in sorted(environ):
        if not (name in _ENV_NAMES or name.startswith(_ENV_PREFIXES)):
            continue
        upper = name.upper()
        if any(word in upper for word in _SECRET_WORDS):
            out[name] = REDACTED
        else:
            out[name] = _URL_USERINFO.sub(rf"\g<scheme>{REDACTED}@", environ[name])
    return out


def _int_env(environ: Mapping[str, str], name: str) -> int | None:
    try:
        return int(environ[name])
    except (KeyError, ValueError):
        return None


def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    out["ppaux"] = out["ppaux"] or __version__
    return out


def _package_file(package: str, *parts: str) -> str | None:
    """Path of a file inside an installed top-level package, found without importing it."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    for location in spec.submodule_search_locations or ():
        candidate = os.path.join(location, *parts)
        if os.path.isfile(candidate):
            return candidate
    return None


def _torch_build() -> dict[str, Any] | None:
    """torch's ``version.py`` literals (version, CUDA, HIP, git), read as text, not imported."""
    path = _package_file("torch", "version.py")
    if path is None:
        return None
    try:
        with open(path, "rb") as handle:
            module = ast.parse(handle.read(1024 * 1024))
    except (OSError, SyntaxError, ValueError):
        return {
            "version": None,
            "cuda": None,
            "hip": None,
            "git_version": None,
            "reason": f"{path}: unreadable",
        }
    values: dict[str, Any] = {}
    for node in module.body:
        target = value = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign):
            target, value = node.target, node.value
        if isinstance(target, ast.Name) and isinstance(value, ast.Constant):
            values[target.id] = value.value
    return {
        "version": values.get("__version__"),
        "cuda": values.get("cuda"),
        "hip": values.get("hip"),
        "git_version": values.get("git_version"),
    }


def _nccl(packages: Mapping[str, str | None]) -> dict[str, str | None]:
    for name in ("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11"):
        if packages.get(name):
            return {"version": packages[name], "source": name}
    header = _package_file("nvidia", "nccl", "include", "nccl.h")
    if header is not None:
        try:
            with open(header, encoding="utf-8", errors="replace") as handle:
                parts = dict(_NCCL_DEFINE_RE.findall(handle.read(256 * 1024)))
        except OSError:
            parts = {}
        if len(parts) == 3:
            return {
                "version": f"{parts['MAJOR']}.{parts['MINOR']}.{parts['PATCH']}",
                "source": header,
            }
    return {"version": "unknown", "source": None}


def _driver() -> dict[str, str | None]:
    try:
        with open(_DRIVER_FILE, encoding="utf-8", errors="replace") as handle:
            match = _DRIVER_RE.search(handle.read(4096))
    except OSError:
        return {"version": "unknown", "source": None}
    if match is None:
        return {"version": "unknown", "source": _DRIVER_FILE}
    return {"version": match.group("v"), "source": _DRIVER_FILE}


def _platform() -> dict[str, str]:
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION") or "unknown"
    except (AttributeError, ValueError, OSError):
        libc = "unknown"
    return {
        "system": platform.system(),
        "release": platform.release(),
        "machine": platform.machine(),
        "libc": libc,
    }


def collect(
    *,
    sglang_path: str | None = None,
    pp_rank: int | None = None,
    pp_size: int | None = None,
    environ: Mapping[str, str] | None = None,
    live: bool = False,
    limits: Limits = Limits(),
) -> Fingerprint:
    """Take this process's fingerprint.

    ``sglang_path`` is an sglang directory or wheel to analyse instead of the installed one
    (:class:`ppaux.sglang_source.SglangPathError` if it is not one). ``live=True`` also checks the
    sglang modules already imported in this process for a monkeypatched add or pop
    (:func:`ppaux.skew.livepatch.live_state`); use it from inside a running server.
    ``limits.max_source_bytes`` bounds each sglang file read.
    """
    env = os.environ if environ is None else environ
    capability = analyse(sglang_path, limits)
    if live:
        from ppaux.skew.livepatch import live_state

        capability = capability.with_live(live_state())
    packages = _versions()
    return Fingerprint(
        schema=SCHEMA,
        tool_version=__version__,
        time=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        host=socket.gethostname(),
        pid=os.getpid(),
        rank=RankInfo(
            rank=_int_env(env, "RANK"),
            local_rank=_int_env(env, "LOCAL_RANK"),
            world_size=_int_env(env, "WORLD_SIZE"),
            pp_rank=pp_rank,
            pp_size=pp_size,
        ),
        python={
            "version": platform.python_version(),
            "implementation": sys.implementation.name,
        },
        platform=_platform(),
        packages=packages,
        torch_build=_torch_build(),
        nccl=_nccl(packages),
        driver=_driver(),
        environment=redact_environment(env),
        sglang=capability,
    )
