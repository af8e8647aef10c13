"""Real sglang release wheels for the tests marked ``wheels``, downloaded once and cached.

Wheels are fetched with ``pip download --no-deps`` (the interpreter running the tests, so the
index settings of its pip apply) into ``$PPAUX_WHEEL_CACHE`` (default ``~/.cache/ppaux/wheels``),
outside the repository, one process at a time (a file lock: pytest-xdist workers wait for the
download under way instead of starting their own). A test is skipped only when the download
failed because the package index could not be reached; any other failure fails the test. With
``PPAUX_REQUIRE_WHEELS=1`` (set by CI) a failed download always fails the test.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NoReturn

import pytest
from helpers import file_lock

__all__ = ["CACHE_ENV", "REQUIRE_ENV", "network_failure", "sglang_wheel", "wheel_cache"]

CACHE_ENV = "PPAUX_WHEEL_CACHE"
REQUIRE_ENV = "PPAUX_REQUIRE_WHEELS"

# The tests only read files out of the wheel, never install it, so ask for one fixed target
# (sglang publishes CPython-specific wheels) rather than whatever the test interpreter is.
_TARGET = [
    "--only-binary=:all:",
    "--implementation",
    "cp",
    "--python-version",
    "3.11",
    "--abi",
    "cp311",
    "--platform",
    "manylinux_2_34_x86_64",
]

# What pip (-vv) and urllib3 write when the index cannot be reached at all.
_NETWORK_MARKERS = re.compile(
    r"connection error:|NewConnectionError|Failed to establish a new connection"
    r"|Temporary failure in name resolution|Name or service not known|nodename nor servname"
    r"|Network is unreachable|No route to host|ConnectTimeoutError|ProxyError"
    r"|Could not fetch URL [^\n]*: timed out",
    re.IGNORECASE,
)

_PIP_TIMEOUT_S = 1800

# Once the index proved unreachable, later wheels skip at once instead of waiting on pip again.
_unreachable: list[str] = []


def wheel_cache() -> Path:
    """The directory wheels are cached in (created if missing)."""
    configured = os.environ.get(CACHE_ENV)
    cache = Path(configured) if configured else Path.home() / ".cache" / "ppaux" / "wheels"
    cache.mkdir(parents=True, exist_ok=True)
    return cache


def network_failure(pip_output: str) -> str | None:
    """The first line of ``pip_output`` showing that the index could not be reached, or None."""
    for line in pip_output.splitlines():
        if _NETWORK_MARKERS.search(line):
            return line.strip()
    return None


def _cached(cache: Path, version: str) -> Path | None:
    found = sorted(cache.glob(f"sglang-{version}-*.whl"))
    return found[0] if found else None


def _give_up(message: str, *, network: bool) -> NoReturn:
    if network and os.environ.get(REQUIRE_ENV) != "1":
        _unreachable.append(message)
        pytest.skip(message)
    pytest.fail(message, pytrace=False)


def sglang_wheel(version: str) -> Path:
    """Path of the ``sglang==version`` wheel, downloading it into the cache on first use."""
    cache = wheel_cache()
    cached = _cached(cache, version)
    if cached is not None:
        return cached
    if _unreachable and os.environ.get(REQUIRE_ENV) != "1":
        pytest.skip(f"sglang=={version} not downloaded; earlier: {_unreachable[0]}")
    # Beside the cache, not in it: a failed download leaves the cache as it found it.
    with file_lock(cache.with_name(f"{cache.name}.lock")):
        # Another process may have finished the download while this one waited.
        return _cached(cache, version) or _download(cache, version)


def _download(cache: Path, version: str) -> Path:
    # Download beside the cache and move in when complete, so a killed run leaves no half file.
    with tempfile.TemporaryDirectory(dir=cache, prefix=".download-") as scratch:
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-vv",
            "--no-deps",
            *_TARGET,
            "--dest",
            scratch,
            f"sglang=={version}",
        ]
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=_PIP_TIMEOUT_S, check=False
            )
        except subprocess.TimeoutExpired:
            _give_up(
                f"pip download sglang=={version} did not finish in {_PIP_TIMEOUT_S} s",
                network=True,
            )
        downloaded = _cached(Path(scratch), version)
        if done.returncode != 0 or downloaded is None:
            output = f"{done.stdout}\n{done.stderr}"
            network = network_failure(output)
            errors = [line for line in output.splitlines() if line.startswith("ERROR:")]
            detail = network or (errors[-1] if errors else f"pip exit status {done.returncode}")
            _give_up(f"could not download sglang=={version}: {detail}", network=bool(network))
        target = cache / downloaded.name
        os.replace(downloaded, target)
    return target
