"""torch.load's default (``weights_only=True``) on each path read from stdin, in its own process.

One path per line in, one JSON line out: ``{"outcome": "loaded" | "unpickling-error" |
"other-error" | "blocked" | "crashed", "error": ...}``. Each path is loaded in a forked child, so
a file that crashes torch (a signal) is an answer, and nothing one file does reaches the next.
The weights-only reader resolves no global outside its allowlist, so nothing in a file can run;
an audit hook (installed after a warm-up load, and never removable) still blocks and reports any
process start, code execution or file change. Run by tests/test_weights_only.py; never imported
by a test process.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import sys
import tempfile
import warnings
from typing import Any

FORBIDDEN = (
    "os.system",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "os.fork",
    "os.remove",
    "os.rename",
    "os.unlink",
    "os.rmdir",
    "os.chmod",
    "os.kill",
    "subprocess.Popen",
    "ctypes.",
    "socket.",
    "exec",
    "marshal.loads",
)
_CLEANUP = frozenset({"os.remove", "os.rmdir", "os.unlink"})


def main() -> None:
    import collections

    import torch

    warnings.simplefilter("ignore")
    buffer = io.BytesIO()
    torch.save(
        {
            "t": torch.arange(4).view(2, 2).t(),
            "p": torch.nn.Parameter(torch.ones(2)),
            "o": collections.OrderedDict(a=1),
            "c": collections.Counter("ab"),
            "s": {1},
            "z": 1j,
            "b": b"x",
            "a": bytearray(b"y"),
        },
        buffer,
    )
    torch.load(io.BytesIO(buffer.getvalue()))  # imports what loading imports, once
    blocked: list[str] = []
    temp = tempfile.gettempdir() + os.sep
    parent = [True]  # only the parent forks, one child per file

    def hook(event: str, args: tuple[object, ...]) -> None:
        if event == "os.fork" and parent[0]:
            return
        if event in _CLEANUP and str(args[0]).startswith(temp):
            return  # torch's own temporary folder for a tar checkpoint, removed after
        if event.startswith(FORBIDDEN):
            blocked.append(event)
            raise RuntimeError(f"blocked: {event}")

    sys.addaudithook(hook)
    for line in sys.stdin:
        path = line.rstrip("\n")
        read_end, write_end = os.pipe()
        child = os.fork()
        if child == 0:
            parent[0] = False
            os.close(read_end)
            with os.fdopen(write_end, "w") as out:
                out.write(json.dumps(_load(torch, path, blocked)))
            os._exit(0)
        os.close(write_end)
        with os.fdopen(read_end) as answer_in:
            text = answer_in.read()
        _, status = os.waitpid(child, 0)
        answer = json.loads(text) if text else {"outcome": "crashed", "error": f"status {status}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


def _load(torch: Any, path: str, blocked: list[str]) -> dict[str, str | None]:
    answer: dict[str, str | None]
    try:
        torch.load(path)  # the default: weights_only=True
        answer = {"outcome": "loaded", "error": None}
    except pickle.UnpicklingError as exc:
        answer = {"outcome": "unpickling-error", "error": str(exc)[-400:]}
    except BaseException as exc:  # every other refusal is an answer too
        answer = {"outcome": "other-error", "error": f"{type(exc).__name__}: {exc}"[:400]}
    if blocked:
        answer = {"outcome": "blocked", "error": ", ".join(blocked)}
    return answer


if __name__ == "__main__":
    main()
