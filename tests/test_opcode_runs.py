"""The opcode loops take one-byte opcodes (NONE, the bools, EMPTY_TUPLE, the empty containers,
APPEND to a list, BININT1) without a call, and a run of them at once: the answers are those of the
step-by-step path, on arbitrary opcode streams.

Each loop is checked against an oracle outside it: the machine's value against CPython's
``pickle.loads``; the writer grammar and the weights-only walk against the same stream with
every run broken up (a two-byte opcode of the same effect put in place of, or after, each
one-byte one), its offsets mapped back.
"""

from __future__ import annotations

import pickle
import pickletools
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.dump import allowlist
from ppaux.dump.grammar import Deviation, pickle_deviation
from ppaux.dump.pickle_vm import Machine
from ppaux.dump.weights_only import refusal
from ppaux.errors import PpauxError
from ppaux.limits import Limits

#: One-byte opcodes the loops take without a call, and those around them that make and fill
#: containers: MARK, APPENDS, SETITEM(S), TUPLE, TUPLE1-3, POP, POP_MARK, BINPUT 0, BINGET 0,
#: BININT1.
_ONE = [b"N", b"\x88", b"\x89", b")", b"]", b"}", b"a"]
_OTHER = [b"(", b"e", b"s", b"u", b"t", b"\x85", b"\x86", b"\x87", b"0", b"1", b"q\x00", b"h\x00"]
_OTHER += [b"K\x07", b"K\xff"]
_STREAMS = st.lists(
    st.one_of(
        st.sampled_from(_ONE),
        st.sampled_from(_OTHER),
        st.tuples(st.sampled_from(_ONE), st.integers(2, 40)).map(lambda p: p[0] * p[1]),
    ),
    max_size=60,
)


def _machine_value(data: bytes) -> tuple[bool, object]:
    machine = Machine(data, path="t.pkl", limits=Limits(), resolve=allowlist.resolve)
    try:
        return True, machine.load()
    except PpauxError:
        return False, None


@settings(max_examples=400, deadline=None)
@given(_STREAMS, st.sampled_from([2, 3, 4, 5]))
def test_the_machine_reads_what_cpython_reads(pieces: list[bytes], protocol: int) -> None:
    data = bytes([0x80, protocol]) + b"".join(pieces) + b"."
    try:
        expected = pickle.loads(data)
    except Exception:
        return  # CPython refuses it: the machine may refuse or read it (it reads as torch does)
    ok, value = _machine_value(data)
    if ok:
        assert value == expected, data


_VALUES = st.recursive(
    st.sampled_from([None, True, False, (), 0]),
    lambda inner: (
        st.lists(inner, max_size=1100)
        | st.tuples(inner, inner)
        | st.dictionaries(st.integers(0, 5), inner, max_size=4)
    ),
    max_leaves=3000,
)


@settings(max_examples=200, deadline=None)
@given(_VALUES, st.sampled_from([2, 3, 4, 5]))
def test_what_the_pickler_writes_is_read_back_and_in_the_grammar(
    value: object, protocol: int
) -> None:
    data = pickle.dumps(value, protocol=protocol)
    ok, read = _machine_value(data)
    assert ok and read == value
    assert pickle_deviation(data, (protocol,)) is None
    if protocol == 2:
        assert refusal(data) is None


def _spread(data: bytes, at: set[int], extra: bytes, keep: bool) -> tuple[bytes, list[int]]:
    """``data`` with the opcode at each offset of ``at`` followed by ``extra`` (``keep``) or
    replaced by it, and for each old offset the new one."""
    out = bytearray()
    where = []
    for offset, byte in enumerate(data):
        where.append(len(out))
        if offset in at:
            out += bytes([byte]) + extra if keep else extra
        else:
            out.append(byte)
    where.append(len(out))
    return bytes(out), where


def _ops(data: bytes, start: int, ops: bytes) -> set[int]:
    """The offsets from ``start`` on of bytes of ``ops`` in a stream of the pieces only (no
    argument of theirs, 0, 7 or 0xff, is one of ``ops``)."""
    return {start + i for i, byte in enumerate(data[start:]) if byte in ops}


def _grammar_answer(deviation: Deviation | None) -> tuple[int, str, bool] | None:
    if deviation is None:
        return None
    found = re.search(r"byte (\d+)", deviation.where)
    assert found is not None
    return int(found.group(1)), deviation.what, deviation.severe


@settings(max_examples=400, deadline=None)
@given(
    _STREAMS,
    _VALUES,
    st.sampled_from([1, 2, 3]),
    st.integers(0, 10**6),
    st.booleans(),
)
def test_the_grammar_reads_runs_as_single_steps(
    pieces: list[bytes], value: object, protocol: int, at: int, written: bool
) -> None:
    """NONE and EMPTY_TUPLE (the bools from protocol 2) replaced by BININT1 0, which the scan
    takes step by step with the same effect: a value pushed that takes nothing more. The
    stream is the pickler's own (``written``) with the pieces put in one place, or the pieces
    alone."""
    head = bytes([0x80, protocol]) if protocol > 1 else b""
    simple = b"N)" + (b"\x88\x89" if protocol > 1 else b"")
    inserted = b"".join(pieces)
    data = head + inserted + b"."
    replaced = _ops(data, len(head), simple)
    if written:
        written_ops = [
            (pos, op.code.encode("latin-1")[0])
            for op, _, pos in pickletools.genops(pickle.dumps(value, protocol=protocol))
        ][len(head) // 2 : -1]  # after PROTO, before STOP
        at = written_ops[at % len(written_ops)][0] if written_ops else len(head)
        body = pickle.dumps(value, protocol=protocol)[len(head) : -1]
        data = head + body[: at - len(head)] + inserted + body[at - len(head) :] + b"."
        replaced = {p if p < at else p + len(inserted) for p, op in written_ops if op in simple}
        replaced |= {at + i for i, byte in enumerate(inserted) if byte in simple}
    spread, where = _spread(data, replaced, b"K\x00", keep=False)
    fast = _grammar_answer(pickle_deviation(data, (protocol,)))
    slow = _grammar_answer(pickle_deviation(spread, (protocol,)))
    if fast is None or slow is None:
        assert fast == slow
        return
    assert (where[fast[0]], fast[1], fast[2]) == slow


@settings(max_examples=400, deadline=None)
@given(_STREAMS)
def test_the_weights_only_walk_reads_runs_as_single_steps(pieces: list[bytes]) -> None:
    """Each one-byte opcode followed by a memo PUT (no GET reads it: the streams' BINGETs are
    taken out), which breaks every run into single steps."""
    data = b"\x80\x02" + b"".join(p for p in pieces if p != b"h\x00") + b"."
    spread, where = _spread(data, _ops(data, 2, b"N\x88\x89)]}"), b"r\x00\x00\x00\x00", True)
    fast, slow = refusal(data), refusal(spread)
    if fast is None or slow is None:
        assert fast == slow
        return
    assert (where[fast[0]], fast[1]) == slow
