"""Rank 0's process as a fresh interpreter, as sglang starts each scheduler.

sglang starts each pipeline stage's scheduler as a new interpreter: nothing of the last
stage's process is in rank 0's, not even the hash seed that orders a ``set`` of strings (each
process draws its own, unless the user exported ``PYTHONHASHSEED`` for all: then both have it,
:mod:`.interpreter`). So the check's child starts rank 0's process with :func:`start` as early
as it can (before it imports torch, so that both imports overlap): ``python`` isolated as the
child is (:mod:`.interpreter`), in the child's process group and directory, with the child's
environment, its stdout and stderr, and on stdin a request that names the descriptors it is
given (its end of the socket, the records' descriptor and the hook slot). It runs
:mod:`.rank0_worker`: it dies with the child, imports ppaux's own modules and torch as the
child does, says so on the socket, and then answers as the forked process of :mod:`.apart`
does (the target imported at the first question). No crash file: a fatal signal there is
told by how it ended.

``PPAUX_TEST_RANK0_FORK=1`` in the environment is a hook of ppaux's own test suite: the child
then forks rank 0's process (:func:`ppaux.observer.apart.start`), which costs no second import
of torch but shares the child's hash seed. Checks meant for users never set it.

Imports nothing beyond the standard library at import.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import socket

    from ppaux.observer.apart import RankZero

__all__ = ["FORK_HOOK", "MODULE", "forking", "launched", "start"]

#: The test suite's hook (see the module's docstring).
FORK_HOOK = "PPAUX_TEST_RANK0_FORK"
#: The module rank 0's fresh process runs.
MODULE = "ppaux.observer.rank0_worker"


def forking() -> bool:
    """Whether the test suite's hook asks for rank 0's process to be forked."""
    return os.environ.get(FORK_HOOK) == "1"


def start(request: dict[str, Any], records: int, slot: int) -> RankZero | None:
    """Rank 0's fresh process for the child's ``request`` (its target, options, limits, import
    path and the signals to unblock), given the records' descriptor ``records`` and the hook
    slot's ``slot``; None where it cannot be started (the child then forks it)."""
    import socket

    try:
        ours, theirs = socket.socketpair()
    except OSError:
        return None
    keys = ("target", "outputs", "options", "limits", "path", "unblock")
    message = {key: request[key] for key in keys if key in request}
    message.update(fd=records, slot=slot, socket=theirs.fileno())
    try:
        return launched(MODULE, message, ours, (records, slot, theirs.fileno()))
    except OSError:
        ours.close()
        return None
    finally:
        theirs.close()


def launched(
    module: str,
    request: dict[str, Any],
    ours: socket.socket,
    fds: tuple[int, ...],
    session: bool = False,
) -> RankZero:
    """Rank 0's fresh process running ``python -m module``, isolated as the check's child is
    (:mod:`.interpreter`), given the descriptors ``fds``, and on stdin ``request`` with the
    ``PYTHON*`` variables held back and this process's ``sys.argv`` (sglang's spawn gives each
    scheduler the launcher's) added; ``ours`` is this side's end of its socket. Raises
    OSError where the interpreter cannot start."""
    import json
    import subprocess

    from ppaux.observer.apart import RankZero
    from ppaux.observer.interpreter import started
    from ppaux.replay import warning_options

    isolation, env, later = started(os.environ)
    message = {**request, "environ": later, "argv": list(sys.argv)}
    process = subprocess.Popen(
        [sys.executable, *isolation, "-B", *warning_options(), "-m", module],
        stdin=subprocess.PIPE,
        pass_fds=fds,
        env=env,
        start_new_session=session,
    )
    assert process.stdin is not None
    try:
        process.stdin.write(json.dumps(message).encode("utf-8"))
        process.stdin.close()
    except OSError:
        pass
    rank0 = RankZero(ours, process.pid)
    rank0.process = process  # kept: its pid is waited for by RankZero, never by subprocess
    return rank0
