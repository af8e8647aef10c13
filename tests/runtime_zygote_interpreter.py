"""The start of the Python that :func:`runtime_zygote.interpreter` makes for one release's zygote.

That interpreter is the test virtual environment's Python in a folder of its own whose
``site-packages`` holds this module and a ``.pth`` file that imports it, so that it runs first in
every process started with that interpreter, isolated (``-I``) or not. ppaux starts its helper
processes with ``sys.executable``; a process forked by the zygote with this interpreter as its
``sys.executable`` therefore starts its helpers here:

- ppaux's own receiver (``python -I [-W ...] -c BOOT ...``, the command line
  :func:`ppaux.replay.import_path.runs_boot` recognises) is handed to the zygote, which forks it
  after the release's imports: its command line, environment, working directory and open file
  descriptors go with it; this process waits for it, passes on the signals it is sent and ends
  as it ended (its exit status, or the signal that ended it). Killed, this process takes the
  receiver with it (the zygote kills a runner whose requester went away).
- every other command line is executed by the test virtual environment's own Python, unchanged
  (``execv``: same process, descriptors and environment).

Only the standard library is imported here.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys

_FORWARDED = (
    signal.SIGTERM,
    signal.SIGINT,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
)


def _config() -> dict[str, str]:
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "runtime_zygote.json"), encoding="utf-8") as file:
        config: dict[str, str] = json.load(file)
    return config


def _runs_boot(argv: list[str], boot: str) -> bool:
    """``runs_boot`` of ``ppaux.replay.import_path`` (ppaux is not importable yet here)."""
    index = 1
    while index < len(argv) - 1:
        arg = argv[index]
        if arg == "-c":
            return argv[index + 1] == boot
        if not arg.startswith("-"):
            return False
        index += 2 if arg in ("-W", "-X") else 1
    return False


def _open_descriptors() -> list[int]:
    listed = [int(name) for name in os.listdir("/proc/self/fd")]
    found = []
    for fd in listed:
        try:
            os.fstat(fd)
        except OSError:  # the listing's own descriptor, closed by now
            continue
        found.append(fd)
    return sorted(found)


def _forward(path: str, cpu_file: str) -> None:
    """Run this command line in the zygote; end as it ends (its CPU seconds added, a line, to
    ``cpu_file``, which :func:`runtime_zygote.cpu_seconds` counts)."""
    fds = _open_descriptors()
    request = {
        "argv": sys.orig_argv[1:],
        "env": dict(os.environ),
        "cwd": os.getcwd(),
        "fds": fds,
        "executable": sys.executable,
    }
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(path)
    socket.send_fds(connection, [b"F"], fds)
    connection.sendall(json.dumps(request).encode("utf-8") + b"\n")
    stream = connection.makefile("rb")
    pid = json.loads(stream.readline())["pid"]

    def forward(number: int, frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, number)

    for number in _FORWARDED:
        signal.signal(number, forward)
    line = stream.readline()
    end = json.loads(line) if line else {"returncode": 1, "cpu_s": 0.0}
    with open(cpu_file, "a", encoding="utf-8") as file:
        file.write(f"{end['cpu_s']}\n")
    code = end["returncode"]
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code & 0xFF)


def _main() -> None:
    try:
        config = _config()
        if _runs_boot(sys.orig_argv, config["boot"]):
            _forward(config["socket"], config["cpu_file"])
        os.execv(config["python"], [config["python"], *sys.orig_argv[1:]])
    except BaseException:  # site would go on without the test environment's packages: stop
        import traceback

        traceback.print_exc()
        os._exit(1)


_main()
