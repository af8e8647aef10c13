"""Clean speaks for torch.load's default (weights_only=True): PP119 exactly where it refuses.

Every expected answer comes from the real ``torch.load(path)`` (weights_only=True, the default
since torch 2.6), run in a separate process (tests/weights_only_probe.py) for the bundled
fixtures, malicious ones included; ppaux's answer comes from ``inspect``, which never imports
torch for it (ppaux/dump/weights_only.py).
"""

from __future__ import annotations

import collections
import io
import json
import os
import pickle
import select
import subprocess
import sys
import tempfile
import warnings
import zipfile
from pathlib import Path

import pytest
import torch
from helpers import REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppaux.dump import inspect_file
from ppaux.dump import weights_only as wo
from ppaux.errors import DumpError

pytestmark = pytest.mark.torch

PROBE = Path(__file__).resolve().parent / "weights_only_probe.py"
SUFFIXES = (".pt", ".pth", ".pkl")


def _torch_answers(paths: list[Path]) -> list[dict[str, str | None]]:
    """What torch.load(path) (weights_only=True) does with each path, in a child process."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [sys.executable, str(PROBE)],
        input="".join(f"{p}\n" for p in paths),
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=True,
    )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(answers) == len(paths), done.stderr[-2000:]
    return answers


class TorchAnswers:
    """One probe process kept for many questions, asked one path at a time: it loads each path
    in a child forked from the same warmed-up process, so every answer is the one a probe of
    its own gives, without importing torch again for each."""

    def __init__(self) -> None:
        env = {**os.environ, "PYTHONWARNINGS": "ignore"}
        env.pop("PYTHONPATH", None)
        self.errors = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [sys.executable, str(PROBE)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errors,
            text=True,
            env=env,
        )

    def __call__(self, path: Path) -> dict[str, str | None]:
        """What torch.load(path) (weights_only=True) does with ``path``."""
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        stdin.write(f"{path}\n")
        stdin.flush()
        ready, _, _ = select.select([stdout], [], [], 300)
        line = stdout.readline() if ready else ""
        if not line:
            self.errors.seek(0)
            raise AssertionError(f"the probe gave no answer: {self.errors.read()[-2000:]!r}")
        answer: dict[str, str | None] = json.loads(line)
        return answer

    def close(self) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)
        self.process.stdout.close()
        self.errors.close()


def _ppaux(path: Path) -> tuple[str, set[str], str | None]:
    """('read', codes, container) or ('input-problem', ...) when inspect refuses the file."""
    try:
        description, findings = inspect_file(str(path))
    except DumpError:
        return "input-problem", set(), None
    return "read", {f.code for f in findings}, description.get("container")


def _fixtures() -> list[Path]:
    return sorted(p for p in (REPO / "fixtures").rglob("*") if p.is_file() and p.suffix in SUFFIXES)


def test_every_fixture_agrees_with_torch_load_default():
    paths = _fixtures()
    assert len(paths) > 200
    answers = _torch_answers(paths)
    checked = refused = 0
    for path, theirs in zip(paths, answers, strict=True):
        name = str(path.relative_to(REPO))
        assert theirs["outcome"] != "blocked", (name, theirs)
        state, codes, container = _ppaux(path)
        if state != "read":
            continue
        checked += 1
        if container == "pickle":
            # torch.load never reads a plain pickle as a torch.save file: it refuses every one
            # (its first pickle is not the legacy magic number), so clean speaks for
            # pickle.load there and PP119 is never given.
            assert theirs["outcome"] != "loaded", (name, theirs)
            assert "PP119" not in codes, name
            continue
        expected = theirs["outcome"] == "unpickling-error"
        refused += expected
        assert ("PP119" in codes) == expected, (name, theirs, sorted(codes))
    assert checked > 100 and refused > 10, (checked, refused)


def _values() -> dict[str, object]:
    import numpy

    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    recursive: list[object] = []
    recursive.append(recursive)
    holder: list[object] = []
    cycle = (holder,)
    holder.append(cycle)  # a tuple reached again while its items are written: POP, POP_MARK
    state = collections.OrderedDict(w=torch.ones(2))
    state._metadata = {"": {"version": 1}}  # type: ignore[attr-defined]
    values: dict[str, object] = {
        f"dtype_{dtype}".replace("torch.", ""): torch.zeros(3, dtype=dtype)
        for dtype in (
            torch.float32,
            torch.float64,
            torch.float16,
            torch.bfloat16,
            torch.int8,
            torch.uint8,
            torch.int16,
            torch.int32,
            torch.int64,
            torch.bool,
            torch.complex64,
            torch.complex128,
            torch.uint16,
            torch.uint32,
            torch.uint64,
            torch.float8_e4m3fn,
            torch.float8_e5m2,
        )
    }
    values.update(
        {
            "view": base[1:, 2:],
            "transposed": base.t(),
            "shared": [base, base[0], base[1:]],
            "parameter": torch.nn.Parameter(torch.ones(2)),
            "frozen": torch.nn.Parameter(torch.ones(2), requires_grad=False),
            "empty": torch.empty(0),
            "scalar": torch.tensor(3.5),
            "size": torch.Size([2, 3]),
            "device": torch.device("cpu"),
            "dtype": torch.float16,
            "numpy": numpy.arange(6, dtype=numpy.float32).reshape(2, 3),
            "numpy_scalar": numpy.float32(1.5),
            "state_dict": state,
            "ordered": collections.OrderedDict(a=1, b=[2]),
            "counter": collections.Counter("abca"),
            "set": {1, 2, "x"},
            "empty_set": set(),
            "frozenset": frozenset({3}),
            "complex": 1 + 2j,
            "bytes": b"xy\x00\xff",
            "empty_bytes": b"",
            "bytearray": bytearray(b"ab"),
            "empty_bytearray": bytearray(),
            "nested": {"a": [(1, {"b": (2.5, None)}), {"c": {True, False}}], (1, 2): "t"},
            "recursive_list": recursive,
            "recursive_tuple": cycle,
            "text": "é\u202e\U0001f600",
            "surrogate": "\ud800",
            "floats": [float("nan"), float("inf"), -0.0],
            "range": range(3),
        }
    )
    for bits in (0, 7, 8, 15, 16, 31, 32, 63, 64, 127, 2000, 2039, 2040, 2041, 5000):
        values[f"int_{bits}_bits"] = [2**bits, -(2**bits), 2**bits - 1]
    return values


def test_torch_save_values_agree_with_torch_load_default(tmp_path):
    paths = []
    for name, value in _values().items():
        path = tmp_path / f"{name}.pt"
        torch.save({"next_token_ids": torch.zeros(2), "value": value}, path)
        paths.append(path)
    answers = _torch_answers(paths)
    outcomes = collections.Counter()
    for path, theirs in zip(paths, answers, strict=True):
        state, codes, _ = _ppaux(path)
        assert state == "read", path.name
        assert theirs["outcome"] in ("loaded", "unpickling-error"), (path.name, theirs)
        outcomes[theirs["outcome"]] += 1
        assert ("PP119" in codes) == (theirs["outcome"] == "unpickling-error"), (
            path.name,
            theirs,
            sorted(codes),
        )
    # Both answers occur: the int of 2041 bits needs LONG4, a numpy array a numpy global.
    assert outcomes["loaded"] > 20 and outcomes["unpickling-error"] > 5, outcomes


def test_the_refusal_names_the_byte_and_the_reason(tmp_path):
    path = tmp_path / "long4.pt"
    torch.save({"next_token_ids": torch.zeros(2), "x": 2**2100}, path)
    with zipfile.ZipFile(path) as archive:
        data = archive.read(next(n for n in archive.namelist() if n.endswith("data.pkl")))
    offset = data.index(pickle.LONG4)
    _, findings = inspect_file(str(path))
    (found,) = [f for f in findings if f.code == "PP119"]
    assert found.severity.value == "warning"
    assert f"data.pkl byte {offset}: opcode 0x8b (LONG4)" in found.message
    assert "weights_only=False" in found.message


def test_the_allowlist_is_torch_2_13s():
    # The data in ppaux/dump/weights_only.py is torch 2.13.0's _get_allowed_globals(); on
    # another torch this states where the two differ.
    from torch import _weights_only_unpickler as restricted
    from torch._utils import IMPORT_MAPPING, NAME_MAPPING

    if not torch.__version__.startswith("2.13."):
        pytest.skip(f"the data is torch 2.13.0's; this is torch {torch.__version__}")
    assert set(restricted._get_allowed_globals()) == wo.ALLOWED_GLOBALS
    assert set(restricted._blocklisted_modules) == wo.BLOCKED_MODULES
    assert IMPORT_MAPPING == wo.IMPORT_MAPPING and NAME_MAPPING == wo.NAME_MAPPING


# -- a property over generated values ----------------------------------------------------------

_scalar = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**2100), max_value=2**2100)
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.binary(max_size=8)
    | st.complex_numbers(allow_nan=False)
)
_hashable = (
    _scalar
    | st.tuples(_scalar, _scalar)
    | st.frozensets(_scalar, max_size=3)
    | st.tuples(st.tuples(_scalar), st.frozensets(_scalar, max_size=2))
)
_values_strategy = st.recursive(
    _hashable
    | st.builds(bytearray, st.binary(max_size=8))
    | st.builds(lambda n: torch.arange(n, dtype=torch.float32), st.integers(0, 4)),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(_hashable, inner, max_size=4)
        | st.sets(_hashable, max_size=3)
        | st.builds(
            collections.OrderedDict, st.dictionaries(st.text(max_size=4), inner, max_size=3)
        )
        | st.builds(
            collections.Counter, st.dictionaries(st.text(max_size=4), st.integers(), max_size=3)
        )
        | st.tuples(inner, inner)
    ),
    max_leaves=12,
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(_values_strategy)
def test_pp119_exactly_when_torch_load_default_refuses(value):
    buffer = io.BytesIO()
    torch.save({"value": value}, buffer)
    try:
        # Our own value, saved by torch.save a moment ago: safe to load in the test process.
        torch.load(io.BytesIO(buffer.getvalue()))
        refused = False
    except pickle.UnpicklingError:
        refused = True
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "value.pt"
        path.write_bytes(buffer.getvalue())
        state, codes, _ = _ppaux(path)
    assert state == "read"
    assert ("PP119" in codes) == refused, sorted(codes)


# -- the walk's own bounds ---------------------------------------------------------------------


def test_the_walk_is_linear_on_a_hostile_pickle():
    """MARKs, EMPTY_LISTs with BINPUTs, an open dict: one pass, no answer built per byte. Four
    times the input costs about four times the CPU (a walk quadratic in it, sixteen); compared
    within one run, so that a loaded machine slows both sides alike."""
    import gc
    import time

    def cost(size: int, make) -> float:
        data = b"\x80\x02" + make(size) + b"."
        runs = []
        # The walk's own cost, without the cyclic collector's: its full collections scan the
        # whole heap (pytest's and torch's objects too), and how many fall within a run depends
        # on what the process allocated before, not on the walk.
        gc.disable()
        try:
            for _ in range(2):
                started = time.process_time()
                wo.refusal(data)
                runs.append(time.process_time() - started)
        finally:
            gc.enable()
        return min(runs)

    for make in (
        lambda n: b"(" * n,
        lambda n: b"]q\x00" * (n // 4),
        lambda n: b"}" + b"(" * n + b"u" * 10,
    ):
        # The large input once first, unmeasured: the memory it needs is then the allocator's,
        # so that neither size pays for the process growing (page faults count as its CPU).
        cost(1 << 19, make)
        small, large = cost(1 << 17, make), cost(1 << 19, make)
        assert large < 10 * max(small, 0.01), (small, large)


# -- hand-made pickles against torch's own weights-only unpickler -----------------------------

_HAND_MADE = {
    "long4": b"\x80\x02\x8b\x01\x00\x00\x00\x01.",
    "pop": b"\x80\x02K\x01K\x020.",
    "pop_mark": b"\x80\x02K\x01(K\x021.",
    "dup": b"\x80\x02K\x012\x86.",
    "frame": b"\x80\x04\x95\x03\x00\x00\x00\x00\x00\x00\x00K\x01.",
    "short_binunicode": b"\x80\x04\x8c\x01a.",
    "binbytes": b"\x80\x03C\x01a.",
    "build_on_dict": b"\x80\x02}}b.",
    "build_on_ordered_dict": b"\x80\x02ccollections\nOrderedDict\n)R}b.",
    "build_on_set": b"\x80\x02\x8f}b.",
    "append_to_dict": b"\x80\x02}K\x01a.",
    "append_to_list": b"\x80\x02]K\x01a.",
    "setitem_into_list": b"\x80\x02]K\x01K\x02s.",
    "setitems_into_counter": b"\x80\x02ccollections\nCounter\n)R(X\x01\x00\x00\x00aK\x01u.",
    "global_blocked": b"\x80\x02cos\nsystem\n.",
    "global_posix": b"\x80\x02cposix\nsystem\n.",
    "global_py2_set": b"\x80\x02c__builtin__\nset\n]\x85R.",
    "global_py2_frozenset": b"\x80\x02c__builtin__\nfrozenset\n]\x85R.",
    "global_numpy": b"\x80\x02cnumpy\nndarray\n.",
    "reduce_on_dict": b"\x80\x02})R.",
    "reduce_on_memo_global": b"\x80\x02ccollections\nOrderedDict\nq\x00h\x00)R.",
    "newobj_on_int": b"\x80\x02K\x01)\x81.",
    "newobj_on_function_then_long4": (
        b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n)\x81\x8b\x01\x00\x00\x00\x01."
    ),
    "newobj_on_counter": b"\x80\x02ccollections\nCounter\n)\x81.",
    "bad_utf8_in_global": b"\x80\x02c\xff\nx\n.",
    "memo_miss": b"\x80\x02h\x05.",
    "underflow": b"\x80\x02R.",
    "no_stop": b"\x80\x02K\x01",
    "tensor_rebuild_names": b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\nctorch\nfloat32\n\x86.",
}


@pytest.mark.parametrize("name", sorted(_HAND_MADE))
def test_hand_made_pickles_agree_with_the_unpickler(name):
    from torch import _weights_only_unpickler as restricted

    data = _HAND_MADE[name]
    try:
        with warnings.catch_warnings():  # its warning about a protocol other than 2
            warnings.simplefilter("ignore")
            restricted.Unpickler(io.BytesIO(data), encoding="utf-8").load()
        refused = False
    except pickle.UnpicklingError:
        refused = True
    except Exception:  # a structural fault or a failing call: not a refusal
        refused = False
    assert (wo.refusal(data) is not None) == refused, (name, wo.refusal(data))


def test_a_dtype_new_in_torch_2_14_is_named_with_the_release_that_reads_it(tmp_path):
    # torch 2.14.1's _get_allowed_globals() adds torch.bcomplex32 (torch/storage.py's
    # _new_dtypes()); the torch the tests install refuses it, as PP119 says.
    data = b"\x80\x02ctorch\nbcomplex32\n."
    offset, reason = wo.refusal(data)
    assert offset == 2
    assert reason == (
        "GLOBAL torch.bcomplex32 is a dtype new in torch 2.14: torch 2.14 reads it, "
        "torch 2.13 and earlier refuse it"
    )
    if torch.__version__.startswith("2.13."):
        from torch._weights_only_unpickler import Unpickler

        with pytest.raises(pickle.UnpicklingError, match="bcomplex32"):
            Unpickler(io.BytesIO(data)).load()


def test_a_file_saved_with_protocol_4_is_told_to_use_the_default_protocol(tmp_path):
    path = tmp_path / "p4.pt"
    torch.save({"__sampling_observer_output__.s": torch.ones(2)}, path, pickle_protocol=4)
    (refusal,) = [f for f in inspect_file(str(path))[1] if f.code == "PP119"]
    assert refusal.extra["where"] == "data.pkl byte 2: opcode 0x95 (FRAME) is not one it runs"
    assert refusal.hint == (
        "Save with torch.save's default protocol: leave pickle_protocol out (it writes "
        "protocol 2, which the weights-only reader runs)."
    )
    numpy_file = REPO / "fixtures" / "dumps" / "aux_numpy_array.pt"
    (other,) = [f for f in inspect_file(str(numpy_file))[1] if f.code == "PP119"]
    assert other.hint.startswith("Keep tensors and plain containers in the dict")
