"""Whether ``torch.load``'s default reader (``weights_only=True``) refuses a pickle, without torch.

Since torch 2.6, ``torch.load(f)`` reads with the weights-only unpickler
(``torch/_weights_only_unpickler.py``). It runs only the opcodes of :data:`OPCODES`, resolves only
the globals of :data:`ALLOWED_GLOBALS` (after torch's own Python 2 renames, :data:`NAME_MAPPING`
and :data:`IMPORT_MAPPING` in ``torch/_utils.py``, a subset of ``_compat_pickle``'s), calls
(``REDUCE``) and creates (``NEWOBJ``) only those, builds state (``BUILD``) only into a tensor, a
Parameter, an ``OrderedDict`` or an instance of an allowed class, appends only to a list, sets
items only into a dict, ``OrderedDict`` or ``Counter``, and takes only ``('storage', ...)`` or an
int as a persistent id. Anything else raises ``pickle.UnpicklingError``, which ``torch.load``
re-raises with its "Weights only load failed" message.

The data (:mod:`ppaux.dump.weights_only_allowlist`) is that of **torch 2.13.0**
(``torch/_weights_only_unpickler.py``, ``_get_allowed_globals()`` as it evaluates;
``torch/_utils.py``). :func:`refusal` walks the pickle once, keeping for each stack entry only
the little it needs (which global, which kind of container), so its cost is linear in the
pickle's length, and it stops at the first refusal. A structural fault (stack underflow, a memo
entry never stored, a truncated opcode, a name that is not UTF-8) stops the walk with no answer:
torch raises another error there, and ppaux's own reader reports the malformed pickle.

torch 2.14.1 (sglang 0.5.23's pin; its wheel's ``torch/_weights_only_unpickler.py`` and
``torch/_utils.py`` compared with 2.13.0's) runs the same opcodes, blocks the same modules,
allows the same globals by the same code and raises in the same order, but for one new dtype
global, ``torch.bcomplex32`` (:data:`ALLOWED_FROM_2_14`: 2.14 allows it, 2.13 has no such dtype
and refuses it, so PP119 names the release), and three differences that do not change what
``torch.load(f)`` with no allowlist of the user's refuses: an allowlisted ``list`` subclass may
be appended to (there is none by default); ``_utils.NAME_MAPPING`` also
renames Python 2's ``exceptions.X`` to ``builtins.X`` (no exception class is allowed, so such a
global is refused either way, torch 2.14.1 naming it ``builtins.X`` where ppaux names it as
2.13 does); and sparse tensors are always checked for valid indices after a weights-only load
(which ppaux's pickle walk does not model). A later pytorch commit, after 2.14.1, no longer
allows ``_rebuild_nested_tensor``, refuses at ``STOP`` a ``NEWOBJ`` of a pybind11 class that no
``BUILD`` follows, and re-raises the structural faults above as ``UnpicklingError``.
"""

from __future__ import annotations

import struct
from typing import Any

from ppaux.dump.weights_only_allowlist import (
    ALLOWED_FROM_2_14,
    ALLOWED_GLOBALS,
    BLOCKED_MODULES,
    BUILDABLE,
    IMPORT_MAPPING,
    NAME_MAPPING,
    OPCODES,
    TENSOR_MAKERS,
)
from ppaux.errors import PpauxError

__all__ = [
    "ALLOWED_FROM_2_14",
    "ALLOWED_GLOBALS",
    "BLOCKED_MODULES",
    "IMPORT_MAPPING",
    "NAME_MAPPING",
    "OPCODES",
    "refusal",
]

# What a REDUCE of an allowed global leaves on the stack, as the kind BUILD and SETITEM look at.
_CALL_RESULT = {
    "collections.OrderedDict": "collections.OrderedDict",
    "collections.Counter": "collections.Counter",
    "torch.nn.parameter.Parameter": "torch.nn.parameter.Parameter",
    "torch._utils._rebuild_parameter": "torch.nn.parameter.Parameter",
    "torch._utils._rebuild_parameter_with_state": "torch.nn.parameter.Parameter",
    "torch.Size": "torch.Size",
    "torch.device": "torch.device",
    "builtins.bytearray": "builtins.bytearray",
    "builtins.set": "builtins.set",
    "builtins.complex": "builtins.complex",
    "torch.storage.TypedStorage": "torch.storage.TypedStorage",
    "torch.storage.UntypedStorage": "torch.storage.UntypedStorage",
}
#: The allowed globals that are classes (NEWOBJ calls ``cls.__new__(cls, *args)``).
_CLASSES = BUILDABLE | {name for name in ALLOWED_GLOBALS if name.endswith("Tensor")}
_SETITEM_TARGETS = frozenset({"dict", "collections.OrderedDict", "collections.Counter"})


class _Global:
    """A global GLOBAL resolved (an allowed name)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


class _Value:
    """Any other value: its kind (``dict``, ``list``, a class's dotted name, ``other``) and,
    for a tuple, a str or bytes, the little a persistent id or a rebuild is checked by."""

    __slots__ = ("head", "kind")

    def __init__(self, kind: str, head: Any = None) -> None:
        self.kind = kind
        self.head = head


_OTHER = _Value("other")
_INT = _Value("int")
_SCALARS = {
    0x4E: _Value("None"),
    0x88: _Value("bool"),
    0x89: _Value("bool"),
    0x47: _Value("float"),
    0x4A: _INT,
    0x4B: _INT,
    0x4D: _INT,
    0x8A: _INT,
    0x29: _Value("tuple", (False, False, False)),
}
_TENSOR = _Value("torch.Tensor")
_STORAGE = _Value("torch.storage.TypedStorage")
_LIST = _Value("list")
_DICT = _Value("dict")
_SET = _Value("builtins.set")
#: A str or bytes is kept only as whether it is 'storage' (a persistent id's tag).
_STR = _Value("str")
_STR_STORAGE = _Value("str", "storage")
_BYTES = _Value("bytes")
_BYTES_STORAGE = _Value("bytes", "storage")
_RESULTS = {name: _Value(kind) for name, kind in _CALL_RESULT.items()}
#: A tuple is kept only as (not empty, first item is 'storage', second is Parameter): one
#: shared value each, so the walk holds no more per value than a pointer.
_TUPLES = {
    (full, tag, param): _Value("tuple", (full, tag, param))
    for full in (False, True)
    for tag in (False, True)
    for param in (False, True)
}


class _Stop(PpauxError):
    """A structural fault: torch raises something other than UnpicklingError here."""


def _kind(value: _Global | _Value) -> str:
    return "global" if isinstance(value, _Global) else value.kind


def _describe(value: _Global | _Value) -> str:
    if isinstance(value, _Global):
        return value.name
    return _KIND_WORDS.get(value.kind, f"a {value.kind}")


_KIND_WORDS = {
    "other": "a value of another type",
    "int": "an int",
    "None": "None",
    "bytes": "bytes",
}


def _call_result(func: _Global, args: _Global | _Value) -> _Value:
    name = func.name
    if name in _RESULTS:
        return _RESULTS[name]
    flags = args.head if isinstance(args, _Value) and args.kind == "tuple" else None
    if name == "_codecs.encode":
        # bytes; a persistent id's tag may be b'storage' (torch decodes it as ASCII).
        return _BYTES_STORAGE if flags is not None and flags[1] else _BYTES
    if name == "torch._tensor._rebuild_from_type_v2":
        # (func, new_type, args, state): the result is an instance of new_type.
        if flags is not None and flags[2]:
            return _RESULTS["torch.nn.parameter.Parameter"]
        return _TENSOR
    if name in TENSOR_MAKERS:
        return _TENSOR
    return _OTHER


def _tuple(items: list[_Global | _Value]) -> _Value:
    # Only what the first two items say: a persistent id's tag, a rebuild's new_type.
    tag = bool(items) and isinstance(items[0], _Value) and items[0].head == "storage"
    param = len(items) > 1 and (
        isinstance(items[1], _Global) and items[1].name == "torch.nn.parameter.Parameter"
    )
    return _TUPLES[(bool(items), tag, param)]


def refusal(data: bytes) -> tuple[int, str] | None:
    """``(byte offset, reason)`` of the first thing in the pickle ``data`` that torch.load's
    weights-only unpickler refuses with ``UnpicklingError``, or None when it refuses nothing
    (or stops first on a structural fault)."""
    try:
        return _walk(data)
    except _Stop:
        return None


def _walk(data: bytes) -> tuple[int, str] | None:
    """The first opcode the weights-only reader would refuse in ``data``, as (offset, why).

    One function on purpose, past the usual length: it is one machine over the bytes (its
    stack, marks and memo), and each opcode's rule reads and changes that state at once; split
    into helpers, each would take and hand back all of it. Raises ``_Stop`` where the reader
    would stop without a verdict of its own."""
    stack: list[_Global | _Value] = []
    metastack: list[list[_Global | _Value]] = []
    memo: dict[int, _Global | _Value] = {}
    pos, end = 0, len(data)

    def take(n: int) -> bytes:
        nonlocal pos
        if pos + n > end:
            raise _Stop
        chunk = data[pos : pos + n]
        pos += n
        return chunk

    def line() -> bytes:
        nonlocal pos
        nl = data.find(b"\n", pos)
        if nl < 0:
            raise _Stop  # torch reads a name cut by the end of the pickle: it then stops there
        chunk = data[pos:nl]
        pos = nl + 1
        return chunk

    def pop() -> _Global | _Value:
        if not stack:
            raise _Stop
        return stack.pop()

    def top() -> _Global | _Value:
        if not stack:
            raise _Stop
        return stack[-1]

    def pop_mark() -> list[_Global | _Value]:
        nonlocal stack
        if not metastack:
            raise _Stop
        items = stack
        stack = metastack.pop()
        return items

    while pos < end:
        start = pos
        op = data[pos]
        pos += 1
        # The most frequent opcodes first, without a call.
        if op == 0x71:
            if pos >= end or not stack:
                raise _Stop
            memo[data[pos]] = stack[-1]
            pos += 1
            continue
        if op == 0x72:  # LONG_BINPUT
            if pos + 4 > end or not stack:
                raise _Stop
            memo[int.from_bytes(data[pos : pos + 4], "little")] = stack[-1]
            pos += 4
            continue
        if op == 0x4B:
            if pos >= end:
                raise _Stop
            pos += 1
            stack.append(_INT)
            continue
        if op == 0x68:
            if pos >= end or data[pos] not in memo:
                raise _Stop
            stack.append(memo[data[pos]])
            pos += 1
            continue
        if op == 0x58:  # BINUNICODE, decoded as torch does (a failure is not a refusal)
            size = int.from_bytes(data[pos : pos + 4], "little")
            pos += 4
            if pos > end or pos + size > end:
                raise _Stop
            try:
                text = data[pos : pos + size].decode("utf-8", "surrogatepass")
            except UnicodeDecodeError:
                raise _Stop from None
            pos += size
            stack.append(_STR_STORAGE if text == "storage" else _STR)
            continue
        name = OPCODES.get(op)
        if name is None:
            return start, f"opcode 0x{op:02x}{_pickle_name(op)} is not one it runs"
        if op == 0x2E:  # STOP
            return None
        if op == 0x63:  # GLOBAL
            try:
                module, attr = line().decode("utf-8"), line().decode("utf-8")
            except UnicodeDecodeError:
                raise _Stop from None
            if (module, attr) in NAME_MAPPING:
                module, attr = NAME_MAPPING[(module, attr)]
            elif module in IMPORT_MAPPING:
                module = IMPORT_MAPPING[module]
            full = f"{module}.{attr}"
            if module in BLOCKED_MODULES:
                return start, f"GLOBAL {_shown(full)}: module {_shown(module)} is blocked"
            if full in ALLOWED_FROM_2_14:
                return start, (
                    f"GLOBAL {full} is a dtype new in torch 2.14: torch 2.14 reads it, "
                    "torch 2.13 and earlier refuse it"
                )
            if full not in ALLOWED_GLOBALS:
                return start, f"GLOBAL {_shown(full)} is not an allowed global"
            stack.append(_Global(full))
        elif op == 0x81:  # NEWOBJ
            args, cls = pop(), pop()
            if not isinstance(cls, _Global):
                return start, f"NEWOBJ on {_describe(cls)}, not an allowed class"
            if cls.name not in _CLASSES:
                raise _Stop  # an allowed function or dtype: torch raises TypeError
            stack.append(_call_result(cls, args))
        elif op == 0x52:  # REDUCE
            args, func = pop(), top()
            if not isinstance(func, _Global):
                return start, f"REDUCE calls {_describe(func)}, not an allowed function"
            stack[-1] = _call_result(func, args)
        elif op == 0x62:  # BUILD
            pop()
            inst = top()
            if _kind(inst) not in BUILDABLE:
                return start, f"BUILD sets state into {_describe(inst)}"
        elif op == 0x61:  # APPEND
            pop()
            if _kind(top()) != "list":
                return start, f"APPEND to {_describe(top())}, not a list"
        elif op == 0x65:  # APPENDS
            pop_mark()
            if _kind(top()) != "list":
                return start, f"APPENDS to {_describe(top())}, not a list"
        elif op in (0x73, 0x75):  # SETITEM, SETITEMS
            if op == 0x73:
                pop()
                pop()
            else:
                pop_mark()
            if _kind(top()) not in _SETITEM_TARGETS:
                return start, f"{name} into {_describe(top())}, not a dict"
        elif op == 0x28:  # MARK
            metastack.append(stack)
            stack = []
        elif op == 0x74:  # TUPLE
            items = pop_mark()  # before stack.append is looked up: MARK's stack is gone
            stack.append(_tuple(items))
        elif op in (0x85, 0x86, 0x87):  # TUPLE1..3
            n = op - 0x84
            if len(stack) < n:
                raise _Stop
            items = stack[-n:]
            del stack[-n:]
            stack.append(_tuple(items))
        elif op in _SCALARS:
            take({0x47: 8, 0x4A: 4, 0x4B: 1, 0x4D: 2}.get(op, 0))
            if op == 0x8A:  # LONG1
                take(take(1)[0])
            stack.append(_SCALARS[op])
        elif op == 0x5D:
            stack.append(_LIST)
        elif op == 0x7D:
            stack.append(_DICT)
        elif op == 0x8F:
            stack.append(_SET)
        elif op == 0x55:  # SHORT_BINSTRING (decoded as UTF-8 by torch.load)
            try:
                text = take(take(1)[0]).decode("utf-8")
            except UnicodeDecodeError:
                raise _Stop from None  # torch raises UnicodeDecodeError
            stack.append(_STR_STORAGE if text == "storage" else _STR)
        elif op == 0x51:  # BINPERSID
            pid = pop()
            if _kind(pid) == "tuple":
                nonempty, storage_tag, _ = (
                    pid.head if isinstance(pid, _Value) else (False, False, False)
                )
                if nonempty and not storage_tag:
                    return start, "a persistent id whose tag is not 'storage'"
            elif _kind(pid) != "int":
                return start, f"a persistent id that is {_describe(pid)}, not a tuple or an int"
            stack.append(_STORAGE)
        elif op in (0x68, 0x6A):  # BINGET, LONG_BINGET
            idx = take(1)[0] if op == 0x68 else struct.unpack("<I", take(4))[0]
            if idx not in memo:
                raise _Stop
            stack.append(memo[idx])
        elif op in (0x71, 0x72):  # BINPUT, LONG_BINPUT
            idx = take(1)[0] if op == 0x71 else struct.unpack("<I", take(4))[0]
            memo[idx] = top()
        elif op == 0x80:  # PROTO
            take(1)
    raise _Stop  # no STOP: torch raises EOFError


def _pickle_name(op: int) -> str:
    import pickletools

    for code in pickletools.opcodes:
        if code.code.encode("latin-1")[0] == op:
            return f" ({code.name})"
    return ""


def _shown(text: str) -> str:
    from ppaux.text import shown

    return shown(text, 200)
