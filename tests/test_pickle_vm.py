"""The safe pickle machine: same values as pickle for plain data, nothing run, limits enforced."""

from __future__ import annotations

import pickle
import pickletools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.dump import allowlist, pickle_vm
from ppaux.dump.model import GlobalRef, Opaque
from ppaux.dump.pickle_values import VALUE_OPCODES
from ppaux.dump.pickle_vm import Machine
from ppaux.errors import DumpError, LimitExceeded
from ppaux.limits import Limits


def run(data: bytes, limits: Limits = Limits(), **kw):
    machine = Machine(data, path="x.pkl", limits=limits, resolve=allowlist.resolve, **kw)
    return machine.load(), machine


plain = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text()
    | st.binary(),
    lambda children: (
        st.lists(children, max_size=4)
        | st.tuples(children, children)
        | st.dictionaries(st.text(max_size=5) | st.integers(), children, max_size=4)
        | st.frozensets(st.integers(), max_size=3)
        | st.sets(st.text(max_size=3), max_size=3)
    ),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(value=plain, protocol=st.integers(min_value=0, max_value=5))
def test_plain_data_reads_as_pickle_reads_it(value, protocol):
    data = pickle.dumps(value, protocol=protocol)
    got, _ = run(data)
    assert got == pickle.loads(data)


def test_every_opcode_pickle_defines_has_one_handler():
    # pickletools lists the opcodes of protocols 0 to 5; the two tables split them between them.
    known = {op.code for op in pickletools.opcodes}
    objects = set(pickle_vm._OBJECT_OPCODES)
    assert set(VALUE_OPCODES).isdisjoint(objects)
    assert set(VALUE_OPCODES) | objects == known
    assert set(pickle_vm._DISPATCH) == {ord(code) for code in known}


def test_shared_and_recursive_references_are_kept():
    inner = [1, 2]
    value = {"a": inner, "b": inner}
    got, _ = run(pickle.dumps(value, protocol=2))
    assert got["a"] is got["b"]
    loop: list = []
    loop.append(loop)
    got, _ = run(pickle.dumps(loop, protocol=4))
    assert got[0] is got


def test_unknown_global_is_recorded_not_imported():
    # GLOBAL os.system, then REDUCE with ('echo hi',): an Opaque call record, never a call.
    data = b"\x80\x02cos\nsystem\nX\x07\x00\x00\x00echo hi\x85R."
    got, machine = run(data)
    assert isinstance(got, Opaque)
    assert (got.name, got.via, got.args) == ("os.system", "call", ("echo hi",))
    assert machine.globals_seen == {"os.system": False}


def test_stack_global_inst_obj_and_newobj_become_opaque():
    stack_global = b"\x80\x04\x8c\x08builtins\x8c\x04eval\x93\x8c\x031+1\x85R."
    got, _machine = run(stack_global)
    assert (got.name, got.args) == ("builtins.eval", ("1+1",))
    inst = b"(S'ls'\nisubprocess\nPopen\n."
    got, _ = run(inst)
    assert (got.name, got.via, got.args) == ("subprocess.Popen", "object", ("ls",))
    obj = b"\x80\x02(cos\nsystem\nX\x02\x00\x00\x00ido."
    got, _ = run(obj)
    assert (got.name, got.via, got.args) == ("os.system", "object", ("id",))
    newobj = b"\x80\x02cpkg\nKlass\n)\x81}X\x01\x00\x00\x00aK\x01sb."
    got, _ = run(newobj)
    assert (got.name, got.via, got.state) == ("pkg.Klass", "new", {"a": 1})


@settings(max_examples=150, deadline=None)
@given(
    text=st.text(),
    kind=st.sampled_from(["bytes", "bytearray"]),
    encoding=st.sampled_from(["latin1", "latin-1", "LATIN_1", "utf-8", "utf8", "ascii", "l1"]),
)
def test_bytes_of_a_str_and_an_encoding_read_as_python_reads_them(text, kind, encoding):
    # A hand-made bytearray(text, 'latin1') (pickle writes bytes in it, never a str).
    def one(value: str) -> bytes:
        data = value.encode("utf-8", "surrogatepass")
        return b"X" + len(data).to_bytes(4, "little") + data

    data = b"\x80\x02cbuiltins\n" + kind.encode() + b"\n" + one(text) + one(encoding) + b"\x86R."
    try:
        expected = pickle.loads(data)
    except (UnicodeEncodeError, UnicodeDecodeError):
        with pytest.raises(DumpError):
            run(data)
        return
    got, _ = run(data)
    assert type(got) is type(expected) and got == expected


def test_allowlisted_container_calls_are_interpreted():
    data = b"\x80\x02ccollections\nOrderedDict\n)R."
    got, machine = run(data)
    assert got == {} and machine.globals_seen == {"collections.OrderedDict": True}
    data = pickle.dumps({1, 2}, protocol=2)  # builtins.set via REDUCE in protocol 2
    got, _ = run(data)
    assert got == {1, 2}


@pytest.mark.parametrize(
    "data, reason",
    [
        (b"", "truncated pickle: no STOP opcode before byte 0"),
        (b"\x80\x02X\xff\x00\x00\x00ab", "truncated pickle: 255 bytes wanted at byte 7, 2 left"),
        (b"\x80\x02\xff.", "malformed pickle at byte 2: unknown opcode b'\\xff'"),
        (b"\x80\x02h\x05.", "malformed pickle at byte 2: memo entry 5 was never stored"),
        (
            b"\x80\x02\x82\x01.",
            "malformed pickle at byte 2: extension code 1 names a global "
            "through copyreg's registry, which no file can be trusted to use",
        ),
        (b"\x80\x04K\x01K\x02\x93.", "malformed pickle at byte 6: STACK_GLOBAL needs two strings"),
        (
            b"\x80\x05\x97.",
            "malformed pickle at byte 2: the pickle expects out-of-band buffers, "
            "which a file cannot carry",
        ),
        (b"\x80\x02K\x01.N.", None),  # trailing data after STOP is not read
        (b"\x80\x02R.", "malformed pickle at byte 2: stack underflow"),
        (b"\x80\x02K\x01)R.", "malformed pickle at byte 5: the pickle calls a int value"),
        (b"\x80\x02}]]s.", "malformed pickle at byte 5: dict key of type list is unhashable"),
    ],
)
def test_malformed_pickles_raise_dump_errors(data, reason):
    if reason is None:
        assert run(data)[0] == 1
        return
    with pytest.raises(DumpError) as info:
        run(data)
    assert info.value.reason == reason
    assert str(info.value) == f"x.pkl: {reason}"


def test_a_protocol_past_5_is_read_on_as_a_deviation():
    # torch.load's default reader reads on past PROTO 6; its full unpickler refuses the file.
    value, machine = run(b"\x80\x06N.")
    assert value is None and machine.protocol == 6
    where, what, severe = machine.deviation
    assert (where, severe) == ("byte 0", True)
    assert what.startswith("pickle protocol 6, past the newest (5)")


def test_limits_stop_hostile_growth():
    deep = b"\x80\x02" + b"(" * 50 + b"l" * 50 + b"."
    with pytest.raises(LimitExceeded) as info:
        run(deep, Limits(max_depth=10))
    assert info.value.limit == "max_depth"
    assert run(deep, Limits(max_depth=60))[0] is not None

    many = b"\x80\x02]" + b"(" + b"K\x01" * 100 + b"e."
    with pytest.raises(LimitExceeded) as info:
        run(many, Limits(max_items=50))
    assert str(info.value) == (
        "x.pkl: the pickle creates too many values (limit max_items=50 reached); raise it with "
        "limits=Limits(max_items=N)"
    )

    memo = b"\x80\x02N" + b"".join(b"r" + i.to_bytes(4, "little") for i in range(20)) + b"."
    with pytest.raises(LimitExceeded) as info:
        run(memo, Limits(max_memo=10))
    assert info.value.limit == "max_memo"


def test_billion_laughs_stays_shared_and_small():
    # Each level is a list holding the previous level twice: 2**30 leaves if expanded.
    ops = [b"\x80\x02X\x03\x00\x00\x00lolq\x00"]
    for level in range(1, 31):
        ops.append(
            b"h" + bytes([level - 1]) + b"h" + bytes([level - 1]) + b"\x86q" + bytes([level])
        )
    data = b"".join(ops) + b"."
    got, machine = run(data)
    assert machine.items < 200
    assert got[0] is got[1]


def test_persistent_id_without_storages_is_an_error():
    with pytest.raises(DumpError, match="persistent id in a pickle that has no storage records"):
        run(b"\x80\x02NQ.")


def test_global_ref_used_as_value():
    got, _machine = run(b"\x80\x02cos\nsystem\n.")
    assert isinstance(got, GlobalRef) and got.name == "os.system"


# Values below were observed from torch 2.13's torch.load (weights_only=False) on the same
# opcodes (the differential harness, tests/test_fuzz_torch_differential.py, keeps checking).
@pytest.mark.parametrize(
    ("opcodes", "expected"),
    [
        (b"I01\n.", True),
        (b"I00\n.", False),
        (b"I 1\n.", True),  # C's strtol skips the space; three characters make a bool
        (b"I010\n.", 8),  # base 0: a leading zero is octal
        (b"I0x10\n.", 16),
        (b"I1_0\n.", 10),  # past strtol, Python's int() with base 0
        (b"L10L\n.", 10),
        (b"S'a\\xc3\\xa9'\n.", "a\u00e9"),  # Python 2 bytes, decoded as UTF-8
        (b"U\x03a\xc3\xa9.", "a\u00e9"),
        (b"Va\\u00e9\n.", "a\u00e9"),
        (b"X\x03\x00\x00\x00\xed\xa0\x80.", "\ud800"),  # a lone surrogate stays one
        (b"S'\\y'\n.", "\\y"),  # an unknown escape is kept, with only a warning
    ],
)
def test_text_opcodes_read_as_torchs_unpickler_reads_them(opcodes, expected):
    value, _ = run(opcodes)
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize(
    "opcodes",
    [b"L04L\n.", b"F1_0\n.", b"U\x01\xff.", b"I9" + b"9" * 5000 + b"\n."],
)
def test_text_opcodes_torchs_unpickler_refuses(opcodes):
    with pytest.raises(DumpError):
        run(opcodes)


def test_keys_that_differ_only_in_a_surrogate_stay_two_keys():
    data = b"\x80\x02}(X\x03\x00\x00\x00\xed\xa0\x80K\x01X\x06\x00\x00\x00\\ud800K\x02u."
    value, _ = run(data)
    assert value == {"\ud800": 1, "\\ud800": 2}


#: Ints above 2**60 hash to themselves modulo this prime: adding it keeps the hash.
_HASH_MODULUS = 2**61 - 1


@settings(max_examples=40, deadline=None)
@given(keys=st.integers(min_value=1, max_value=12), bound=st.integers(min_value=1, max_value=12))
def test_keys_chosen_to_collide_are_refused_past_max_hash_collisions(keys, bound):
    colliding = {2**62 + i * _HASH_MODULUS: i for i in range(keys)}
    assert len({hash(k) for k in colliding}) == 1  # the premise: one hash value for all
    data = pickle.dumps(colliding, protocol=2)
    if keys <= bound:
        got, _ = run(data, Limits(max_hash_collisions=bound))
        assert got == colliding
    else:
        with pytest.raises(LimitExceeded) as info:
            run(data, Limits(max_hash_collisions=bound))
        assert (info.value.limit, info.value.value) == ("max_hash_collisions", bound)
        assert "share one hash value" in info.value.reason


def test_the_default_hash_collision_bound_is_eight():
    nine = {2**62 + i * _HASH_MODULUS: i for i in range(9)}
    with pytest.raises(LimitExceeded) as info:
        run(pickle.dumps(nine, protocol=2))
    assert str(info.value).endswith(
        "(limit max_hash_collisions=8 reached); raise it with limits=Limits(max_hash_collisions=N)"
    )


@pytest.mark.parametrize(
    "data",
    [
        b"\x80\x02K\x05(K\x01.",  # a MARK still open at STOP: the value above it is returned
        b"\x80\x02(K\x01(K\x02K\x03.",  # two open
        b"\x80\x02]q\x00(K\x01K\x02.",  # an APPENDS never written
    ],
)
def test_stop_returns_the_value_above_the_innermost_mark_as_cpython_does(data):
    # CPython's unpickler (torch.load(weights_only=False)) returns the top of the values since
    # the innermost MARK, whatever marks are still open; the writer grammar calls it severe.
    from ppaux.dump.grammar import pickle_deviation

    assert run(data)[0] == pickle.loads(data)
    found = pickle_deviation(data, (2,), "the pickle")
    assert found is not None and found.severe and "STOP" in found.where, found


def test_stop_with_no_value_since_the_mark_is_refused_as_cpython_refuses_it():
    data = b"\x80\x02K\x01(."
    with pytest.raises(pickle.UnpicklingError):
        pickle.loads(data)
    with pytest.raises(DumpError, match="STOP with no value since the last MARK"):
        run(data)
