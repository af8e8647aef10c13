"""The runtime tier's processes, forked from one process per release that has imported sglang.

Every process of the runtime tier (``tests/sglang_runtime.py``) starts by importing torch and the
release's pipeline-parallel runtime: some 10 s of CPU each, most of a driver's cost, dozens of
times a run. :func:`start` instead asks the release's *zygote* (``runtime_zygote_server.py``),
started on first use in this test process and ended with it, to fork a process that runs the
same command as ``python ARGV`` would, after the same imports: its own argv, ``sys.path[0]``,
environment, working directory, ``__main__``, standard streams (what the imports printed
first) and exit status. What a test asks of a fresh interpreter (bytecode, ``sitecustomize``,
import order) is asked of ``subprocess`` directly, not of this module.

A runner is not this process's child, so its CPU time is not in this process's
``RUSAGE_CHILDREN``: :func:`cpu_seconds` holds the runners' and the zygotes' start-up CPU seen
so far, which ``tests/conftest.py`` adds to each test's. ``PPAUX_TEST_FRESH_RUNTIME=1`` starts
every process fresh instead (the comparison, or a doubt).

ppaux's own receiver (``python -I -c BOOT ...``, started by ppaux with ``sys.executable``) imports
the release too: a runner given :func:`interpreter` as its ``sys.executable`` (:func:`run`'s
``helpers_forked``) has it forked by the zygote as well, ppaux's code unchanged
(``runtime_zygote_interpreter.py``). The runners' processes are then not all its descendants:
a test of what ppaux does with its helpers' processes starts them fresh.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

FRESH_ENV = "PPAUX_TEST_FRESH_RUNTIME"
SERVER = Path(__file__).with_name("runtime_zygote_server.py")
INTERPRETER = Path(__file__).with_name("runtime_zygote_interpreter.py")
_START_TIMEOUT_S = 600

_lock = threading.Lock()
_cpu = [0.0]


def cpu_seconds() -> float:
    """The CPU seconds of the runners that ended and of the zygotes' imports, so far, with
    those of the receivers forked for the runners (written by their interpreter)."""
    forked = 0.0
    for zygote in list(_zygotes.values()):
        if zygote.python is not None:
            cpu_file = zygote.socket_path.parent / "helpers-cpu"
            with contextlib.suppress(OSError):
                for line in cpu_file.read_text(encoding="utf-8").splitlines():
                    with contextlib.suppress(ValueError):  # a line being written
                        forked += float(line)
    return _cpu[0] + forked


def _add_cpu(seconds: float) -> None:
    with _lock:
        _cpu[0] += seconds


@dataclass
class _Zygote:
    pythonpath: str
    process: subprocess.Popen[str]
    socket_path: Path
    python: str | None = None  # its interpreter (:func:`interpreter`), once made


#: (version, PYTHONPATH) -> its zygote, while this process runs.
_zygotes: dict[tuple[str, str], _Zygote] = {}


def _stop_all() -> None:
    for zygote in _zygotes.values():
        if zygote.process.stdin is not None:
            zygote.process.stdin.close()  # its signal to end, once its runners have ended
        try:
            zygote.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            zygote.process.kill()
            zygote.process.wait()
    _zygotes.clear()


atexit.register(_stop_all)


def _zygote(version: str, env: Mapping[str, str]) -> _Zygote:
    key = (version, env.get("PYTHONPATH", ""))
    with _lock:
        found = _zygotes.get(key)
        if found is not None and found.process.poll() is None:
            return found
        folder = Path(tempfile.mkdtemp(prefix=f"ppaux-zygote-{version}-"))
        path = folder / "socket"
        process = subprocess.Popen(
            [sys.executable, str(SERVER), str(path)],
            env=dict(env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line:
            _, err = process.communicate(timeout=_START_TIMEOUT_S)
            raise AssertionError(f"the zygote of sglang=={version} did not start:\n{err[-3000:]}")
        ready = json.loads(line)
        _cpu[0] += ready["cpu_s"]
        zygote = _Zygote(key[1], process, path)
        _zygotes[key] = zygote
        return zygote


def interpreter(version: str, env: Mapping[str, str]) -> str:
    """The Python whose ``python -I [-W ...] -c BOOT ...`` (ppaux's own receiver) is forked by
    the zygote of ``version`` for ``env`` (``runtime_zygote_interpreter.py``); every other
    command line it runs as the test virtual environment's Python does. A process given it as
    its ``sys.executable`` (:func:`run`'s ``helpers_forked``) has its receivers forked."""
    zygote = _zygote(version, env)
    with _lock:
        if zygote.python is None:
            zygote.python = _make_interpreter(zygote.socket_path.parent / "python", zygote)
        return zygote.python


def _make_interpreter(root: Path, zygote: _Zygote) -> str:
    """A virtual environment's layout at ``root``: the test interpreter's Python, and in its
    ``site-packages`` the module that runs first and what it needs to know."""
    from ppaux.replay.import_path import BOOT

    real = os.path.realpath(sys.executable)
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "python").symlink_to(real)
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    (root / "pyvenv.cfg").write_text(
        f"home = {os.path.dirname(real)}\ninclude-system-site-packages = false\n"
        f"version = {sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}\n",
        encoding="utf-8",
    )
    site = root / "lib" / f"python{version}" / "site-packages"
    site.mkdir(parents=True)
    shutil.copyfile(INTERPRETER, site / INTERPRETER.name)
    (site / f"{INTERPRETER.stem}.pth").write_text(f"import {INTERPRETER.stem}\n", encoding="utf-8")
    config = {
        "socket": str(zygote.socket_path),
        "cpu_file": str(zygote.socket_path.parent / "helpers-cpu"),
        "boot": BOOT,
        "python": sys.executable,
    }
    (site / "runtime_zygote.json").write_text(json.dumps(config), encoding="utf-8")
    return str(root / "bin" / "python")


class Forked:
    """A process forked by a zygote, with the part of :class:`subprocess.Popen` the tests use:
    :meth:`communicate` (text output) and ``returncode``."""

    def __init__(
        self,
        version: str,
        args: Sequence[str],
        env: Mapping[str, str],
        cwd: str | os.PathLike[str] | None,
        input: str | None,
        zygote_env: Mapping[str, str] | None = None,
        executable: str | None = None,
    ) -> None:
        zygote = _zygote(version, env if zygote_env is None else zygote_env)
        self.args = [sys.executable, *args]
        self.returncode: int | None = None
        self._scratch = tempfile.TemporaryDirectory(prefix="ppaux-forked-")
        folder = Path(self._scratch.name)
        stdin = folder / "stdin"
        stdin.write_text(input or "", encoding="utf-8")
        self._out, self._err = folder / "stdout", folder / "stderr"
        self._out.touch()
        self._err.touch()
        request = {
            "argv": list(args),
            "env": dict(env),
            "cwd": str(Path(cwd if cwd is not None else os.getcwd()).resolve()),
            "stdin": str(stdin),
            "stdout": str(self._out),
            "stderr": str(self._err),
            "executable": executable,
        }
        self._connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._connection.connect(str(zygote.socket_path))
        self._stream = self._connection.makefile("rwb")
        # A marker byte first: the zygote reads it with the descriptors a request may carry.
        self._stream.write(b"J" + json.dumps(request).encode() + b"\n")
        self._stream.flush()
        self.pid: int = json.loads(self._stream.readline())["pid"]

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        """Wait for the end (killing the process past ``timeout`` seconds, then raising
        :class:`subprocess.TimeoutExpired`, as ``subprocess.run`` does); stdout and stderr."""
        self._connection.settimeout(timeout)
        try:
            line = self._stream.readline()
        except TimeoutError:
            os.kill(self.pid, signal.SIGKILL)
            self._connection.settimeout(None)
            self._end(self._stream.readline())
            raise subprocess.TimeoutExpired(self.args, timeout or 0) from None
        self._end(line)
        return (
            self._out.read_text(encoding="utf-8", errors="replace"),
            self._err.read_text(encoding="utf-8", errors="replace"),
        )

    def _end(self, line: bytes) -> None:
        end = json.loads(line)
        self.returncode = end["returncode"]
        _add_cpu(end["cpu_s"])
        self._stream.close()
        self._connection.close()

    def __del__(self) -> None:
        self._scratch.cleanup()


def fresh() -> bool:
    """Whether every process starts fresh (:data:`FRESH_ENV`)."""
    return os.environ.get(FRESH_ENV) == "1"


def start(
    version: str, args: Sequence[str], env: Mapping[str, str]
) -> Forked | subprocess.Popen[str]:
    """``python ARGS`` with ``env``, forked from the zygote of ``version`` (one per ``PYTHONPATH``
    of ``env``), or started fresh under :data:`FRESH_ENV`; output captured as text."""
    if fresh():
        return subprocess.Popen(
            [sys.executable, *args],
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    return Forked(version, args, env, None, None)


def run(
    version: str,
    args: Sequence[str],
    env: Mapping[str, str],
    *,
    timeout: float,
    cwd: str | os.PathLike[str] | None = None,
    input: str | None = None,
    zygote_env: Mapping[str, str] | None = None,
    helpers_forked: bool = False,
) -> subprocess.CompletedProcess[str]:
    """:func:`start` and wait, as ``subprocess.run(capture_output=True, text=True)`` does.
    ``zygote_env``: the zygote's environment where it is not ``env`` (a process whose
    ``PYTHONPATH`` lacks the release's tree: the runner's path is ``env``'s, its imports the
    zygote's); ``helpers_forked``: ppaux's receivers that it starts are forked too
    (:func:`interpreter`)."""
    if fresh():
        return subprocess.run(
            [sys.executable, *args],
            env=dict(env),
            cwd=cwd,
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    zygote = env if zygote_env is None else zygote_env
    executable = interpreter(version, zygote) if helpers_forked else None
    process = Forked(version, args, env, cwd, input, zygote, executable)
    stdout, stderr = process.communicate(timeout=timeout)
    assert process.returncode is not None
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
