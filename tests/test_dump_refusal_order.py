"""Where torch.load fails part-way through a pickle, ppaux says so (PP117) at the same place: a
storage location torch cannot restore stops it at that storage, before any call written after
it; a numpy array whose bytes are not its shape's stops it at that array's state. A call made
before the failure is still reported (PP201). Each expected answer was written from torch's
behaviour, and is checked against torch.load in a child process on the file the test wrote."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO

from ppaux.dump import inspect_paths

sys.path.insert(0, str(REPO / "fixtures"))

from make_adversarial import (
    BUILD,
    NEWFALSE,
    NEWTRUE,
    NONE,
    by,
    call,
    g,
    i,
    message,
    pickle_of,
    s,
    tensor,
    torch_zip,
    tup,
)

pytestmark = pytest.mark.torch

P = "__sampling_observer_output__."


def _torch_errors(path: Path) -> list[str]:
    """For weights_only True then False: 'loaded', or the first line torch.load raised (the
    default reader also refuses the SHORT_BINUNICODE these pickles are written with)."""
    code = (
        "import sys, torch\n"
        "for wo in (True, False):\n"
        "    try:\n"
        "        torch.load(sys.argv[1], weights_only=wo)\n"
        "        print('loaded')\n"
        "    except Exception as exc:\n"
        "        print(type(exc).__name__, str(exc).splitlines()[0] if str(exc) else '')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.splitlines()


def _findings(path: Path) -> list[tuple[str, str]]:
    report = inspect_paths([str(path)])
    assert not report.problems, report.problems
    return [(f.code, f.message) for f in report.findings]


def _write(path: Path, *entries: tuple[bytes, bytes]) -> Path:
    floats = struct.pack("<2f", 0.5, 1.5)
    storages = {"0": struct.pack("<2q", 1, 2), "1": floats, "2": floats}
    path.write_bytes(torch_zip(pickle_of(message(*entries)), storages=storages).data)
    return path


_GETCWD = call(g("posix", "getcwd"))


def test_an_unrestorable_location_stops_torch_before_a_later_call(tmp_path):
    path = _write(
        tmp_path / "loc_then_call.pt",
        (s(P + "bad"), tensor("2", location="cpu:0")),
        (s(P + "cwd"), _GETCWD),
    )
    default, unsafe = _torch_errors(path)
    assert "restore data location" in unsafe and "cpu:0" in unsafe, unsafe
    assert default != "loaded", default
    found = _findings(path)
    assert [code for code, _ in found] == ["PP117"], found
    assert "cpu:0" in found[0][1] and "BINPERSID" in found[0][1], found


def test_a_call_before_an_unrestorable_location_is_still_reported(tmp_path):
    path = _write(
        tmp_path / "call_then_loc.pt",
        (s(P + "cwd"), _GETCWD),
        (s(P + "bad"), tensor("2", location="cpu:0")),
    )
    default, unsafe = _torch_errors(path)
    assert "restore data location" in unsafe, unsafe
    assert default.startswith("UnpicklingError"), default
    codes = [code for code, _ in _findings(path)]
    assert codes == ["PP201", "PP117"], codes


def _array(shape: tuple[int, ...], data: bytes) -> bytes:
    dtype = call(g("numpy", "dtype"), s("f4"), NEWFALSE, NEWTRUE)
    dtype += tup(i(3), s("<"), NONE, NONE, NONE, i(-1), i(-1), i(0)) + BUILD
    array = call(
        g("numpy._core.multiarray", "_reconstruct"), g("numpy", "ndarray"), tup(i(0)), by(b"b")
    )
    return array + tup(i(1), tup(*map(i, shape)), dtype, NEWFALSE, by(data)) + BUILD


@pytest.mark.parametrize(("shape", "items"), [((5,), 4), ((2, 2), 5), ((3,), 0)])
def test_a_numpy_array_short_or_long_of_its_shape_is_refused(tmp_path, shape, items):
    pytest.importorskip("numpy")
    data = struct.pack(f"<{items}f", *range(items))
    path = _write(tmp_path / "short.pt", (s(P + "values"), _array(shape, data)))
    default, unsafe = _torch_errors(path)
    assert unsafe == "ValueError buffer size does not match array size", unsafe
    assert default.startswith("UnpicklingError"), default
    found = _findings(path)
    assert [code for code, _ in found] == ["PP117"], found
    assert f"holds {4 * items} bytes" in found[0][1], found


def test_a_numpy_array_of_its_shape_is_read(tmp_path):
    pytest.importorskip("numpy")
    data = struct.pack("<4f", 1.5, 2.5, 3.5, 4.5)
    path = _write(tmp_path / "exact.pt", (s(P + "values"), _array((2, 2), data)))
    default, unsafe = _torch_errors(path)
    assert unsafe == "loaded" and default.startswith("UnpicklingError"), (default, unsafe)
    codes = [code for code, _ in _findings(path)]
    # The fixture's pickle memoizes nothing (PP118), its message is partial (PP101).
    assert "PP119" in codes and "PP117" not in codes, codes
