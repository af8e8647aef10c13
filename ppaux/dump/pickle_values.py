"""The opcodes that make plain data: numbers, strings and bytes, lists, tuples, dicts and sets,
marks, the memo, and the opcodes a file never needs (refused).

Each handler takes the machine's state and returns True only for STOP; :data:`VALUE_OPCODES`
names the byte each runs for. The opcodes that reach a global, call, create or BUILD an object
are :mod:`ppaux.dump.pickle_vm`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ppaux.dump.grammar import past_protocols
from ppaux.dump.model import Opaque
from ppaux.dump.pickle_state import PickleState

__all__ = ["VALUE_OPCODES", "decode_str"]


def decode_str(m: PickleState, raw: bytes) -> str:
    # The C unpickler decodes BINUNICODE with 'surrogatepass': a lone surrogate stays in the
    # string (and two keys that differ only there stay two keys); reports escape it.
    try:
        return raw.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as exc:
        raise m.error(f"string is not UTF-8 ({exc.reason})") from None


def _decode_bytes_str(m: PickleState, raw: bytes) -> str:
    # STRING, BINSTRING and SHORT_BINSTRING hold bytes that the unpickler decodes with its
    # encoding: torch.load passes encoding='utf-8' (errors 'strict').
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise m.error(
            f"a Python 2 string is not UTF-8 ({exc.reason}); torch.load's unpickler refuses it"
        ) from None


def _c_unpickled(m: PickleState, opcode: bytes, line: bytes) -> Any:
    """What the C unpickler, as torch.load runs it (encoding 'utf-8'), makes of one text
    opcode and its line: the opcode alone, then STOP, is unpickled. It pushes a number or a
    string and can import or call nothing, so it is exact without running anything."""
    import pickle
    import warnings

    try:
        with warnings.catch_warnings():
            # An unknown escape in a STRING ('\\y') makes Python warn, as it does under
            # torch.load; a warning turned into an error here must not refuse the file.
            warnings.simplefilter("ignore")
            return pickle.loads(opcode + line + b"\n.", encoding="utf-8")
    except Exception as exc:
        raise m.error(
            f"the unpickler refuses {_OPCODE_NAMES[opcode]} {line[:40]!r} "
            f"({type(exc).__name__}: {str(exc)[:80]})"
        ) from None


_OPCODE_NAMES = {b"I": "INT", b"L": "LONG", b"F": "FLOAT", b"S": "STRING", b"V": "UNICODE"}


def _op_proto(m: PickleState) -> None:
    proto = m.read(1)[0]
    if proto > 5:  # torch's default reader reads on; its full unpickler refuses
        m.deviate(past_protocols(proto))
    m.protocol = proto


def _op_frame(m: PickleState) -> None:
    m.read(8)  # frames only group opcodes for buffering; the data is read as it comes


def _op_stop(m: PickleState) -> bool:
    return True


def _op_mark(m: PickleState) -> None:
    m.mark()


def _op_pop(m: PickleState) -> None:
    if m.stack:
        m.stack.pop()
    else:
        m.pop_mark()


def _op_pop_mark(m: PickleState) -> None:
    m.pop_mark()


def _op_dup(m: PickleState) -> None:
    m.push(m.top())


def _op_none(m: PickleState) -> None:
    m.push(None)


def _op_true(m: PickleState) -> None:
    m.push(True)


def _op_false(m: PickleState) -> None:
    m.push(False)


def _op_int(m: PickleState) -> None:
    # '00' and '01' are False and True; otherwise C's strtol, base 0, then int() for a number
    # past a C long: the unpickler itself parses the line.
    m.push(_c_unpickled(m, b"I", m.readline()))


def _op_long(m: PickleState) -> None:
    m.push(_c_unpickled(m, b"L", m.readline()))


def _op_binint(m: PickleState) -> None:
    m.push(m.unpack(4, "<i"))


def _op_binint1(m: PickleState) -> None:
    m.push(m.read_byte())


def _op_binint2(m: PickleState) -> None:
    m.push(m.unpack(2, "<H"))


def _op_long1(m: PickleState) -> None:
    n = m.read_byte()
    m.push(int.from_bytes(m.read(n), "little", signed=True))


def _op_long4(m: PickleState) -> None:
    n = m.unpack(4, "<i")
    if n < 0:
        raise m.error("LONG4 with a negative length")
    m.push(int.from_bytes(m.read(n), "little", signed=True))


def _op_float(m: PickleState) -> None:
    # C's strtod as the unpickler calls it (no underscores, no trailing junk).
    m.push(_c_unpickled(m, b"F", m.readline()))


def _op_binfloat(m: PickleState) -> None:
    m.push(m.unpack(8, ">d"))


def _op_string(m: PickleState) -> None:
    m.push(_c_unpickled(m, b"S", m.readline()))


def _op_binstring(m: PickleState) -> None:
    n = m.unpack(4, "<i")
    if n < 0:
        raise m.error("BINSTRING with a negative length")
    m.push(_decode_bytes_str(m, m.read(n)))


def _op_short_binstring(m: PickleState) -> None:
    m.push(_decode_bytes_str(m, m.read(m.read_byte())))


def _op_unicode(m: PickleState) -> None:
    m.push(_c_unpickled(m, b"V", m.readline()))


def _op_binunicode(m: PickleState) -> None:
    m.push(decode_str(m, m.read(m.unpack(4, "<I"))))


def _op_short_binunicode(m: PickleState) -> None:
    m.push(decode_str(m, m.read(m.read_byte())))


def _op_binunicode8(m: PickleState) -> None:
    m.push(decode_str(m, m.read(m.unpack(8, "<Q"))))


def _op_binbytes(m: PickleState) -> None:
    m.push(bytes(m.read(m.unpack(4, "<I"))))


def _op_short_binbytes(m: PickleState) -> None:
    m.push(bytes(m.read(m.read_byte())))


def _op_binbytes8(m: PickleState) -> None:
    m.push(bytes(m.read(m.unpack(8, "<Q"))))


def _op_bytearray8(m: PickleState) -> None:
    m.push(bytearray(m.read(m.unpack(8, "<Q"))))


def _op_buffer(m: PickleState) -> None:
    raise m.error("the pickle expects out-of-band buffers, which a file cannot carry")


def _op_empty_list(m: PickleState) -> None:
    m.push([])


def _op_empty_tuple(m: PickleState) -> None:
    m.push(())


def _op_empty_dict(m: PickleState) -> None:
    m.push({})


def _op_empty_set(m: PickleState) -> None:
    m.push(set())


def _op_list(m: PickleState) -> None:
    m.push(m.pop_mark())


def _op_tuple(m: PickleState) -> None:
    m.push(tuple(m.pop_mark()))


def _tuple_n(n: int) -> Callable[[PickleState], None]:
    def op(m: PickleState) -> None:
        if len(m.stack) < n:
            raise m.error("stack underflow")
        values = tuple(m.stack[-n:])
        del m.stack[-n:]
        m.push(values)

    return op


def _setitem(m: PickleState, target: object, key: object, value: object) -> None:
    if isinstance(target, dict):
        m.check_key(target, key)
        try:
            if key in target:
                m.deviate("a dict key set twice (the pickler writes each key of a dict once)")
            target[key] = value
        except TypeError:
            raise m.error(f"dict key of type {type(key).__name__} is unhashable") from None
    elif isinstance(target, Opaque):
        target.items.append((key, value))
    else:
        raise m.error(f"SETITEM on a {type(target).__name__} value")


def _op_dict(m: PickleState) -> None:
    items = m.pop_mark()
    if len(items) % 2:
        raise m.error("DICT with an odd number of items")
    out: dict[str, Any] = {}
    for i in range(0, len(items), 2):
        _setitem(m, out, items[i], items[i + 1])
    m.push(out)


def _op_setitem(m: PickleState) -> None:
    value = m.pop()
    key = m.pop()
    _setitem(m, m.top(), key, value)


def _op_setitems(m: PickleState) -> None:
    items = m.pop_mark()
    if len(items) % 2:
        raise m.error("SETITEMS with an odd number of items")
    target = m.top()
    for i in range(0, len(items), 2):
        _setitem(m, target, items[i], items[i + 1])


def _append(m: PickleState, target: object, values: list[Any]) -> None:
    if isinstance(target, list):
        target.extend(values)
    elif isinstance(target, Opaque):
        target.appended.extend(values)
    else:
        raise m.error(f"APPEND on a {type(target).__name__} value")


def _op_append(m: PickleState) -> None:
    value = m.pop()
    _append(m, m.top(), [value])


def _op_appends(m: PickleState) -> None:
    values = m.pop_mark()
    _append(m, m.top(), values)


def _op_additems(m: PickleState) -> None:
    values = m.pop_mark()
    target = m.top()
    if isinstance(target, Opaque):
        target.appended.extend(values)
        return
    if not isinstance(target, set):
        raise m.error(f"ADDITEMS on a {type(target).__name__} value")
    for value in values:
        m.check_key(target, value)
    try:
        before = len(target)
        target.update(values)
    except TypeError:
        raise m.error("set item is unhashable") from None
    if len(target) != before + len(values):
        m.deviate(_REPEATED, False)


def _op_frozenset(m: PickleState) -> None:
    items = m.pop_mark()
    token = object()  # stands for the frozenset being built
    for item in items:
        m.check_key(token, item)
    try:
        built = frozenset(items)
    except TypeError:
        raise m.error("frozenset item is unhashable") from None
    if len(built) != len(items):
        m.deviate(_REPEATED, False)
    m.push(built)


#: A set the pickler writes holds each item once.
_REPEATED = "a set item repeated, where the pickler writes each item once"


def _op_ext(n: int, fmt: str) -> Callable[[PickleState], None]:
    def op(m: PickleState) -> None:
        code = m.unpack(n, fmt)
        raise m.error(
            f"extension code {code} names a global through copyreg's registry, "
            "which no file can be trusted to use"
        )

    return op


def _op_get(m: PickleState) -> None:
    line = m.readline()
    try:
        m.memo_get(int(line))
    except ValueError:
        raise m.error("GET argument is not a number") from None


def _op_binget(m: PickleState) -> None:
    m.memo_get(m.read_byte())


def _op_long_binget(m: PickleState) -> None:
    m.memo_get(m.unpack(4, "<I"))


def _op_put(m: PickleState) -> None:
    line = m.readline()
    try:
        m.memo_put(int(line))
    except ValueError:
        raise m.error("PUT argument is not a number") from None


def _op_binput(m: PickleState) -> None:
    m.memo_put(m.read_byte())


def _op_long_binput(m: PickleState) -> None:
    m.memo_put(m.unpack(4, "<I"))


def _op_memoize(m: PickleState) -> None:
    m.memo_put(len(m.memo))


#: The byte each handler above runs for.
VALUE_OPCODES: dict[str, Callable[[PickleState], Any]] = {
    "(": _op_mark,
    ".": _op_stop,
    "0": _op_pop,
    "1": _op_pop_mark,
    "2": _op_dup,
    "F": _op_float,
    "I": _op_int,
    "J": _op_binint,
    "K": _op_binint1,
    "L": _op_long,
    "M": _op_binint2,
    "N": _op_none,
    "S": _op_string,
    "T": _op_binstring,
    "U": _op_short_binstring,
    "V": _op_unicode,
    "X": _op_binunicode,
    "a": _op_append,
    "d": _op_dict,
    "}": _op_empty_dict,
    "e": _op_appends,
    "g": _op_get,
    "h": _op_binget,
    "j": _op_long_binget,
    "l": _op_list,
    "]": _op_empty_list,
    "p": _op_put,
    "q": _op_binput,
    "r": _op_long_binput,
    "s": _op_setitem,
    "t": _op_tuple,
    ")": _op_empty_tuple,
    "u": _op_setitems,
    "G": _op_binfloat,
    "\x80": _op_proto,
    "\x82": _op_ext(1, "<B"),
    "\x83": _op_ext(2, "<H"),
    "\x84": _op_ext(4, "<i"),
    "\x85": _tuple_n(1),
    "\x86": _tuple_n(2),
    "\x87": _tuple_n(3),
    "\x88": _op_true,
    "\x89": _op_false,
    "\x8a": _op_long1,
    "\x8b": _op_long4,
    "B": _op_binbytes,
    "C": _op_short_binbytes,
    "\x8c": _op_short_binunicode,
    "\x8d": _op_binunicode8,
    "\x8e": _op_binbytes8,
    "\x8f": _op_empty_set,
    "\x90": _op_additems,
    "\x91": _op_frozenset,
    "\x94": _op_memoize,
    "\x95": _op_frame,
    "\x96": _op_bytearray8,
    "\x97": _op_buffer,
    "\x98": _op_buffer,
}
