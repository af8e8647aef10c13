"""Differential fuzzing of ppaux's reader against the real ``torch.load(weights_only=False)``.

Files written by ``torch.save`` are varied at the zip level (long, non-UTF-8, NUL-holding,
case-varied and duplicated record names, multidisk fields, sizes that disagree, version and
byteorder records, deflated storages) and at the pickle level (keys in every string opcode,
integers in every text form, storage keys that torch's cache treats as equal or not, BUILD on
tensors, requires_grad set by a rebuild's argument, a Parameter or a BUILD state, bytes flipped
or cut). Each variant is read twice:

- by ppaux, in this process, with the safe reader (:func:`ppaux.dump.read_dump` and the checks
  behind ``ppaux inspect``), its tensors rebuilt from ppaux's reading by the replay
  materializer;
- by torch, in the sandbox of ``fuzz/torch_sandbox.py`` (a separate process, an audit hook
  that blocks every global outside torch's own rebuilds, every import, process, code object
  and file write, and torch.jit.load).

The property is what a clean report promises: when ppaux calls a file clean (no error
finding), torch loads it without being blocked, and reads the same keys, types, dtypes,
shapes, strides, values, tensor classes, devices, requires_grad and shared storages
(:func:`torch_sandbox.describe` of both). Whatever ppaux says, a file whose load the sandbox
had to block must get a PP2xx finding or be refused.

:func:`run` is bounded in time and seeded; each disagreement is returned with its bytes, to be
kept as a corpus file (``fixtures/differential/``) once understood.
"""

from __future__ import annotations

import io
import json
import os
import random
import struct
import subprocess
import sys
import time
import warnings
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from pickle_variants import PICKLE_MUTATIONS, PREFIX  # noqa: E402
from torch_sandbox import describe  # noqa: E402
from writer_mutations import WRITER_MUTATIONS  # noqa: E402
from zip_variants import ZIP_MUTATIONS  # noqa: E402

__all__ = ["MUTATIONS", "Disagreement", "Sandbox", "Verdict", "compare", "ppaux_view", "run"]


class Sandbox:
    """The sandbox server (``fuzz/torch_sandbox.py``) as a context manager; :meth:`load`
    answers for one file."""

    def __init__(self) -> None:
        env = {**os.environ, "PYTHONWARNINGS": "ignore"}
        env.pop("PYTHONPATH", None)
        self._process = subprocess.Popen(
            [sys.executable, str(HERE / "torch_sandbox.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def load(self, path: str | os.PathLike[str]) -> dict[str, Any]:
        """torch's answer for ``path``: outcome ('loaded', 'refused', 'blocked'), error,
        blocked events and a description of the value."""
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(os.fspath(path) + "\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        if not line:
            raise RuntimeError("the torch sandbox died")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        """Stop the server."""
        if self._process.stdin is not None:
            self._process.stdin.close()
        self._process.wait(timeout=30)
        if self._process.stdout is not None:
            self._process.stdout.close()


@dataclass
class Verdict:
    """ppaux's reading: 'refused', 'findings' (an error finding) or 'clean'; the codes of its
    error findings; the description of what it read (None where it could not rebuild it)."""

    verdict: str
    codes: set[str] = field(default_factory=set)
    value: Any = None
    reason: str = ""


def ppaux_view(path: str) -> Verdict:
    """Read ``path`` as ``ppaux inspect`` does; for a file it reads, rebuild the values from its
    reading (the replay materializer) and describe them as the sandbox describes torch's."""
    import torch

    from ppaux.dump.checks import check_dump
    from ppaux.dump.dumpfile import read_dump
    from ppaux.dump.payload import find_payloads
    from ppaux.errors import DumpError, ReadMismatch
    from ppaux.limits import Limits
    from ppaux.replay.materialize import Materializer

    try:
        dump = read_dump(path)
        findings = check_dump(dump, find_payloads(dump), Limits())
    except ReadMismatch as exc:
        return Verdict("refused", {exc.code}, reason=exc.reason)
    except DumpError as exc:
        return Verdict("refused", reason=exc.reason)
    codes = {f.code for f in findings if f.severity.value == "error" or f.code == "PP118"}
    if any(not allowed for allowed in dump.globals_seen.values()):
        codes.add("PP201")
    verdict = "findings" if codes else "clean"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with Materializer(dump, torch.device("cpu")) as build:
                value = describe(build.value(dump.root))
    except Exception as exc:
        return Verdict(verdict, codes, None, f"{type(exc).__name__}: {exc}")
    return Verdict(verdict, codes, value)


#: torch refusals that come from this machine, not from the file (a CUDA tensor on a machine
#: without CUDA): counted, never failed.
ENVIRONMENT_REFUSALS = ("torch.cuda.is_available() is False", "Numpy is not available")


@dataclass
class Disagreement:
    """One variant on which ppaux's verdict breaks its promise."""

    mutation: str
    problem: str
    data: bytes


def compare(ours: Verdict, theirs: dict[str, Any]) -> str | None:
    """Why ``ours`` breaks the clean-report promise given torch's answer, or None."""
    if theirs["outcome"] == "blocked":
        if ours.verdict == "refused" or ours.codes & {"PP201", "PP202", "PP203"}:
            return None
        return f"torch had to be blocked ({theirs['blocked']}), ppaux says {ours.verdict}"
    if ours.verdict != "clean":
        return None
    if theirs["outcome"] == "refused":
        error = theirs["error"] or ""
        if any(marker in error for marker in ENVIRONMENT_REFUSALS):
            return None
        return f"ppaux clean, torch refuses: {error}"[:400]
    if ours.value is None:
        return f"ppaux clean, but its reading cannot be rebuilt: {ours.reason}"[:400]
    if ours.value != theirs["value"]:
        mine, torch_read = json.dumps(ours.value)[:300], json.dumps(theirs["value"])[:300]
        return f"ppaux reads {mine}, torch {torch_read}"
    return None


# -- seeds ----------------------------------------------------------------------------------


def seeds() -> list[bytes]:
    """Small files torch.save writes: tensor dicts as sglang sends them, views, several dtypes."""
    import torch

    values = [
        {
            "next_token_ids": torch.arange(3),
            PREFIX + "scores": torch.ones(3),
            "__msg_type__": "output",
        },
        {"a": torch.zeros(2, 2), "b": [torch.ones(1, dtype=torch.float16)], "c": 3},
        {PREFIX + "x": torch.arange(4.0)[1:3], "d": {"e": torch.zeros(1, dtype=torch.bool)}},
        {"t": torch.arange(6, dtype=torch.int32).reshape(2, 3).t(), "s": "text", "f": 0.5},
    ]
    out = []
    for value in values:
        buffer = io.BytesIO()
        torch.save(value, buffer)
        out.append(buffer.getvalue())
    # torch.save's other layouts in the writer model: pickle_protocol=1 (no PROTO, text INT
    # for a bool), and the byteorder record written late (_disable_byteorder_record=True).
    for options in ({"pickle_protocol": 1}, {"_disable_byteorder_record": True}):
        buffer = io.BytesIO()
        torch.save(values[1], buffer, **options)
        out.append(buffer.getvalue())
    return out


Mutation = Callable[[random.Random, bytes, bytes], bytes]

MUTATIONS: list[Mutation] = [
    *ZIP_MUTATIONS,
    *PICKLE_MUTATIONS,
    # Edits in place, keeping the writer's layout: opcode swaps, memo indexes, record names,
    # local header and central directory fields.
    *WRITER_MUTATIONS,
]


@dataclass
class Result:
    """What a run did: variants tried per mutation, how many ppaux and torch read alike,
    torch's outcomes, and the disagreements (empty when ppaux kept its promise)."""

    tried: dict[str, int]
    agreed: int
    outcomes: dict[str, int]
    disagreements: list[Disagreement]


def run(seconds: float, seed: int, workdir: Path, sandbox: Sandbox, *, stop_at: int = 1) -> Result:
    """Vary the seeds for ``seconds``; stop after ``stop_at`` disagreements."""
    rng = random.Random(seed)
    bases = seeds()
    tried = {m.__name__: 0 for m in MUTATIONS}
    outcomes: dict[str, int] = {}
    agreed = 0
    found: list[Disagreement] = []
    path = workdir / "variant.pt"
    deadline = time.monotonic() + seconds
    n = 0
    while time.monotonic() < deadline and len(found) < stop_at:
        mutation = MUTATIONS[n % len(MUTATIONS)]
        n += 1
        try:
            data = mutation(rng, rng.choice(bases), rng.choice(bases))
        except (StopIteration, ValueError, IndexError, zipfile.BadZipFile, struct.error):
            continue
        path.write_bytes(data)
        tried[mutation.__name__] += 1
        ours = ppaux_view(os.fspath(path))
        theirs = sandbox.load(path)
        outcomes[theirs["outcome"]] = outcomes.get(theirs["outcome"], 0) + 1
        problem = compare(ours, theirs)
        if problem is not None:
            found.append(Disagreement(mutation.__name__, problem, data))
        elif ours.verdict == "clean" and theirs["outcome"] == "loaded":
            agreed += 1
    return Result(tried, agreed, outcomes, found)
