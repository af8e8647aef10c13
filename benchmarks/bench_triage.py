"""How fast and how small ``ppaux triage`` reads a big log, against ``grep -E -c`` on the same file.

    python benchmarks/bench_triage.py [--mib 300] [--rounds 5] [--hostile]

Writes a log of ``--mib`` MiB of healthy sglang lines (``[time PP0 TP0] Decode batch, ...``)
with one incident at the end (the failure part of fixtures/logs/sglang-aux-list.log: the first
stage's traceback, the parent's SIGQUIT, the last stage's), then times, in alternation, round
after round, in the same run:

- ``grep -E -c 'Traceback \\(most recent call last\\)|Watchdog caught collective|SIGQUIT
  received' LOG`` (three patterns, GNU grep, counting matching lines);
- ``ppaux triage LOG --format json`` (the whole command: start-up, one pass, the report), its
  modules' bytecode written first, as installing ppaux writes it.

Each is a child process; its wall time, CPU time and peak resident memory (``ru_maxrss`` from
``os.wait4``, which counts from the fork, so this script keeps itself small) are recorded.
Printed: medians, the ratios of medians, the highest peaks, and a check that the triage found
the root on the right line. ``--hostile`` also runs triage on a
1 GiB file that is one line (no newline at all) and on 64 MiB of random bytes, for time and peak
memory. ``--small`` runs triage on hostile inputs under 1 MB each (200 tracebacks that never
end then 330,000 short lines; a 917 KB-class gzip bomb of 900 MiB; the sample log as bzip2, xz
and UTF-16 without a byte-order mark; 5,000-digit ranks and line numbers; pastes that are not
one line per line: wrapped at 80 columns, Loki's query API response (also wrapped at 80
columns), a table export newest first (also wrapped at 50 columns), Docker records of 70 KB
each, Docker records nested three deep, fluent-bit's printed records of 5,000 keys, frames
behind a 380-digit prefix no layer knows, a gzip of a 4 MiB JSON array of tiny records,
one-line tracebacks of 1,500 frames, a JSON array nested 500,000 deep, a gzip of 80,000 short
tracebacks, 1 MB of them plain)
and prints each one's CPU time and peak memory (targets: 2 s CPU, 250 MB).
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import json
import lzma
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "fixtures" / "logs" / "sglang-aux-list.log"
PATTERNS = r"Traceback \(most recent call last\)|Watchdog caught collective|SIGQUIT received"
HEALTHY = (
    "[2026-12-03 14:22:01 PP0 TP0] Decode batch, #running-req: 12, #token: 5120, token usage: "
    "0.04, cuda graph: True, gen throughput (token/s): 812.44, #queue-req: 0\n"
)


def write_log(path: Path, mib: int) -> int:
    """Write the benchmark log; return the line where the root's record starts."""
    tail = SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)
    first = next(i for i, line in enumerate(tail) if "PP0] Scheduler hit an exception" in line)
    block = HEALTHY * 8192
    repeats = mib * (1 << 20) // len(block)
    with open(path, "w", encoding="utf-8") as out:
        for _ in range(repeats):
            out.write(block)
        out.writelines(tail[first:])
    return repeats * 8192 + 1


def run(command: list[str]) -> tuple[float, float, int, bytes]:
    """(wall seconds, CPU seconds, peak RSS in bytes, stdout) of ``command`` as a child."""
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = child.stdout.read() if child.stdout else b""
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, out


def compile_bytecode() -> None:
    """Write the bytecode of ppaux's modules, as installing it does (pip compiles what it
    installs): where the environment keeps Python from writing it (``PYTHONDONTWRITEBYTECODE``
    in an editable checkout), every start-up would compile each module again."""
    import compileall

    for package in ("ppaux", "ppaux_cli"):
        compileall.compile_dir(ROOT / package, quiet=1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--hostile", action="store_true")
    parser.add_argument("--small", action="store_true")
    args = parser.parse_args()
    if args.small:
        return small()
    grep = shutil.which("grep")
    if grep is None:
        print("grep not found", file=sys.stderr)
        return 2
    ppaux = [sys.executable, "-m", "ppaux_cli", "triage"]
    compile_bytecode()
    with tempfile.TemporaryDirectory(prefix="ppaux-bench-triage-") as scratch:
        log = Path(scratch) / "server.log"
        line = write_log(log, args.mib)
        size = log.stat().st_size
        walls: dict[str, list[float]] = {"grep": [], "triage": []}
        cpus: dict[str, list[float]] = {"grep": [], "triage": []}
        peaks: dict[str, int] = {"grep": 0, "triage": 0}
        found_line = None
        for _ in range(args.rounds):
            for name in random.sample(["grep", "triage"], 2):
                if name == "grep":
                    wall, cpu, peak, _ = run([grep, "-E", "-c", PATTERNS, str(log)])
                else:
                    wall, cpu, peak, out = run([*ppaux, str(log), "--format", "json"])
                    report = json.loads(out)
                    roots = [f for f in report["findings"] if f["code"] == "PP801"]
                    found_line = roots[0]["location"]["line"] if roots else None
                walls[name].append(wall)
                cpus[name].append(cpu)
                peaks[name] = max(peaks[name], peak)
        grep_s = statistics.median(walls["grep"])
        triage_s = statistics.median(walls["triage"])
        grep_cpu = statistics.median(cpus["grep"])
        triage_cpu = statistics.median(cpus["triage"])
        print(f"log: {size / (1 << 20):.0f} MiB, {line + 20} lines, one incident at line {line}")
        print(f"rounds: {args.rounds}, alternating in random order")
        print(
            f"grep -E -c (3 patterns): median {grep_s:.3f} s wall, {grep_cpu:.3f} s CPU, "
            f"peak {peaks['grep'] / 1e6:.1f} MB"
        )
        print(
            f"ppaux triage --format json: median {triage_s:.3f} s wall, {triage_cpu:.3f} s CPU, "
            f"peak {peaks['triage'] / 1e6:.1f} MB"
        )
        print(f"ratio triage/grep: {triage_s / grep_s:.2f} wall, {triage_cpu / grep_cpu:.2f} CPU")
        print(f"root found on line {found_line} (expected {line})")
        if args.hostile:
            huge = Path(scratch) / "one-line.log"
            with open(huge, "wb") as out:
                chunk = b"A" * (1 << 20)
                for _ in range(1024):
                    out.write(chunk)
            wall, _, peak, _ = run([*ppaux, str(huge), "--format", "json"])
            print(f"1 GiB single line: {wall:.2f} s, peak {peak / 1e6:.1f} MB")
            huge.unlink()
            binary = Path(scratch) / "binary.log"
            rng = random.Random(0)
            with open(binary, "wb") as out:  # in pieces: a child's peak counts its parent's
                for _ in range(64):
                    out.write(rng.randbytes(1 << 20))
            wall, _, peak, _ = run([*ppaux, str(binary), "--format", "json"])
            print(f"64 MiB random bytes: {wall:.2f} s, peak {peak / 1e6:.1f} MB")
    return 0 if found_line == line else 1


def _small_inputs(scratch: Path) -> dict[str, Path]:
    """The hostile inputs under 1 MB, written into ``scratch``."""
    sample = SAMPLE.read_bytes()
    made: dict[str, bytes] = {
        "200 open tracebacks, 330,000 lines": b"".join(
            f"[2026-12-03 10:00:00 PP0 TP{i}] Scheduler hit an exception: Traceback (most "
            "recent call last):\n".encode()
            for i in range(200)
        )
        + b"  x\n" * 330_000,
        "bzip2 of the sample": bz2.compress(sample),
        "xz of the sample": lzma.compress(sample),
        "UTF-16-LE of the sample, no BOM": sample.decode().encode("utf-16-le"),
        "5,000-digit rank and line": (
            f"[2026-12-03 10:00:00 PP{'7' * 5000} TP0] Scheduler hit an exception: Traceback "
            f'(most recent call last):\n  File "/x/sglang/srt/a.py", line {"9" * 5000}, in f\n'
            "    f()\nRuntimeError: boom\n"
        ).encode()
        * 60,
        # A marker on every line and no failure: each line is a stop of the scan, so the search
        # for the markers the log does not hold must not start again at every stop.
        "1 MB of one-line 'Error:' records": b"".join(
            f"[2026-12-03 14:56:07 TP0] Error: the input ({i} tokens) is longer than the "
            "model context length\n".encode()
            for i in range(10_000)
        ),
        "1 MB of one-line Exception: RuntimeError('...') records": (
            b"[2026-12-03 14:56:07 PP0] Exception: RuntimeError('the request was aborted')\n"
            * 13_000
        ),
    }
    made.update(_paste_inputs(sample.decode()))
    # Many short tracebacks: each of their lines is read one by one, so the cost is per line.
    short = b"".join(
        f'Traceback (most recent call last):\n  File "/x/a.py", line {i}, in f\n'
        f"RuntimeError: boom {i}\n".encode()
        for i in range(80_000)
    )
    made["gzip of 80,000 short tracebacks (7.6 MB of log)"] = gzip.compress(short, 9)
    made["1 MB of short tracebacks"] = short[:1_000_000]
    paths = {}
    for index, (name, data) in enumerate(made.items()):
        path = scratch / f"small-{index}.log"
        path.write_bytes(data)
        paths[name] = path
    bomb = scratch / "bomb.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as out:
        block = b"\n" * (1 << 20)
        for _ in range(900):
            out.write(block)
    paths["gzip bomb, 900 MiB of newlines"] = bomb
    return paths


def _paste_inputs(sample: str) -> dict[str, bytes]:
    """Pastes that are not one line per line, each about 1 MB (or under it compressed)."""
    decode = [
        f"[2026-12-03 14:55:{n % 60:02d} PP0 TP0] Decode batch, #running-req: 12, #token: {n}, "
        "token usage: 0.11, cuda graph: True, gen throughput (token/s): 301.22, #queue-req: 0"
        for n in range(6600)
    ]
    lines = decode + sample.splitlines()
    wrapped = [line[i : i + 80] for line in lines for i in range(0, max(len(line), 1), 80)]
    values = [[str(1764773767000000000 + n), line] for n, line in enumerate(lines)]
    loki = {"status": "success", "data": {"resultType": "streams", "result": []}}
    loki["data"]["result"] = [{"stream": {"pod": "sglang-0"}, "values": values}]  # type: ignore[index]
    label = '{pod="sglang-0"}'
    flat = (
        "[2026-05-20 08:02:45 PP1 TP0] Scheduler hit an exception: Traceback (most recent call "
        "last): "
        + " ".join(f'File "/x/{i}.py", line {i}, in f{i} x = y' for i in range(1500))
        + " RuntimeError: boom\n"
    )
    escaped = repr(flat.replace(" File ", "\n  File ").rstrip("\n"))
    logfmt = 'at="Traceback (most recent call last):" ' + " ".join(
        f'k{i}="v \\" {i}"' for i in range(1000)
    )
    return {
        "1 MB of logfmt lines of 1,000 quoted pairs, a traceback header, no message": (
            logfmt + "\n"
        ).encode()
        * ((1 << 20) // (len(logfmt) + 1) + 1),
        "1 MB of repr()-flattened tracebacks of 1,500 frames behind fan-out and rank tags": (
            "node1: [default0]:[1,0]<stderr>:" + escaped + "\n"
        ).encode()
        * 19,
        "the sample after 6,600 lines, wrapped at 80 columns": "\n".join(wrapped).encode() + b"\n",
        "the same as Loki's query API response": json.dumps(loki).encode(),
        "gzip of a 4 MiB JSON array of tiny records": gzip.compress(
            ("[" + ",".join(['{"a":1}'] * ((4 << 20) // 8 - 2)) + "]").encode()
        ),
        "1 MB of lines of exactly 80 columns": (b"a" * 40 + b"b" * 40 + b"\n") * 12945,
        "1 MB of one-line tracebacks of 1,500 frames": flat.encode() * 19,
        "a JSON array nested 500,000 deep": b"[" * 500_000 + b"]" * 500_000,
        "the sample after 6,600 lines as a table export, newest first": "".join(
            f"2025-12-03T14:56:{n // 100000 % 60:02d}.{n % 100000:06d}Z\t{label}\t{line}\n"
            for n, line in reversed(list(enumerate(lines)))
        ).encode(),
        "Loki's query API response wrapped at 80 columns": "\n".join(
            text[i : i + 80] for text in [json.dumps(loki)] for i in range(0, len(text), 80)
        ).encode(),
        "the table export newest first, wrapped at 50 columns": "".join(
            row[i : i + 50] + "\n"
            for n, line in reversed(list(enumerate(lines)))
            for row in [f"2025-12-03 14:56:{n // 100000 % 60:02d}.{n % 1000:03d}\t{line}"]
            for i in range(0, len(row), 50)
        ).encode(),
        "1 MB of frames behind a 380-digit prefix no layer knows": (
            "7" * 380 + " [2026-12-03 14:56:07 PP0] Scheduler hit an exception: Traceback "
            "(most recent call last):\n" + ("1" * 380 + '   File "/x/a.py", line 1, in f\n') * 2500
        ).encode(),
        "the sample after 6,600 lines as Docker records nested three deep": "".join(
            json.dumps({"log": json.dumps({"log": json.dumps({"log": line + "\n"})}) + "\n"}) + "\n"
            for line in lines
        ).encode(),
        "1 MB of fluent-bit's printed records of 5,000 keys": (
            '[0] tail.0: [1796309761.5, {"log"=>"Traceback (most recent call last):", '
            + ", ".join(f'"k{i}"=>"v, \\"x\\"=>"' for i in range(5000))
            + "}]\n"
        ).encode()
        * 10,
        "1 MB of Docker records of 70 KB, escapes throughout": "".join(
            json.dumps(
                {
                    "log": "Traceback (most recent call last):\n" + '\\\u00e9"' * 17500,
                    "stream": "stderr",
                    "time": "2026-12-03T14:56:07Z",
                }
            )
            + "\n"
            for _ in range(7)
        ).encode(),
    }


def small() -> int:
    """CPU time and peak memory of triage on each hostile input under 1 MB."""
    ppaux = [sys.executable, "-m", "ppaux_cli", "triage"]
    worst = 0.0
    with tempfile.TemporaryDirectory(prefix="ppaux-bench-triage-small-") as scratch:
        for name, path in _small_inputs(Path(scratch)).items():
            _, cpu, peak, _ = run([*ppaux, str(path), "--format", "json"])
            size = path.stat().st_size
            print(f"{name} ({size / 1e3:.0f} KB): {cpu:.2f} s CPU, peak {peak / 1e6:.1f} MB")
            worst = max(worst, cpu)
    return 0 if worst <= 2.0 else 1


if __name__ == "__main__":
    sys.exit(main())
