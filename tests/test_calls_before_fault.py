"""A pickle that names a global outside the allowlist and then is malformed (an unknown opcode,
a stack underflow, BUILD on a dict, an OrderedDict given the call's result, a persistent id
that is not torch's) is a security finding whatever follows: Python's own unpickler, which
torch.load(weights_only=False) is, imports and calls the global before it meets the fault. The
test runs each pickle through ``pickle.Unpickler`` with ``find_class`` answering a harmless
recorder (so the call is seen, not made) and checks that it calls the global and then fails, and
that inspect reports the global (PP201) beside the file's refusal (PP118), never an input it
could not read. The same pickles inside a torch.save zip and as plain pickles."""

from __future__ import annotations

import io
import pickle
import sys
from pathlib import Path

import pytest
from helpers import REPO

from ppaux.dump import inspect_paths

sys.path.insert(0, str(REPO / "fixtures"))

from make_adversarial import call, g, s, torch_zip, tup

#: A call of a global that is not on the allowlist, as a hostile pickle spells it.
HOSTILE = call(g("posix", "system"), s("true"))
#: The message torch.save writes for a message dict, as pickle.dump writes it at protocol 2.
MESSAGE = pickle.dumps({"a": 1, "b": [1, 2]}, protocol=2)


def _after_proto(extra: bytes) -> bytes:
    return MESSAGE[:2] + extra + MESSAGE[2:]


def _before_stop(extra: bytes) -> bytes:
    return MESSAGE[:-1] + extra + MESSAGE[-1:]


CASES = {
    "call, then an unknown opcode": _after_proto(HOSTILE + b"0\xff"),
    "call, then a stack underflow": _after_proto(HOSTILE + b"0" * 8),
    "call as BUILD state on a dict": _before_stop(HOSTILE + b"b"),
    "call inside OrderedDict's argument": _after_proto(
        call(g("collections", "OrderedDict"), tup(HOSTILE)) + b"0"
    ),
    "call as a persistent id's key": _after_proto(
        b"(" + s("storage") + HOSTILE + s("cpu") + b"tQ0"
    ),
}


class _Recorder(pickle.Unpickler):
    """Python's unpickler, with every global but OrderedDict a recorder of its calls (nothing
    else is imported)."""

    def __init__(self, data: bytes) -> None:
        super().__init__(io.BytesIO(data))
        self.called: list[str] = []

    def find_class(self, module: str, name: str) -> object:
        if (module, name) == ("collections", "OrderedDict"):
            return super().find_class(module, name)

        def record(*args: object) -> int:
            self.called.append(f"{module}.{name}")
            return 0

        return record

    def persistent_load(self, pid: object) -> object:
        raise pickle.UnpicklingError("no storages here")


def _python_reads(data: bytes) -> tuple[list[str], BaseException | None]:
    reader = _Recorder(data)
    try:
        reader.load()
    except Exception as exc:  # what Python's unpickler says of the fault
        return reader.called, exc
    return reader.called, None


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("container", ["pickle", "zip"])
def test_a_call_before_the_fault_is_reported(tmp_path: Path, name: str, container: str) -> None:
    data = CASES[name]
    called, failure = _python_reads(data)
    assert called == ["posix.system"]  # Python's unpickler calls it before it fails ...
    assert failure is not None  # ... and then fails on the malformed stream
    path = tmp_path / ("x.pkl" if container == "pickle" else "x.pt")
    path.write_bytes(data if container == "pickle" else torch_zip(data).data)
    report = inspect_paths([str(path)])
    assert not report.problems  # not an input ppaux could not read
    hostile = [f.extra.get("global") for f in report.findings if f.code == "PP201"]
    assert hostile == ["posix.system"]
    assert {f.code for f in report.findings} & {"PP117", "PP118"}


def test_a_malformed_pickle_without_calls_is_still_an_input_problem(tmp_path: Path) -> None:
    path = tmp_path / "x.pkl"
    path.write_bytes(_after_proto(b"0" * 8))
    with pytest.raises(pickle.UnpicklingError):
        pickle.loads(path.read_bytes())
    report = inspect_paths([str(path)])
    assert not report.findings
    assert len(report.problems) == 1 and "malformed pickle" in report.problems[0].message
