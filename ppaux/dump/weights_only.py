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

import re
import struct
from collections.abc import Callable

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
from ppaux.text import cut

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
    # A NestedTensor, which BUILD may set state into (an allowlisted class).
    "torch.nested._internal.nested_tensor._rebuild_njt": "torch.Tensor",
    "torch.nested._internal.nested_tensor.NestedTensor": "torch.Tensor",
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


#: The globals of a nested jagged tensor. ``import torch`` imports torch.nested, which adds
#: the first two to the weights-only reader's allowlist (``add_safe_globals``); the reader
#: refuses the third (the min/max_seqlen cache's marks) with its own message unless
#: torch._dynamo was imported first.
_JAGGED_ALLOWED = frozenset(
    {
        "torch.nested._internal.nested_tensor.NestedTensor",
        "torch.nested._internal.nested_tensor._rebuild_njt",
    }
)
_JAGGED_REFUSED = "torch._dynamo.decorators._DimRange"


class _Global:
    """A global GLOBAL resolved (an allowed name)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


class _Value:
    """Any other value: its kind (``dict``, ``list``, a class's dotted name, ``other``) and,
    for a tuple, a str or bytes, the little a persistent id or a rebuild is checked by."""

    __slots__ = ("head", "kind")

    def __init__(self, kind: str, head: str | tuple[bool, bool, bool] | None = None) -> None:
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
    flags = args.head if isinstance(args, _Value) and isinstance(args.head, tuple) else None
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
    Raises ``_Stop`` where the reader would stop without a verdict of its own."""
    return _Walker(data).run()


_Found = tuple[int, str] | None


class _Walker:
    """The weights-only reader's machine over one pickle: its stack, marks and memo, and one
    method per opcode family (:data:`_HANDLERS`), each of which reads the opcode's argument,
    changes that state and returns a refusal or None."""

    __slots__ = ("data", "end", "memo", "metastack", "pos", "stack")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.end = len(data)
        self.pos = 0
        self.stack: list[_Global | _Value] = []
        self.metastack: list[list[_Global | _Value]] = []
        self.memo: dict[int, _Global | _Value] = {}

    def run(self) -> _Found:
        data, end, memo = self.data, self.end, self.memo
        while self.pos < end:
            start = pos = self.pos
            op = data[pos]
            pos += 1
            stack = self.stack
            # The most frequent opcodes first, without a call.
            if op == 0x71:  # BINPUT
                if pos >= end or not stack:
                    raise _Stop
                memo[data[pos]] = stack[-1]
                self.pos = pos + 1
                continue
            if op == 0x4B:  # BININT1
                if pos >= end:
                    raise _Stop
                self.pos = pos + 1
                stack.append(_INT)
                continue
            if op == 0x68:  # BINGET
                if pos >= end or data[pos] not in memo:
                    raise _Stop
                stack.append(memo[data[pos]])
                self.pos = pos + 1
                continue
            self.pos = pos
            pushed = _ONE_BYTE.get(op)
            if pushed is not None:  # NONE, the bools, EMPTY_TUPLE, the empty containers
                stack.append(pushed)
                if pos < end and data[pos] in _ONE_BYTE:  # a run of them, taken at once
                    run = _ONE_BYTE_RUN.match(data, pos)
                    self.pos = run.end() if run is not None else pos
                    stack.extend(map(_ONE_BYTE.__getitem__, data[pos : self.pos]))
                continue
            if op == 0x61 and len(stack) > 1 and stack[-2] is _LIST:  # APPEND to a list
                stack.pop()
                continue
            handler = _HANDLERS.get(op)
            if handler is None or op not in OPCODES:
                return start, f"opcode 0x{op:02x}{_pickle_name(op)} is not one it runs"
            if op == 0x2E:  # STOP
                return None
            found = handler(self, op, start)
            if found is not None:
                return found
        raise _Stop  # no STOP: torch raises EOFError

    # -- reading the pickle and the stack; each raises _Stop where torch would stop --

    def take(self, n: int) -> bytes:
        if self.pos + n > self.end:
            raise _Stop
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def line(self) -> bytes:
        nl = self.data.find(b"\n", self.pos)
        if nl < 0:
            raise _Stop  # torch reads a name cut by the end of the pickle: it then stops there
        chunk = self.data[self.pos : nl]
        self.pos = nl + 1
        return chunk

    def pop(self) -> _Global | _Value:
        if not self.stack:
            raise _Stop
        return self.stack.pop()

    def top(self) -> _Global | _Value:
        if not self.stack:
            raise _Stop
        return self.stack[-1]

    def pop_mark(self) -> list[_Global | _Value]:
        if not self.metastack:
            raise _Stop
        items = self.stack
        self.stack = self.metastack.pop()
        return items

    # -- the opcode families --

    def global_(self, op: int, start: int) -> _Found:
        try:
            module, attr = self.line().decode("utf-8"), self.line().decode("utf-8")
        except UnicodeDecodeError:
            raise _Stop from None
        if (module, attr) in NAME_MAPPING:
            module, attr = NAME_MAPPING[(module, attr)]
        elif module in IMPORT_MAPPING:
            module = IMPORT_MAPPING[module]
        full = f"{module}.{attr}"
        if module in BLOCKED_MODULES:
            return start, f"GLOBAL {cut(full, 200)}: module {cut(module, 200)} is blocked"
        if full in ALLOWED_FROM_2_14:
            return start, (
                f"GLOBAL {full} is a dtype new in torch 2.14: torch 2.14 reads it, "
                "torch 2.13 and earlier refuse it"
            )
        if full in _JAGGED_ALLOWED:
            self.stack.append(_Global(full))
            return None
        if full == _JAGGED_REFUSED:
            # torch 2.13 refuses it by name, unless torch._dynamo was imported before the
            # load: its import adds _DimRange to the allowlist.
            return start, (
                f"GLOBAL {full}: torch.nested and torch._dynamo must be imported to load "
                "nested jagged tensors (NJTs); the default reader loads the file in a process "
                "that imported torch._dynamo first"
            )
        if full not in ALLOWED_GLOBALS:
            return start, f"GLOBAL {cut(full, 200)} is not an allowed global"
        self.stack.append(_Global(full))
        return None

    def newobj(self, op: int, start: int) -> _Found:
        args, cls = self.pop(), self.pop()
        if not isinstance(cls, _Global):
            return start, f"NEWOBJ on {_describe(cls)}, not an allowed class"
        if cls.name not in _CLASSES:
            raise _Stop  # an allowed function or dtype: torch raises TypeError
        self.stack.append(_call_result(cls, args))
        return None

    def reduce(self, op: int, start: int) -> _Found:
        args, func = self.pop(), self.top()
        if not isinstance(func, _Global):
            return start, f"REDUCE calls {_describe(func)}, not an allowed function"
        self.stack[-1] = _call_result(func, args)
        return None

    def build(self, op: int, start: int) -> _Found:
        self.pop()
        inst = self.top()
        if _kind(inst) not in BUILDABLE:
            return start, f"BUILD sets state into {_describe(inst)}"
        return None

    def fill(self, op: int, start: int) -> _Found:
        """APPEND, APPENDS, SETITEM, SETITEMS: the items go, the container must take them."""
        if op == 0x61:
            self.pop()
        elif op == 0x73:
            self.pop()
            self.pop()
        else:
            self.pop_mark()
        if op in (0x61, 0x65):
            if _kind(self.top()) != "list":
                return start, f"{OPCODES[op]} to {_describe(self.top())}, not a list"
        elif _kind(self.top()) not in _SETITEM_TARGETS:
            return start, f"{OPCODES[op]} into {_describe(self.top())}, not a dict"
        return None

    def mark(self, op: int, start: int) -> _Found:
        self.metastack.append(self.stack)
        self.stack = []
        return None

    def tuple_(self, op: int, start: int) -> _Found:
        if op == 0x74:  # TUPLE
            items = self.pop_mark()
        else:  # TUPLE1..3
            n = op - 0x84
            if len(self.stack) < n:
                raise _Stop
            items = self.stack[-n:]
            del self.stack[-n:]
        self.stack.append(_tuple(items))
        return None

    def scalar(self, op: int, start: int) -> _Found:
        self.take(_SCALAR_SIZES.get(op, 0))
        if op == 0x8A:  # LONG1
            self.take(self.take(1)[0])
        self.stack.append(_SCALARS[op])
        return None

    def empty(self, op: int, start: int) -> _Found:
        self.stack.append(_EMPTIES[op])
        return None

    def text(self, op: int, start: int) -> _Found:
        """BINUNICODE, and SHORT_BINSTRING (decoded as UTF-8 by torch.load); a text torch
        cannot decode stops it (UnicodeDecodeError), which is not a refusal."""
        if op == 0x58:
            size = int.from_bytes(self.data[self.pos : self.pos + 4], "little")
            self.pos += 4
            if self.pos > self.end:
                raise _Stop
            raw = self.take(size)
        else:
            raw = self.take(self.take(1)[0])
        try:
            decoded = raw.decode("utf-8", "surrogatepass" if op == 0x58 else "strict")
        except UnicodeDecodeError:
            raise _Stop from None
        self.stack.append(_STR_STORAGE if decoded == "storage" else _STR)
        return None

    def persistent_id(self, op: int, start: int) -> _Found:
        pid = self.pop()
        if _kind(pid) == "tuple":
            nonempty, storage_tag, _ = (
                pid.head
                if isinstance(pid, _Value) and isinstance(pid.head, tuple)
                else (False, False, False)
            )
            if nonempty and not storage_tag:
                return start, "a persistent id whose tag is not 'storage'"
        elif _kind(pid) != "int":
            return start, f"a persistent id that is {_describe(pid)}, not a tuple or an int"
        self.stack.append(_STORAGE)
        return None

    def memo_op(self, op: int, start: int) -> _Found:
        """BINGET, LONG_BINGET, BINPUT, LONG_BINPUT."""
        idx = self.take(1)[0] if op in (0x68, 0x71) else struct.unpack("<I", self.take(4))[0]
        if op in (0x71, 0x72):
            self.memo[idx] = self.top()
            return None
        if idx not in self.memo:
            raise _Stop
        self.stack.append(self.memo[idx])
        return None

    def proto(self, op: int, start: int) -> _Found:
        self.take(1)
        return None


_EMPTIES = {0x5D: _LIST, 0x7D: _DICT, 0x8F: _SET}
_SCALAR_SIZES = {0x47: 8, 0x4A: 4, 0x4B: 1, 0x4D: 2}
#: One-byte opcodes that push a value, which run() takes without a call (a million, a byte each).
_ONE_BYTE = {op: _SCALARS[op] for op in (0x4E, 0x88, 0x89, 0x29)} | _EMPTIES
_ONE_BYTE_RUN = re.compile(b"[" + re.escape(bytes(sorted(_ONE_BYTE))) + b"]+")
_HANDLERS: dict[int, Callable[[_Walker, int, int], _Found]] = {
    0x2E: _Walker.proto,  # STOP: answered by run before any handler
    0x63: _Walker.global_,
    0x81: _Walker.newobj,
    0x52: _Walker.reduce,
    0x62: _Walker.build,
    **dict.fromkeys((0x61, 0x65, 0x73, 0x75), _Walker.fill),
    0x28: _Walker.mark,
    **dict.fromkeys((0x74, 0x85, 0x86, 0x87), _Walker.tuple_),
    **dict.fromkeys(_SCALARS, _Walker.scalar),
    **dict.fromkeys(_EMPTIES, _Walker.empty),
    **dict.fromkeys((0x58, 0x55), _Walker.text),
    0x51: _Walker.persistent_id,
    **dict.fromkeys((0x68, 0x6A, 0x71, 0x72), _Walker.memo_op),
    0x80: _Walker.proto,
}


def _pickle_name(op: int) -> str:
    import pickletools

    names = [code.name for code in pickletools.opcodes if code.code.encode("latin-1")[0] == op]
    return f" ({names[0]})" if names else ""
