"""tensorize reads a numpy array as numpy's ``ndarray.__setstate__`` takes it: the byte order
from the dtype's pickled state, the shape and data exactly as numpy parses them; a state numpy
refuses is refused, naming the key. Values are checked against torch.load(weights_only=False)
run in a child process on the file this test wrote."""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import pytest
from helpers import REPO
from torch_children import Children

from ppaux.dump import inspect_paths
from ppaux.fix import tensorize_dump

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
    torch_zip,
    tup,
)

pytestmark = pytest.mark.torch

P = "__sampling_observer_output__."
VALUES = [1.5, 2.5, 3.5, 4.5]


def _array(spec: str, order: str, shape: bytes, data: bytes, version: bytes = b"K\x01") -> bytes:
    dtype = call(g("numpy", "dtype"), s(spec), NEWFALSE, NEWTRUE)
    dtype += tup(i(3), s(order), NONE, NONE, NONE, i(-1), i(-1), i(0)) + BUILD
    array = call(
        g("numpy._core.multiarray", "_reconstruct"), g("numpy", "ndarray"), tup(i(0)), by(b"b")
    )
    return array + tup(version, shape, dtype, NEWFALSE, data) + BUILD


def _dump(path: Path, array: bytes) -> Path:
    path.write_bytes(torch_zip(pickle_of(message((s(P + "values"), array)), protocol=3)).data)
    return path


def _torch_reads(path: Path, children: Children) -> object:
    """torch.load(weights_only=False) of a file this test wrote, in a child process."""
    code = (
        "import json, sys, torch, numpy\n"
        "v = torch.load(sys.argv[1], weights_only=False)[sys.argv[2]]\n"
        "print(json.dumps(numpy.asarray(v).tolist()))\n"
    )
    done = children.run(code, str(path), P + "values", timeout=120)
    if done.returncode:
        return ("refused", done.stderr.strip().splitlines()[-1])
    return json.loads(done.stdout)


def test_the_byte_order_is_the_dtype_states(tmp_path, torch_children):
    # The spec says big-endian, the state little-endian: numpy's __setstate__ wins.
    little = struct.pack("<4f", *VALUES)
    source = _dump(tmp_path / "in.pt", _array(">f4", "<", tup(i(4)), by(little)))
    result = tensorize_dump(str(source), str(tmp_path / "out.pt"))
    assert result.written, result.refusals
    import torch

    value = torch.load(tmp_path / "out.pt", weights_only=True)[P + "values"]
    assert value.tolist() == VALUES
    pytest.importorskip("numpy")
    assert _torch_reads(source, torch_children) == VALUES


@pytest.mark.parametrize(
    ("name", "array", "reason"),
    [
        (
            "version 2",
            _array("f4", "<", tup(i(4)), by(struct.pack("<4f", *VALUES)), version=i(2)),
            "state version is 2",
        ),
        (
            "a (True,) shape",
            _array("f4", "<", tup(NEWTRUE), by(struct.pack("<f", 1.5))),
            "is not a tuple of sizes",
        ),
        (
            "a bytearray buffer",
            _array(
                "f4",
                "<",
                tup(i(4)),
                call(g("builtins", "bytearray"), by(struct.pack("<4f", *VALUES))),
            ),
            "is a bytearray",
        ),
        (
            "a bytearray of a Latin-1 str",
            _array(
                "f4",
                "<",
                tup(i(4)),
                call(
                    g("builtins", "bytearray"),
                    s(struct.pack("<4f", *VALUES).decode("latin-1")),
                    s("latin1"),
                ),
            ),
            "is a bytearray",
        ),
    ],
)
def test_a_state_numpy_refuses_is_refused(tmp_path, torch_children, name, array, reason):
    source = _dump(tmp_path / "in.pt", array)
    # inspect names numpy's refusal of the state (PP116), never a malformed pickle.
    found = {f.code: f.message for f in inspect_paths([str(source)]).findings}
    assert "PP116" in found and reason in found["PP116"], (name, found)
    result = tensorize_dump(str(source), str(tmp_path / "out.pt"))
    assert not result.written and not (tmp_path / "out.pt").exists(), name
    [refusal] = result.refusals
    assert refusal.key == P + "values" and reason in refusal.reason, refusal
    pytest.importorskip("numpy")
    answer = _torch_reads(source, torch_children)
    assert isinstance(answer, tuple) and answer[0] == "refused", (name, answer)
    if "bytearray" in name:  # numpy's own words, as torch.load passes them on
        assert answer[1] == "TypeError: pickle not returning string", answer
        assert "(numpy: TypeError: pickle not returning string)" in found["PP116"], found
