"""A pickle interpreter that never imports or calls anything named in the data.

It runs the pickle opcodes of protocols 0 to 5 itself. Globals go through a resolver (the
allowlist in :mod:`ppaux.dump.allowlist`) that returns safe stand-ins; calls, object creation and
``BUILD`` on anything else produce :class:`~ppaux.dump.model.Opaque` records. Every step is
bounded by :class:`~ppaux.limits.Limits`: items created, memo entries, nesting of marks, and the
input size the caller hands in. Malformed data raises :class:`~ppaux.errors.DumpError` with the
byte offset.

This module holds the machine's loop and the opcodes that reach past plain data (globals, calls,
object creation, BUILD, persistent ids); the state and its steps are in
:mod:`ppaux.dump.pickle_state`, the opcodes of plain data in :mod:`ppaux.dump.pickle_values`, and
what BUILD does to a tensor or array in :mod:`ppaux.dump.build_state`. What the machine builds for
a global lives elsewhere (the allowlist, the value model).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ppaux.dump.build_state import (
    PARAMETER_TYPES,
    build_dim_range,
    build_ndarray,
    build_plain_tensor,
    build_tensor,
    new_parameter,
)
from ppaux.dump.model import (
    DimRange,
    GlobalRef,
    NdArrayRef,
    NumpyDtype,
    Opaque,
    StorageType,
    TensorRef,
    TypeRef,
)
from ppaux.dump.numpy_dtype_refusals import state_verdict
from ppaux.dump.numpy_dtypes import dtype_detail
from ppaux.dump.numpy_writer import dtype_state_deviation
from ppaux.dump.pickle_state import PickleState
from ppaux.dump.pickle_values import VALUE_OPCODES, decode_str
from ppaux.errors import DumpError, LimitExceeded
from ppaux.limits import Limits
from ppaux.text import cut

__all__ = ["Call", "Machine", "global_name"]


#: The allowlisted callables that are classes (NEWOBJ may create them); the others are
#: functions, which NEWOBJ refuses.
_TYPES = frozenset(
    {
        "torch.device",
        "torch.Size",
        "collections.OrderedDict",
        "builtins.set",
        "builtins.frozenset",
        "builtins.bytearray",
        "builtins.bytes",
        "builtins.complex",
        "numpy.dtype",
        "torch._dynamo.decorators._DimRange",
        "torch.storage.UntypedStorage",
    }
)


#: Characters of a global's dotted name kept for reports; real names are far shorter.
_MAX_NAME = 200


def global_name(module: str, name: str) -> str:
    """The dotted name of a global as reports hold it: cut if absurdly long (every format shows
    it escaped)."""
    return cut(f"{module}.{name}", _MAX_NAME)


class Call:
    """An allowlisted callable: ``fn(machine, args)`` builds the safe stand-in for its result."""

    __slots__ = ("fn", "name")

    def __init__(self, name: str, fn: Callable[[Machine, tuple[Any, ...]], Any]) -> None:
        self.name = name
        self.fn = fn

    def __repr__(self) -> str:
        return f"<allowed {self.name}>"


class Machine(PickleState):
    """Runs one pickle from ``data[start:]`` and returns its value with :meth:`load`.

    ``resolve(module, name)`` turns a global into a value (a :class:`Call`, a model, or a
    :class:`GlobalRef`); ``persistent_load(pid)`` turns a persistent id into a value.
    ``globals_seen`` maps every global name the pickle used to whether it was allowlisted.
    """

    def __init__(
        self,
        data: bytes,
        *,
        path: str,
        limits: Limits,
        resolve: Callable[[Machine, str, str], Any],
        persistent_load: Callable[[Machine, Any], Any] | None = None,
        start: int = 0,
    ) -> None:
        super().__init__(data, path=path, limits=limits, start=start)
        self.resolve = resolve
        self.persistent_load = persistent_load

    # -- calls --------------------------------------------------------------------------------
    def global_(self, module: str, name: str) -> Any:
        """Resolve a global through the allowlist, recording that it was used."""
        value = self.resolve(self, module, name)
        dotted = global_name(module, name)
        self.globals_seen[dotted] = self.globals_seen.get(dotted, False) or not isinstance(
            value, GlobalRef
        )
        return value

    def call(self, func: object, args: object, via: str = "call") -> Any:
        """What calling ``func(*args)`` stands for; nothing outside the allowlist is run."""
        if not isinstance(args, tuple):
            raise self.error(f"call arguments are a {type(args).__name__}, not a tuple")
        if isinstance(func, Call):
            if via == "new" and func.name not in _TYPES:
                self.deviate(
                    f"NEWOBJ on {func.name}, not a class (torch's unpickler refuses it: "
                    "NEWOBJ class argument isn't a type object)"
                )
            try:
                return func.fn(self, args)
            except DumpError:
                raise
            except (
                TypeError,
                ValueError,
                AttributeError,
                IndexError,
                KeyError,
                OverflowError,
            ) as exc:
                raise self.error(f"unexpected arguments to {func.name} ({exc})") from None
            except RecursionError:
                raise self.error(f"arguments to {func.name} nest too deeply") from None
        if isinstance(func, TypeRef) and func.name in PARAMETER_TYPES:
            if via != "new":
                self.deviate(
                    "torch.nn.Parameter called by REDUCE (torch.save writes a Parameter "
                    "with _rebuild_parameter)"
                )
            return new_parameter(self, args)
        if isinstance(func, GlobalRef):
            return Opaque(func.name, via, args)
        if isinstance(func, Opaque):
            # Calling a result again and again: the name stops growing (it would grow by five
            # characters per call, quadratic in all).
            name = func.name if len(func.name) > _MAX_NAME else f"{func.name}(...)"
            return Opaque(name, via, args)
        if isinstance(func, StorageType):
            # Both of torch's unpicklers stand a legacy storage class in for an object that is
            # not callable: torch.load raises TypeError at this call.
            from ppaux.errors import TorchRefuses

            raise TorchRefuses(
                self.path,
                f"torch.load refuses the file: the pickle calls torch.{func.name} "
                f"(at byte {self.op_pos}), which torch's unpickler reads as a storage type that "
                "cannot be called ('StorageType' object is not callable)",
            )
        called = getattr(func, "name", None)
        if isinstance(called, str):  # an allowlisted type used as a constructor we do not model
            return Opaque(called, via, args)
        raise self.error(f"the pickle calls a {type(func).__name__} value")

    def build(self, obj: object, state: object) -> None:
        """Apply BUILD state to a stand-in object."""
        if isinstance(obj, TensorRef) and obj.storage is not None and obj.kind == "dense":
            if obj.subclass is None:
                build_plain_tensor(self, state)
            build_tensor(self, obj, state)
        elif isinstance(obj, TensorRef) and obj.layout == "torch.jagged":
            # NestedTensor's __setstate__ is Tensor's; torch.save writes no BUILD on one.
            self.deviate("BUILD on a nested jagged tensor, which torch.save never writes")
            build_tensor(self, obj, state)
        elif isinstance(obj, (Opaque, TensorRef)):
            obj.state = state
        elif isinstance(obj, NdArrayRef):
            build_ndarray(self, obj, state)
        elif isinstance(obj, DimRange):
            build_dim_range(self, obj, state)
        elif isinstance(obj, NumpyDtype):
            refusal, known = state_verdict(state)
            obj.refusal = obj.refusal or refusal
            deviation = dtype_state_deviation(obj.spec, state)
            if deviation is not None:
                # numpy writes states of 8 items (version 3) or 9 (version 4, with metadata);
                # one of another length that ppaux does not judge is read at error.
                written = isinstance(state, tuple) and len(state) in (8, 9)
                self.deviate(deviation, severe=not known and not written)
            if isinstance(state, tuple) and len(state) > 1 and isinstance(state[1], str):
                obj.byteorder = state[1]
                obj.built = True
                obj.detail = dtype_detail(obj.spec, state)
        elif isinstance(obj, dict) and isinstance(state, dict):
            if id(obj) not in self.ordered_dicts:
                self.deviate(
                    "BUILD on a plain dict (torch's unpickler refuses it: a dict has no "
                    "__dict__ to update)"
                )
            # An OrderedDict's attributes, such as the _metadata that Module.state_dict() sets:
            # torch's weights-only loader applies them; the items are untouched.
            pass
        else:
            raise self.error(f"BUILD on a {type(obj).__name__} value")

    # -- the loop -----------------------------------------------------------------------------
    def load(self) -> Any:
        """Run opcodes up to STOP and return the value; ``self.pos`` is then just past STOP."""
        dispatch = _DISPATCH
        data = self.data
        max_ops = self.limits.max_ops
        max_items = self.limits.max_items
        size = len(data)
        while True:
            self.ops += 1
            if self.ops > max_ops:
                raise LimitExceeded(
                    self.path, "max_ops", max_ops, "the pickle runs too many opcodes"
                )
            pos = self.pos
            if pos >= size:
                self.ran_out = True
                raise DumpError(self.path, f"truncated pickle: no STOP opcode before byte {pos}")
            self.op_pos = pos
            op = data[pos]
            self.pos = pos = pos + 1
            # The opcodes a pickle may hold a million of, a byte each, run without a call.
            if op in _CONSTANTS:
                self.items += 1
                if self.items > max_items:
                    self._count(0)
                self.stack.append(_CONSTANTS[op])
                if pos < size and data[pos] in _CONSTANTS:
                    _constants_run(self, pos)
                continue
            if op == 0x5D or op == 0x7D or (op == 0x4B and pos < size):  # and BININT1
                self.items += 1
                if self.items > max_items:
                    self._count(0)
                if op == 0x4B:
                    self.stack.append(data[pos])
                    self.pos = pos + 1
                else:
                    self.stack.append([] if op == 0x5D else {})
                continue
            if op == 0x61:  # APPEND to a list
                stack = self.stack
                if len(stack) > 1 and stack[-2].__class__ is list:
                    stack[-2].append(stack.pop())
                    continue
            handler = dispatch.get(op)
            if handler is None:
                raise self.error(f"unknown opcode {bytes([op])!r}")
            try:
                stop = handler(self)
            except RecursionError:
                # Comparing or hashing values nested past Python's own limit (check_key bounds
                # the known ways; this is the backstop).
                raise self.error("values nest too deeply to hash or compare") from None
            if stop:
                # CPython's unpickler (and torch's weights-only one) returns the top of the
                # values since the innermost MARK, whatever marks are still open; the writer
                # grammar reports an open mark as a deviation.
                if not self.stack:
                    raise self.error("STOP with no value since the last MARK")
                for offset, hooks in self.hooks_given:
                    if hooks and (self.deviation is None or not self.deviation[2]):
                        what = "backward hooks filled after the tensor was rebuilt with them"
                        self.deviation = (f"byte {offset}", what, True)
                return self.stack.pop()


def _constants_run(m: Machine, pos: int) -> None:
    """Push the run of one-byte constants at ``pos`` at once, as the loop would one by one
    (left to the loop where the run would pass max_ops or max_items, which it then names)."""
    run = _CONSTANT_RUN.match(m.data, pos)
    if run is None:
        return
    stop = run.end()
    n = stop - pos
    if m.ops + n > m.limits.max_ops or m.items + n > m.limits.max_items:
        return
    m.ops += n
    m.items += n
    m.stack.extend(map(_CONSTANTS.__getitem__, m.data[pos:stop]))
    m.op_pos = stop - 1
    m.pos = stop


def _op_global(m: Machine) -> None:
    module = decode_str(m, m.readline())
    name = decode_str(m, m.readline())
    m.push(m.global_(module, name))


def _op_stack_global(m: Machine) -> None:
    name = m.pop()
    module = m.pop()
    if not isinstance(module, str) or not isinstance(name, str):
        raise m.error("STACK_GLOBAL needs two strings")
    m.push(m.global_(module, name))


def _op_reduce(m: Machine) -> None:
    args = m.pop()
    func = m.pop()
    result = m.call(func, args)
    if args == () and isinstance(func, Call) and func.name == "collections.OrderedDict":
        m.torch_hooks[id(result)] = result  # as torch.save writes a tensor's backward hooks
    m.push(result)


def _op_newobj(m: Machine) -> None:
    args = m.pop()
    cls = m.pop()
    m.push(m.call(cls, args, "new"))


def _op_newobj_ex(m: Machine) -> None:
    kwargs = m.pop()
    args = m.pop()
    cls = m.pop()
    result = m.call(cls, args, "new")
    if isinstance(result, Opaque) and kwargs:
        result.args = (*result.args, kwargs)
    m.push(result)


def _op_inst(m: Machine) -> None:
    module = decode_str(m, m.readline())
    name = decode_str(m, m.readline())
    args = tuple(m.pop_mark())
    m.push(m.call(m.global_(module, name), args, "object"))


def _op_obj(m: Machine) -> None:
    items = m.pop_mark()
    if not items:
        raise m.error("OBJ without a class")
    m.push(m.call(items[0], tuple(items[1:]), "object"))


def _op_build(m: Machine) -> None:
    state = m.pop()
    m.build(m.top(), state)


def _op_persid(m: Machine) -> None:
    pid = m.readline().decode("ascii", "replace")
    _persistent(m, pid)


def _op_binpersid(m: Machine) -> None:
    _persistent(m, m.pop())


def _persistent(m: Machine, pid: object) -> None:
    if m.persistent_load is None:
        raise m.error("persistent id in a pickle that has no storage records")
    m.push(m.persistent_load(m, pid))


_OBJECT_OPCODES: dict[str, Callable[[Machine], Any]] = {
    "P": _op_persid,
    "Q": _op_binpersid,
    "R": _op_reduce,
    "b": _op_build,
    "c": _op_global,
    "i": _op_inst,
    "o": _op_obj,
    "\x81": _op_newobj,
    "\x92": _op_newobj_ex,
    "\x93": _op_stack_global,
}
#: Opcodes that push one constant, one byte each (NONE, NEWTRUE, NEWFALSE, EMPTY_TUPLE): the
#: loop runs them without a call.
_CONSTANTS: dict[int, object] = {0x4E: None, 0x88: True, 0x89: False, 0x29: ()}
_CONSTANT_RUN = re.compile(rb"[N\x88\x89)]+")
#: Every opcode's handler, by its byte; no byte is in both tables.
_DISPATCH: dict[int, Callable[[Machine], Any]] = {
    ord(k): v for k, v in (VALUE_OPCODES | _OBJECT_OPCODES).items()
}
