"""Measure what ``ppaux explain -`` costs on a long paste read from stdin: a traceback's lines
repeated up to 900 KB and up to 4 MiB (the most ``explain -`` reads), of five kinds of text.

Run::

    python benchmarks/bench_explain_stdin.py

Each paste runs in its own process as a user would (``python -m ppaux_cli explain - < FILE``,
the interpreter's start-up included); CPU time (user and system) and the kernel's peak resident
set size, both from ``os.wait4``, are printed as a Markdown table. Exit 1 when a paste under
1 MB took over 2 s of CPU or 250 MB, or any run ended in a traceback.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

LIMIT_S, LIMIT_MB = 2.0, 250.0
#: The sizes each paste is cut to (whole lines): under 1 MB, and the most explain reads.
SIZES = {"900 KB": 900_000, "4 MiB": 4 * 1024 * 1024}
_WORKER = "ERROR 08-19 21:33:11 worker_base.py:386] "
_RAY = "(RayWorkerWrapper pid=994) ERROR 01-29 07:44:33 worker_base.py:467] "
#: Units repeated: a worker's NCCL error under a start-up frame (every line a marker), Ray's
#: folded copy of it, and a shape error's traceback (none of the nine messages in either); vLLM's
#: relay quoting one of the nine, and the words of one under another type than sglang's (each
#: line a match the search must judge).
UNITS = {
    "NCCL start-up lines": (
        f"{_WORKER}RuntimeError: NCCL error: unhandled system error\n"
        f'{_WORKER}  File "/venv/vllm/worker/worker.py", line 175, in init_device\n'
    ),
    "Ray folded NCCL lines": (
        f"{_RAY}Traceback (most recent call last): [repeated 14x across cluster]\n"
        f'{_RAY}  File "/venv/vllm/worker/worker.py", line 175, in init_device '
        "[repeated 14x across cluster]\n"
        f"{_RAY}RuntimeError: NCCL error: internal error [repeated 14x across cluster]\n"
    ),
    "shape tracebacks": (
        "[2026-12-01 10:00:01 PP1 TP0] Scheduler hit an exception: Traceback (most recent call "
        "last):\n"
        '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 2412, in '
        "run_scheduler_process\n"
        "    scheduler.event_loop_pp()\n"
        "RuntimeError: The size of tensor a (7968) must match the size of tensor b (0)\n"
    ),
    "vLLM relays of one of the nine": (
        "(Worker_TP0 pid=0) ERROR 10-01 10:00:00 [v1/executor/multiproc_executor.py:597] "
        "RuntimeError: Worker failed with error 'auxiliary PP output 'logits' is not a tensor', "
        "please check the stack trace above for the root cause\n"
    ),
    "the nine's words under another type": (
        "KeyError: 'auxiliary PP output 'logits' is not a tensor'\n"
    ),
}


def _paste(unit: str, size: int) -> bytes:
    text = (unit * (size // len(unit) + 1))[:size]
    return text[: text.rfind("\n") + 1].encode()


def _run(path: Path) -> tuple[float, float, int, bytes]:
    """CPU seconds, peak RSS in MB, exit status and stderr of ``explain - < path``."""
    env = {**os.environ, "NO_COLOR": "1", "PYTHONIOENCODING": "utf-8:strict"}
    with path.open("rb") as stdin, tempfile.TemporaryFile() as err:
        child = subprocess.Popen(
            [sys.executable, "-m", "ppaux_cli", "explain", "-"],
            stdin=stdin,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
        )
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        said = err.read()
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, child.returncode, said


def main() -> int:
    """Run every paste at both sizes, print the figures; exit 1 over the target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), help="only pastes of this size")
    chosen = parser.parse_args().size
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs, load average {load}; "
        "fresh python -m ppaux_cli per run\n\n"
        "| paste | size | CPU s | peak RSS MB | exit |\n|---|---|---|---|---|"
    )
    root = Path(tempfile.mkdtemp(prefix="ppaux-explain-stdin-"))
    failed = []
    for name, unit in UNITS.items():
        for label, size in SIZES.items():
            if chosen is not None and label != chosen:
                continue
            path = root / f"{len(failed)}-{name.replace(' ', '-')}-{size}.txt"
            path.write_bytes(_paste(unit, size))
            cpu, rss, code, said = _run(path)
            print(f"| {name} | {label} | {cpu:.2f} | {rss:.0f} | {code} |")
            over = size < 1_000_000 and (cpu > LIMIT_S or rss > LIMIT_MB)
            if over or b"Traceback" in said:
                failed.append(f"{name} {label}: {cpu:.2f} s CPU, {rss:.0f} MB, exit {code}")
    limits = f"{LIMIT_S:.0f} s of CPU or {LIMIT_MB:.0f} MB"
    print(f"\nunder 1 MB over {limits}, or a traceback: {len(failed)}")
    print("".join(f"- {line}\n" for line in failed), end="")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
