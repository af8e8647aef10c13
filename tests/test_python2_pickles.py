"""A legacy-format file as torch of the Python 2 era wrote it (``cPickle``, protocol 2):
the same five pickles, but the pickler is Python 2's. Its memo starts at 1, its strings are
byte strings (SHORT_BINSTRING), and its first PROTO is the same ``\\x80\\x02`` CPython 3
writes. torch.load reads such a file in both modes, so ppaux reads it too, as torch does, and
reports the first place it differs from what torch.save writes today: never clean, never
refused. torch's answers come from child processes.

The bytes below were written by Python 2.7.18's ``cPickle`` with torch 1.x's legacy layout
(``{'w': 4 float32, 'b': 2 float32}``, storage keys as decimal addresses).
"""

from __future__ import annotations

import pytest
from test_dump_legacy_reading import _agree

from ppaux.dump.dumpfile import read_dump

pytestmark = pytest.mark.torch

PYTHON2_CPICKLE = bytes.fromhex(
    "80028a0a6cfc9c46f9206aa850192e80024de9032e80027d710128551070726f746f636f6c5f76657273696f"
    "6e71024de903550a747970655f73697a657371037d7104285503696e7471054b04550573686f727471064b02"
    "55046c6f6e6771074b0475550d6c6974746c655f656e6469616e710888752e80027d71012855016263746f72"
    "63682e5f7574696c730a5f72656275696c645f74656e736f725f76320a71022828550773746f726167657103"
    "63746f7263680a466c6f617453746f726167650a7104550b3934303030303030303032710555036370757106"
    "4b024e74514b004b02854b018571078963636f6c6c656374696f6e730a4f726465726564446963740a71085d"
    "71098552710a7452710b5501776802282868036804550b3934303030303030303031710c68064b044e74514b"
    "004b048568078968085d710d8552710e7452710f752e80025d710128550b3934303030303030303031710255"
    "0b39343030303030303030327103652e04000000000000000000c03f00002040000060400000904002000000"
    "000000000000e04000000041"
)


def test_a_python2_cpickle_file_is_read_as_torch_reads_it_and_is_a_finding(
    tmp_path, sandbox, default_loads
):
    path = tmp_path / "py2.pt"
    path.write_bytes(PYTHON2_CPICKLE)
    ours, theirs, default = _agree(path, sandbox, default_loads)
    assert theirs["outcome"] == default["outcome"] == "loaded", (theirs, default)
    assert ours.verdict == "findings" and ours.codes == {"PP118"}, ours
    assert ours.value == theirs["value"]
    # Written out: two float32 tensors, 'b' of 2 elements and 'w' of 4 (as the file was made).
    assert [(e[1][1], e[1][2]) for e in theirs["value"][1]] == [
        ("torch.float32", [2]),
        ("torch.float32", [4]),
    ], theirs
    deviation = read_dump(str(path)).deviation
    assert deviation is not None and not deviation.severe
    # The first difference is the system info's memo index 1 (Python 2's cPickle starts there),
    # not the first PROTO: both picklers write that as b"\x80\x02".
    assert deviation.where.startswith("pickle 3 (the system info"), deviation
    assert PYTHON2_CPICKLE[:2] == b"\x80\x02"
