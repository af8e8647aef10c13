"""``python -c CODE ARGS`` in a child forked from one process that imported torch.

A test that asks torch something in a process apart (a file's reading by ``torch.load``, a plugin
loaded as sglang loads it) pays some 2 s of CPU for each child's torch import. :class:`Children`
starts one server (:data:`SERVER`) that imports torch and nothing else of note, then forks it for
each request: the child starts as ``python -c CODE ARGS`` would, after that import, with its own
``sys.argv``, environment, working directory, ``PYTHONPATH`` entries first on ``sys.path`` (after
the script's folder, ``''``), the warning actions of its ``PYTHONWARNINGS`` and its own standard
output and error; an uncaught exception prints its traceback and exits 1, as Python does. Nothing
one child does reaches the next. The ``torch_children`` fixture of tests/conftest.py is one per
test process.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

SERVER = r"""
import json, os, sys, traceback, warnings
import torch

own = set(filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep)))
base = [entry for entry in sys.path[1:] if entry not in own]
for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        os.dup2(os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)
        os.dup2(os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        path = list(filter(None, request["env"].get("PYTHONPATH", "").split(os.pathsep)))
        sys.path[:] = ["", *path, *base]
        warnings.resetwarnings()
        for action in filter(None, request["env"].get("PYTHONWARNINGS", "").split(",")):
            warnings.simplefilter(action)
        sys.argv = ["-c", *request["args"]]
        status = 0
        try:
            exec(compile(request["code"], "<string>", "exec"), {"__name__": "__main__"})
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            traceback.print_exc()
            status = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    _, status = os.waitpid(pid, 0)
    print(json.dumps({"status": os.waitstatus_to_exitcode(status)}), flush=True)
"""

#: The ``PYTHONWARNINGS`` entries a child applies: whole actions only.
ACTIONS = {"default", "error", "ignore", "always", "all", "module", "once"}


@dataclass
class Done:
    """What a child did, as ``subprocess.run(..., capture_output=True, text=True)`` says it."""

    returncode: int
    stdout: str
    stderr: str


class Children:
    """One :data:`SERVER` process and the children forked from it."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="torch-children-"))
        self.count = 0
        self.process = subprocess.Popen(
            [sys.executable, "-c", SERVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(
        self, code: str, *args: str, env: Mapping[str, str] | None = None, timeout: float = 300
    ) -> Done:
        """``python -c CODE ARGS`` in ``env`` (default: this process's environment), in this
        process's working directory."""
        environment = dict(os.environ if env is None else env)
        actions = set(filter(None, environment.get("PYTHONWARNINGS", "").split(",")))
        assert actions <= ACTIONS, f"PYTHONWARNINGS beyond whole actions: {actions - ACTIONS}"
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        self.count += 1
        out, err = (self.folder / f"{self.count}.{name}" for name in ("stdout", "stderr"))
        request = {
            "code": code,
            "args": list(args),
            "env": environment,
            "cwd": os.getcwd(),
            "stdout": str(out),
            "stderr": str(err),
        }
        stdin.write(json.dumps(request) + "\n")
        stdin.flush()
        ready, _, _ = select.select([stdout], [], [], timeout)
        answer = stdout.readline() if ready else ""
        assert answer, f"no answer from the torch children's server within {timeout} s"
        done = Done(
            json.loads(answer)["status"],
            out.read_text(encoding="utf-8"),
            err.read_text(encoding="utf-8"),
        )
        out.unlink()
        err.unlink()
        return done

    def close(self) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)
        self.process.stdout.close()
        shutil.rmtree(self.folder, ignore_errors=True)
