"""The cost of ``inspect``, ``diff`` and ``tensorize`` on small files whose values repeat: a
pickle repeats a value in a byte or two (``N``, ``BINGET``), so a file of a few KB may hold
lists nested 40 deep, each level holding the level below twice (2**40 numbers written out), and
a file under 1 MB a list of 990,000 Nones; three pickles written by hand hold a container per
one to four bytes (980,000 empty lists between one MARK and APPENDS, 490,000 by APPEND, 245,000
lists of one None). Each ``.pkl`` is also diffed with a copy of itself, and read by CPython's
``pickle.loads`` and ``pickletools.dis`` in the same kind of child process, for reference.

Run::

    python benchmarks/bench_repeated_values.py [--before DIR] [--only NAME ...]

Each file is written here (torch.save for the ``.pt`` files, pickle for the ``.pkl`` ones),
then each command runs as a child process (``python -m ppaux_cli``) that reports its own CPU
time (user and system) and peak RSS; ``diff`` compares the file with the 990,000 Nones. With
``--before DIR`` the same runs are made, file by file, with the ppaux of the source tree DIR
first on ``PYTHONPATH`` (another checkout: ``git archive COMMIT | tar -x -C DIR``), each under
a 20 s CPU limit and 4 GiB of address space, so that a run that would expand a shared value is
stopped (shown as ``>20 s`` or ``>4 GiB``) rather than take the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
AUX = "__sampling_observer_output__."
CPU_LIMIT_S = 20
MEMORY_LIMIT = 4 << 30

_MEASURE = """
import json, resource, runpy, sys
cpu, memory = int(sys.argv[1]), int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
sys.argv = ["ppaux", *sys.argv[3:]]
code = 0
try:
    runpy.run_module("ppaux_cli", run_name="__main__")
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else 1
except MemoryError:
    code = "memory"
usage = resource.getrusage(resource.RUSAGE_SELF)
with open("/proc/self/status") as status:
    peak = next(int(x.split()[1]) for x in status if x.startswith("VmHWM:"))
sys.stderr.write("\\nCOST " + json.dumps([usage.ru_utime + usage.ru_stime, peak, code]))
"""


def _doubled(kind: str, depth: int = 40) -> object:
    value: object = 1
    for level in range(depth):
        shape = kind if kind != "mix" else ("list", "tuple", "dict")[level % 3]
        if shape == "list":
            value = [value, value]
        elif shape == "tuple":
            value = (value, value)
        else:
            value = {"a": value, "b": value}
    return value


def _files(folder: Path) -> dict[str, Path]:
    import torch

    made: dict[str, Path] = {}

    def save(name: str, mapping: dict[str, object]) -> None:
        made[name] = folder / name
        torch.save(mapping, made[name])

    def dump(name: str, mapping: dict[str, object], protocol: int = 2) -> None:
        made[name] = folder / name
        with open(made[name], "wb") as handle:
            pickle.dump(mapping, handle, protocol=protocol)

    ids = torch.arange(4)
    for kind in ("list", "tuple", "mix"):
        save(f"doubled_{kind}_aux.pt", {"next_token_ids": ids, AUX + "x": _doubled(kind)})
    save(
        "doubled_dict_kept.pt",
        {"next_token_ids": ids, AUX + "x": [1.5, 2.5], "extra": _doubled("dict")},
    )
    dump("nones.pkl", {"next_token_ids": [1], "extra": [None] * 990_000})
    dump("small_ints.pkl", {"next_token_ids": [1], "extra": [i % 256 for i in range(490_000)]})
    dump("empty_tuples.pkl", {"next_token_ids": [1], "extra": [() for _ in range(900_000)]}, 4)
    save("nones_kept.pt", {"next_token_ids": ids, AUX + "x": [1.5], "extra": [None] * 900_000})
    # Written by hand, as no pickler writes them: a container per one or two bytes.
    head = b"\x80\x02}q\x00X\x05\x00\x00\x00extraq\x01]q\x02"
    raw = {
        "empty_lists_marked.pkl": head + b"(" + b"]" * 980_000 + b"es.",
        "list_appends.pkl": head + b"]a" * 490_000 + b"s.",
        "lists_of_none.pkl": head + b"]Naa" * 245_000 + b"s.",
    }
    for name, data in raw.items():
        made[name] = folder / name
        made[name].write_bytes(data)
    for name in list(made):
        if name.endswith(".pkl"):  # diff of two such files, each read whole
            (folder / f"copy_{name}").write_bytes(made[name].read_bytes())
    return made


#: The same bytes read by CPython's own unpickler (C) and disassembled by pickletools
#: (Python), in the same kind of child process: what a pass over the opcodes costs elsewhere.
_REFERENCES = {
    "pickle.loads": "import pickle, sys; pickle.loads(open(sys.argv[1], 'rb').read())",
    "pickletools.dis": (
        "import io, pickletools, sys; pickletools.dis(open(sys.argv[1], 'rb').read(), "
        "out=io.StringIO())"
    ),
}
_REFERENCE = """
import json, resource, sys
code = sys.argv[1]
sys.argv = sys.argv[1:]
exec(code)
usage = resource.getrusage(resource.RUSAGE_SELF)
with open("/proc/self/status") as status:
    peak = next(int(x.split()[1]) for x in status if x.startswith("VmHWM:"))
sys.stderr.write("\\nCOST " + json.dumps([usage.ru_utime + usage.ru_stime, peak, 0]))
"""


def _reference(code: str, path: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", _REFERENCE, code, str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if "COST " not in done.stderr:
        return "failed"
    seconds, kib, _ = json.loads(done.stderr.rsplit("COST ", 1)[1])
    return f"{seconds:.2f} s, {kib / 1024:.0f} MB"


def _cost(argv: list[str], tree: str | None, folder: Path) -> str:
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = tree
    try:
        done = subprocess.run(
            [sys.executable, "-c", _MEASURE, str(CPU_LIMIT_S), str(MEMORY_LIMIT), *argv],
            capture_output=True,
            text=True,
            cwd=folder,  # not the checkout: its ppaux would come first on the path
            env=env,
            timeout=CPU_LIMIT_S * 10,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f">{CPU_LIMIT_S * 10} s wall"
    if "COST " not in done.stderr:  # killed at the CPU limit
        return f">{CPU_LIMIT_S} s"
    seconds, kib, code = json.loads(done.stderr.rsplit("COST ", 1)[1])
    if code == "memory" or "MemoryError" in done.stderr or "can't allocate" in done.stderr:
        return f"{seconds:.2f} s, >{MEMORY_LIMIT >> 30} GiB"
    return f"{seconds:.2f} s, {kib / 1024:.0f} MB, exit {code}"


def _commands(path: Path, other: Path, out: Path) -> dict[str, list[str]]:
    commands = {
        "inspect": ["inspect", str(path), "-o", str(out / "report")],
        "diff": ["diff", str(path), str(other), "-o", str(out / "report")],
        "tensorize": ["tensorize", str(path), "-o", str(out / "new.pt")],
    }
    copy = path.parent / f"copy_{path.name}"
    if copy.exists():
        commands["diff with a copy"] = ["diff", str(path), str(copy), "-o", str(out / "report")]
    return commands


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="DIR", help="another ppaux source tree to compare")
    parser.add_argument("--only", nargs="*", metavar="NAME", help="only these files")
    args = parser.parse_args()
    trees: list[tuple[str, str | None]] = [("after", None)]
    if args.before:
        trees.insert(0, ("before", os.path.abspath(args.before)))
    with tempfile.TemporaryDirectory(prefix="bench-repeated-") as name:
        folder = Path(name)
        files = _files(folder)
        print("| file | bytes | command | " + " | ".join(t for t, _ in trees) + " |")
        print("|---|---:|---|" + "---|" * len(trees))
        for label, path in files.items():
            if args.only and label not in args.only:
                continue
            commands: dict[str, list[str]] = _commands(path, files["nones.pkl"], folder)
            for command, argv in commands.items():
                cells: list[str] = []
                for _, tree in trees:
                    cells.append(_cost(argv, tree, folder))
                    _clean(folder)
                size = path.stat().st_size
                print(f"| {label} | {size} | {command} | " + " | ".join(cells) + " |", flush=True)
            if label.endswith(".pkl"):
                for name, code in _REFERENCES.items():
                    cell = _reference(code, path)
                    cells = [cell] * len(trees)
                    print(f"| {label} | {size} | ({name}) | " + " | ".join(cells) + " |")


def _clean(folder: Path, remove: Callable[[Path], None] = Path.unlink) -> None:
    for name in ("report", "new.pt"):
        if (folder / name).exists():
            remove(folder / name)


if __name__ == "__main__":
    main()
