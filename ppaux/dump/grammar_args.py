"""The writer's rules for one opcode's argument, as CPython's pickler writes it (see
:mod:`ppaux.dump.grammar`): memo indexes in order, ints in their shortest form, strings in
UTF-8 in the opcode their length picks, global names that are a module and an attribute."""

from __future__ import annotations

import re
import struct

__all__ = ["CHECKED", "check_arg", "names_read_otherwise"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
#: A protocol-1 LONG as the pickler writes it: decimal digits and an L.
_TEXT_LONG = re.compile(rb"(-?[1-9][0-9]{0,4299})L")
#: Modules Python 3's pickler renames below protocol 3 (fix_imports, _compat_pickle).
_RENAMED = frozenset({"builtins", "copyreg", "queue", "socketserver", "reprlib", "_pickle"})


def _min_int_op(value: int) -> int:
    if 0 <= value <= 0xFF:
        return 0x4B
    if 0 <= value <= 0xFFFF:
        return 0x4D
    if -(2**31) <= value < 2**31:
        return 0x4A
    return 0x8A


def _encode_long(value: int) -> bytes:
    if value == 0:
        return b""
    nbytes = (value.bit_length() >> 3) + 1
    data = value.to_bytes(nbytes, "little", signed=True)
    if value < 0 and nbytes > 1 and data[-1] == 0xFF and (data[-2] & 0x80) != 0:
        data = data[:-1]
    return data


#: The opcodes whose argument :func:`check_arg` checks (the others have none, or any value).
CHECKED = frozenset(b"qrhjJIL\x4d\x8a\x8bX\x8c\x8dBC\x8ec")


def check_arg(op: int, payload: bytes, protocol: int, puts: int) -> tuple[str, bool] | None:
    """Whether an opcode's argument is one the pickler writes: (problem, severe) or None."""
    if op in (0x71, 0x72):  # BINPUT, LONG_BINPUT
        index = int.from_bytes(payload, "little")
        if index != puts:
            return f"memo index {index} where the pickler writes {puts} (the next)", True
        if (op == 0x72) != (index >= 256):
            return "memo index in the other PUT form", False
    elif op in (0x68, 0x6A):  # BINGET, LONG_BINGET
        index = int.from_bytes(payload, "little")
        if index >= puts:
            return f"memo index {index} not yet written", True
        if (op == 0x6A) != (index >= 256):
            return "memo index in the other GET form", False
    elif op == 0x4A:
        value = int.from_bytes(payload, "little", signed=True)
        if _min_int_op(value) != op:
            return f"int {value} not in its shortest form", False
    elif op == 0x49 and payload not in (b"00", b"01"):
        # Below protocol 2 the pickler writes INT only for a bool, as 'I00' or 'I01'.
        return f"INT {payload[:24]!r}, where the pickler writes only 00 or 01 (a bool)", True
    elif op == 0x4C:
        found = _TEXT_LONG.fullmatch(payload)
        if found is None:
            return f"LONG {payload[:24]!r} is not the decimal digits the pickler writes", True
        if -(2**31) <= int(found[1]) < 2**31:
            return f"int {int(found[1])} not in its shortest form", False
    elif op == 0x4D and int.from_bytes(payload, "little") <= 0xFF:
        return "int not in its shortest form", False
    elif op in (0x8A, 0x8B):
        value = int.from_bytes(payload, "little", signed=True)
        if _min_int_op(value) != 0x8A or _encode_long(value) != payload:
            return f"int {value} not in its shortest form", False
        if (op == 0x8B) != (len(payload) > 255):
            return "int in the other LONG form", False
    elif op in (0x58, 0x8C, 0x8D):
        try:
            payload.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError as exc:
            return f"string is not UTF-8 as the pickler writes it ({exc.reason})", True
        if protocol >= 4 and ((op == 0x8C) != (len(payload) < 256) or op == 0x8D):
            return "string in another opcode than the pickler uses for its length", False
    elif op in (0x42, 0x43, 0x8E):
        if (op == 0x43) != (len(payload) < 256) or op == 0x8E:
            return "bytes in another opcode than the pickler uses for their length", False
    elif op == 0x63:
        try:
            text = payload.decode("ascii" if protocol < 3 else "utf-8")
        except UnicodeDecodeError:
            return "global name the pickler cannot write at this protocol", True
        module, _, name = text.partition("\n")
        if _MODULE.fullmatch(module) is None or _NAME.fullmatch(name) is None:
            return "global name that is not a module and an attribute", True
        if protocol < 3 and module.split(".")[0] in _RENAMED:
            return f"module {module}, which the pickler renames at protocol {protocol}", False
    return None


def _mapped_modules() -> re.Pattern[bytes]:
    """The module names CPython's unpickler renames below protocol 3 (``fix_imports``: every
    module of ``_compat_pickle``'s tables), as a GLOBAL line or as a string opcode's text
    (STACK_GLOBAL's module)."""
    import _compat_pickle

    names = set(_compat_pickle.IMPORT_MAPPING) | {m for m, _ in _compat_pickle.NAME_MAPPING}
    forms = []
    for name in sorted(names):
        text = name.encode("ascii")
        forms += [
            b"c" + text + b"\n",
            b"\x8c" + bytes([len(text)]) + text,
            b"X" + struct.pack("<I", len(text)) + text,
        ]
    return re.compile(b"|".join(re.escape(form) for form in forms))


_MAPPED: list[re.Pattern[bytes]] = []


def names_read_otherwise(data: bytes, start: int, before: int, after: int) -> bool:
    """Whether a pickle whose protocol changes from ``before`` to ``after`` at byte ``start``
    names, past it, a module whose reading changes with it: CPython's unpickler (the one
    torch.load(weights_only=False) runs) renames Python 2 module names (``__builtin__``,
    ``copy_reg``, ...) only while the protocol is below 3; torch's weights-only reader renames
    them whatever the protocol. A name that only looks like one (a string with that text) is
    counted too."""
    if (before < 3) == (after < 3):
        return False
    if not _MAPPED:
        _MAPPED.append(_mapped_modules())
    return _MAPPED[0].search(data, start) is not None
