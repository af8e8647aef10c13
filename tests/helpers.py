"""What many test modules share: the repository root, the environment CLI tests run under, the
CLI runners (in-process and in a child process), a clean environment for sglang-like children, a
free port, the golden-file check, a lock for caches shared between test processes, triage's roots
of a log written from text, and check-observer's start record. Fixtures are in ``conftest.py``."""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from ppaux_cli.app import app

__all__ = [
    "ENV",
    "OBSERVER_START",
    "REPO",
    "ROOT_CODES",
    "UPDATE_GOLDEN",
    "check_golden",
    "clean_environ",
    "cli",
    "file_lock",
    "free_port",
    "ppaux_process",
    "triage_roots",
]

#: The repository root (fixtures, docs and the README are read from here).
REPO = Path(__file__).resolve().parent.parent
#: The environment of every CLI run: no colour, and a fixed width, so output is exact.
ENV: dict[str, str | None] = {"NO_COLOR": "1", "COLUMNS": "100"}
#: ``PPAUX_UPDATE_GOLDEN=1`` rewrites golden files that differ (and fails the run; see below).
UPDATE_GOLDEN = os.environ.get("PPAUX_UPDATE_GOLDEN") == "1"


def cli(
    *args: str, env: Mapping[str, str | None] | None = None, input: bytes | str | None = None
) -> Result:
    """``ppaux ARGS`` in-process under :data:`ENV` (plus ``env``; None unsets a variable), with
    ``input`` on stdin."""
    return CliRunner().invoke(app, list(args), env={**ENV, **(env or {})}, input=input)


def ppaux_process(
    *args: str,
    cwd: Path = REPO,
    env: Mapping[str, str | None] | None = None,
    base: Mapping[str, str] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """``python -m ppaux_cli ARGS`` in a child process, output captured as text, whatever the
    exit status. The child runs this checkout's ppaux (the repository first on ``PYTHONPATH``)
    in ``cwd``, with the environment ``base`` (default: this process's) under :data:`ENV` and
    ``env`` (None unsets a variable)."""
    environment = dict(os.environ if base is None else base)
    path = [str(REPO), *filter(None, [environment.get("PYTHONPATH")])]
    environment["PYTHONPATH"] = os.pathsep.join(path)
    for name, value in {**ENV, **(env or {})}.items():
        if value is None:
            environment.pop(name, None)
        else:
            environment[name] = value
    return subprocess.run(
        [sys.executable, "-m", "ppaux_cli", *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def clean_environ() -> dict[str, str]:
    """This process's environment without capture and sglang settings (``PPAUX_CAPTURE*``,
    ``SGLANG_*``), for children that must not inherit a capture directory or a plugin list."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("PPAUX_CAPTURE", "SGLANG_"))}


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (for a gloo or torchrun rendezvous)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def check_golden(path: Path, text: str) -> None:
    """Assert that ``text`` is the golden file at ``path``.

    With ``PPAUX_UPDATE_GOLDEN=1`` a golden that differs (or is missing) is written, and the test
    still fails: an update is a change to review (``git diff tests/golden``), then the run is
    repeated without the variable.
    """
    name = path.name
    current = path.read_text(encoding="utf-8") if path.exists() else None
    if current == text:
        return
    if UPDATE_GOLDEN:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        pytest.fail(
            f"golden {name} rewritten: review the diff (git diff {path.parent}), then run "
            "the tests again without PPAUX_UPDATE_GOLDEN",
            pytrace=False,
        )
    assert current is not None, f"missing golden {name} (PPAUX_UPDATE_GOLDEN=1 writes it)"
    assert text == current, f"golden {name} differs (PPAUX_UPDATE_GOLDEN=1 rewrites it)"


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created, with its folder) for the ``with`` block.

    Guards what the test processes share outside a test's ``tmp_path``: the wheel download, the
    prepared sglang runtimes and the torch-free virtual environment, which two pytest-xdist
    workers (or two test runs) would otherwise build at once. The lock is the kernel's
    (``flock``), so a killed process releases it; the lock file itself stays, empty.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


#: The codes of triage's roots: a rank's failure predicted by a rule or not (PP801, PP802) and a
#: death or a communication failure without one (PP809).
ROOT_CODES = ("PP801", "PP802", "PP809")


def triage_roots(tmp_path: Path, text: str) -> list[tuple[str, str | None, str]]:
    """(code, key, ``extra.kind``) of each root that ``triage`` finds in a log of ``text``
    (written to ``tmp_path/x.log``)."""
    from ppaux.triage import triage_paths

    path = tmp_path / "x.log"
    path.write_text(text, encoding="utf-8")
    return [
        (f.code, f.key, str((f.extra or {}).get("kind")))
        for f in triage_paths([str(path)]).findings
        if f.code in ROOT_CODES
    ]


#: The child's ``start`` record of a check-observer run, as its protocol takes it: a class
#: target on the CPU, driven with ppaux's stand-ins.
OBSERVER_START = {
    "event": "start",
    "target": "obs.py:Obs",
    "kind": "class",
    "origin": None,
    "device": "cpu",
    "sglang_parts": False,
    "requests": "ppaux stand-ins",
    "given": False,
}
