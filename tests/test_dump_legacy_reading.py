"""A legacy torch.save file (or the stream ``torch.storage._load_from_bytes`` nests in a pickle)
that differs from what the writer writes but that torch.load still reads is never refused as
one torch refuses: it is read, and reported as not as torch.save writes it (PP118). PP117 only
where torch.load really refuses.

torch's answers come from child processes: ``torch.load(weights_only=False)`` in the
differential sandbox (fuzz/torch_sandbox.py, which also describes the value read) and torch's
default, ``weights_only=True``, in tests/weights_only_probe.py.
"""

from __future__ import annotations

import io
import json
import pickle
import pickletools
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_weights_only import TorchAnswers

pytestmark = pytest.mark.torch

sys.path.insert(0, str(REPO / "fuzz"))

import torch_differential as harness  # noqa: E402

from ppaux.dump.dumpfile import read_dump, read_dump_stream  # noqa: E402
from ppaux.errors import LimitExceeded  # noqa: E402
from ppaux.limits import Limits  # noqa: E402

_CPU = b"X\x03\x00\x00\x00cpu"


def _legacy(value: object) -> bytes:
    out = io.BytesIO()
    torch.save(value, out, _use_new_zipfile_serialization=False, pickle_protocol=2)
    return out.getvalue()


def _parts(data: bytes) -> tuple[list[bytes], bytes]:
    """The five pickles (found by the standard library's opcode walker) and the records."""
    parts, pos = [], 0
    for _ in range(5):
        end = pos + [p for _, _, p in pickletools.genops(data[pos:])][-1] + 1
        parts.append(data[pos:end])
        pos = end
    return parts, data[pos:]


def _with_count(data: bytes, count: int) -> bytes:
    parts, records = _parts(data)
    return b"".join(parts) + struct.pack("<q", count) + records[8:]


def _agree(
    path: Path, sandbox: harness.Sandbox, default_loads: TorchAnswers
) -> tuple[harness.Verdict, dict, dict]:
    ours, theirs = harness.ppaux_view(str(path)), sandbox.load(path)
    return ours, theirs, default_loads(path)


#: A plain pickle read as ``pickle.load`` reads it (torch's nested streams then go through
#: torch.load(weights_only=False)), described as the sandbox describes torch's readings, for each
#: path on stdin, each in a child forked from one process that imported torch once: every answer
#: is the one a process of its own gives. Only files whose globals are torch's rebuilds are read
#: this way.
_PICKLE_SERVER = """
import json, os, pickle, sys, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, sys.argv[1])
import torch_sandbox
for line in sys.stdin:
    pid = os.fork()
    if pid == 0:
        try:
            with open(line.rstrip("\\n"), "rb") as f:
                value = pickle.load(f)
        except Exception as exc:
            answer = {"outcome": "refused", "error": repr(exc)}
        else:
            answer = {"outcome": "loaded", "value": torch_sandbox.describe(value)}
        sys.stdout.write(json.dumps(answer) + "\\n")
        sys.stdout.flush()
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if status:
        sys.stdout.write(json.dumps({"died": status}) + "\\n")
        sys.stdout.flush()
"""


class PickleLoads:
    """What ``pickle.load`` does with each path, from one server process (``_PICKLE_SERVER``)
    instead of one process, and one torch import, per path (the ``pickle_loads`` fixture of
    tests/conftest.py)."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _PICKLE_SERVER, str(REPO / "fuzz")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def __call__(self, path: Path) -> dict:
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        stdin.write(f"{path}\n")
        stdin.flush()
        line = stdout.readline()
        assert line, "the pickle.load server gave no answer"
        answer: dict = json.loads(line)
        assert "died" not in answer, answer
        return answer

    def close(self) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)
        self.process.stdout.close()


def _float(n: int) -> bytes:
    return _legacy({"w": torch.arange(float(n))})


def _nested(stream: bytes) -> bytes:
    """A plain pickle of one tensor whose ``_load_from_bytes`` stream is ``stream``."""
    data = pickle.dumps({"w": torch.arange(4.0)}, protocol=3)
    start = data.index(b"\x80\x02\x8a\x0a")
    (length,) = struct.unpack("<I", data[start - 4 : start])
    return data[: start - 4] + struct.pack("<I", len(stream)) + stream + data[start + length :]


def _nested_stream() -> bytes:
    data = pickle.dumps({"w": torch.arange(4.0)}, protocol=3)
    start = data.index(b"\x80\x02\x8a\x0a")
    (length,) = struct.unpack("<I", data[start - 4 : start])
    return data[start : start + length]


def _version(data: bytes, pickled: bytes) -> bytes:
    parts, records = _parts(data)
    return parts[0] + pickled + b"".join(parts[2:]) + records


def _int_key(data: bytes) -> bytes:
    parts, records = _parts(data)
    (key,) = pickle.loads(parts[4])
    text = b"X" + struct.pack("<I", len(key)) + key.encode()
    obj = parts[3].replace(text, b"J" + struct.pack("<i", 12345))
    return b"".join(parts[:3]) + obj + pickle.dumps([12345], protocol=2) + records


#: Files torch.load reads (in both modes unless the third field says its default refuses an
#: opcode), each with what ppaux says: a PP118 warning, the reading torch's.
READ = {
    "count + 2**62 (float32)": (lambda: _with_count(_float(4), 4 + 2**62), "int64", True),
    "count - 2**62 (float32)": (lambda: _with_count(_float(4), 4 - 2**62), "int64", True),
    "count + 2**63 (int16)": (
        lambda: _with_count(_legacy({"w": torch.arange(3, dtype=torch.int16)}), 3 - 2**63),
        "int64",
        True,
    ),
    "version 1001.0": (
        lambda: _version(_float(4), b"\x80\x02G" + struct.pack(">d", 1001.0) + b"."),
        "compares it equal",
        True,
    ),
    "int storage key": (lambda: _int_key(_float(4)), "", True),
    "bytes location": (lambda: _float(4).replace(_CPU, b"C\x03cpu"), "", False),
    "nested count + 2**62": (
        lambda: _nested(_with_count(_nested_stream(), 4 + 2**62)),
        "int64",
        None,
    ),
    "nested int storage key": (lambda: _nested(_int_key(_nested_stream())), "", None),
    "nested version 1001.0": (
        lambda: _nested(
            _version(_nested_stream(), b"\x80\x02G" + struct.pack(">d", 1001.0) + b".")
        ),
        "compares equal",
        None,
    ),
}


@pytest.mark.parametrize("name", list(READ))
def test_a_file_torch_reads_is_read_and_reported_as_not_as_written(
    name, tmp_path, sandbox, default_loads, pickle_loads
):
    make, words, default_reads = READ[name]
    path = tmp_path / "edited.pt"
    path.write_bytes(make())
    if default_reads is None:  # a plain pickle: pickle.load, not torch.load, reads it
        ours, theirs, default = harness.ppaux_view(str(path)), pickle_loads(path), {}
    else:
        ours, theirs, default = _agree(path, sandbox, default_loads)
    assert theirs["outcome"] == "loaded", theirs
    assert ours.verdict == "findings" and ours.codes == {"PP118"}, ours
    assert ours.value == theirs["value"]
    deviation = read_dump(str(path)).deviation
    assert deviation is not None and not deviation.severe
    assert words in deviation.what
    if default_reads is not None:  # a plain pickle is not torch.load's to read
        assert (default["outcome"] == "loaded") is default_reads, default


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    dtype=st.sampled_from(
        [torch.uint8, torch.int16, torch.float32, torch.float64, torch.complex128]
    ),
    count=st.one_of(
        st.integers(-(2**63), 2**63 - 1),
        st.integers(-8, 7).map(lambda k: 3 + k * 2**60),
    ),
)
def test_a_record_count_is_refused_exactly_where_torch_refuses_it(dtype, count, sandbox, tmp_path):
    # Promise: PP117 exactly when torch.load refuses the count; otherwise ppaux reads what
    # torch reads.
    path = tmp_path / "count.pt"
    path.write_bytes(_with_count(_legacy({"w": torch.arange(3).to(dtype)}), count))
    ours, theirs = harness.ppaux_view(str(path)), sandbox.load(path)
    assert (ours.codes == {"PP117"}) is (theirs["outcome"] == "refused"), (ours, theirs)
    if theirs["outcome"] == "loaded":
        assert ours.value == theirs["value"]
        assert ours.codes == (set() if count == 3 else {"PP118"})


def _view(data: bytes, view: bytes, shape: int) -> bytes:
    parts, records = _parts(data)
    obj = parts[3].replace(b"K\x08N", b"K\x08" + view)
    obj = obj.replace(b"K\x00K\x08\x85", b"K\x00K" + bytes([shape]) + b"\x85")
    return b"".join(parts[:3]) + obj + parts[4] + records


def test_a_view_field_is_worded_as_torch_reads_it(tmp_path, sandbox, default_loads):
    view = b"X\x02\x00\x00\x00v1K\x02K\x04\x87"  # ('v1', 2, 4)
    path = tmp_path / "view.pt"
    path.write_bytes(_view(_float(8), view, 4))
    ours, theirs, default = _agree(path, sandbox, default_loads)
    assert ours.codes == {"PP202"}
    assert "storage cut from elements 2 to 6" in ours.reason
    assert theirs["outcome"] == default["outcome"] == "loaded"
    expected = harness.describe({"w": torch.arange(8.0)[2:6].clone()})
    assert theirs["value"] == expected  # torch reads elements 2 to 6, as the finding says


def test_a_view_field_torch_cannot_unpack_is_refused(tmp_path, sandbox, default_loads):
    path = tmp_path / "view2.pt"
    path.write_bytes(_view(_float(8), b"K\x02K\x04\x86", 4))  # (2, 4)
    ours, theirs, default = _agree(path, sandbox, default_loads)
    assert ours.codes == {"PP117"}
    assert theirs["outcome"] == "refused" and default["outcome"] != "loaded"


def test_an_unhashable_listed_key_is_refused_as_torch_refuses_it(tmp_path, sandbox, default_loads):
    parts, records = _parts(_float(4))
    keys = pickle.loads(parts[4])
    path = tmp_path / "listed.pt"
    path.write_bytes(b"".join(parts[:4]) + pickle.dumps([keys], protocol=2) + records)
    ours, theirs, default = _agree(path, sandbox, default_loads)
    assert ours.codes == {"PP117"}
    assert theirs["outcome"] == "refused" and default["outcome"] != "loaded"


def test_a_small_pickle_limit_says_the_limit_was_reached():
    data = _float(4)
    parts, _ = _parts(data)
    end = sum(len(p) for p in parts)
    for limit in range(1, end):
        with pytest.raises(LimitExceeded) as info:
            read_dump_stream("<stdin>", io.BytesIO(data), Limits(max_pickle_bytes=limit))
        assert info.value.limit == "max_pickle_bytes", (limit, info.value.reason)
        assert "truncated" not in info.value.reason
