"""The cost of ``ppaux inspect`` on small files made to be expensive: a value shared by many
entries (a 1 MiB numpy dtype spec under 400 arrays, an 8 MiB storage key under 20,000 tensors),
each file a few KB on disk (data.pkl deflated). Each run is a child process that reports its own
CPU time and peak memory.

    python benchmarks/bench_shared_values.py
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_MEASURE = """
import json, resource, runpy, sys
sys.argv = ["ppaux", *sys.argv[1:]]
try:
    runpy.run_module("ppaux_cli", run_name="__main__")
except SystemExit:
    pass
usage = resource.getrusage(resource.RUSAGE_SELF)
peak = usage.ru_maxrss  # KiB; on Linux it keeps the peak of the process before exec, so
try:  # the peak of this address space (VmHWM) is read where there is one
    with open("/proc/self/status") as status:
        peak = next(int(x.split()[1]) for x in status if x.startswith("VmHWM:"))
except (OSError, StopIteration, ValueError):
    pass
sys.stderr.write("\\nCOST " + json.dumps([usage.ru_utime + usage.ru_stime, peak]))
"""


def _cost(*args: str) -> tuple[float, float]:
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    seconds, kib = json.loads(done.stderr.rsplit("COST ", 1)[1])
    return seconds, kib / 1024


def _put(counter: list[int]) -> bytes:
    index = counter[0]
    counter[0] += 1
    return b"q" + bytes([index]) if index < 256 else b"r" + struct.pack("<I", index)


def _get(index: int) -> bytes:
    return b"h" + bytes([index]) if index < 256 else b"j" + struct.pack("<I", index)


def shared_dtype_spec(path: Path) -> None:
    """400 numpy arrays whose dtype is built from one 1 MiB spec string, in a zip whose
    data.pkl is deflated (a few KB on disk)."""
    memo = [1]
    out = [b"\x80\x02}q\x00("]
    out += [b"cnumpy._core.multiarray\n_reconstruct\n", _put(memo)]
    out += [b"cnumpy\nndarray\n", _put(memo), b"cnumpy\ndtype\n", _put(memo)]
    spec = b"f4" + b"x" * (1 << 20)
    out += [b"X" + struct.pack("<I", len(spec)) + spec, _put(memo)]
    for i in range(400):
        key = f"k{i}".encode()
        out += [b"X" + struct.pack("<I", len(key)) + key, _put(memo)]
        out += [_get(1), _get(2), b"K\x00\x85", _put(memo), b"C\x01b\x87", _put(memo)]
        out += [b"R", _put(memo), b"(K\x01K\x01\x85", _put(memo), _get(3), _get(4)]
        out += [b"\x89\x88\x87", _put(memo), b"R", _put(memo), b"(K\x03X\x01\x00\x00\x00<"]
        out += [_put(memo), b"NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00t", _put(memo), b"b"]
        out += [b"\x89C\x04\x00\x00\x80?t", _put(memo), b"b"]
    out.append(b"u.")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("archive/data.pkl", b"".join(out))
        archive.writestr("archive/byteorder", "little")
        archive.writestr("archive/version", "3\n")


def repeated_storage_key(path: Path) -> None:
    """20,000 tensors on one storage whose key is an 8 MiB string, data.pkl deflated."""
    key = b"7" * (8 << 20)
    parts = [
        b"\x80\x02]q\x00(ctorch._utils\n_rebuild_tensor_v2\nq\x01ctorch\nFloatStorage\nq\x02X"
        + struct.pack("<I", len(key))
        + key
        + b"q\x03ccollections\nOrderedDict\nq\x04"
    ]
    tensor = (
        b"h\x01((X\x07\x00\x00\x00storageh\x02h\x03X\x03\x00\x00\x00cpuK\x01tQK\x00K\x01\x85"
        b"K\x01\x85\x89h\x04)RtR"
    )
    parts += [tensor] * 20_000 + [b"e."]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("archive/data.pkl", b"".join(parts))
        archive.writestr("archive/byteorder", "little")
        archive.writestr("archive/version", "3\n")


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        for make in (shared_dtype_spec, repeated_storage_key):
            path = Path(folder) / f"{make.__name__}.pt"
            make(path)
            for format in ("text", "json"):
                out = str(Path(folder) / "out")
                seconds, mib = _cost("inspect", str(path), "--format", format, "-o", out)
                size = path.stat().st_size
                print(f"{make.__name__} ({size} bytes) {format}: {seconds:.2f} s CPU, {mib:.0f} MB")


if __name__ == "__main__":
    main()
