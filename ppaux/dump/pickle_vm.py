"""A pickle interpreter that never imports or calls anything named in the data.

It runs the pickle opcodes of protocols 0 to 5 itself. Globals go through a resolver (the
allowlist in :mod:`ppaux.dump.allowlist`) that returns safe stand-ins; calls, object creation and
``BUILD`` on anything else produce :class:`~ppaux.dump.model.Opaque` records. Every step is bounded
by
:class:`~ppaux.limits.Limits`: items created, memo entries, nesting of marks, and the input size
the caller hands in. Malformed data raises :class:`~ppaux.errors.DumpError` with the byte offset.

One job, so one module though a long one: the machine's state (stack, marks, memo, the bounds
spent) and the opcode table that changes it are read together, opcode by opcode, against
CPython's ``Modules/_pickle.c``; split apart, every handler would reach back into the other
half's private state. What the machine builds for a global lives elsewhere (the allowlist, the
value model).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from ppaux.dump.grammar import past_protocols
from ppaux.dump.model import (
    GlobalRef,
    NdArrayRef,
    NumpyDtype,
    Opaque,
    StorageRef,
    TensorRef,
    TypeRef,
)
from ppaux.errors import DumpError, LimitExceeded
from ppaux.limits import Limits
from ppaux.text import shown

__all__ = [
    "Call",
    "Machine",
    "check_state",
    "global_name",
    "is_shape",
    "set_requires_grad",
]

_INT64_END = 2**63
#: Deepest dict key or set item hashed. CPython hashes nested tuples by C recursion (a deep one
#: crashes the process) and compares them with a recursion limit of about 1000.
_MAX_KEY_DEPTH = 500


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
        "torch.storage.UntypedStorage",
    }
)
#: The tensor's own fields: every data descriptor of torch.Tensor and its bases (torch 2.13),
#: the names an assignment sets on the tensor itself rather than in its ``__dict__``. torch.save
#: writes the state of a tensor with attributes, a Parameter or a subclass from its
#: ``__dict__``, which never holds one of these; a state naming one replaces (or fails to set)
#: what the rebuild made, so every such key is one rule: not as torch.save writes it.
TENSOR_FIELDS = frozenset(
    [
        "H",
        "T",
        "__class__",
        "__cuda_array_interface__",
        "__dict__",
        "__weakref__",
        "_backward_hooks",
        "_base",
        "_cdata",
        "_grad",
        "_grad_fn",
        "_has_symbolic_sizes_strides",
        "_post_accumulate_grad_hooks",
        "_python_dispatch",
        "_version",
        "data",
        "device",
        "dtype",
        "grad",
        "grad_dtype",
        "grad_fn",
        "imag",
        "is_cpu",
        "is_cuda",
        "is_ipu",
        "is_leaf",
        "is_maia",
        "is_meta",
        "is_mkldnn",
        "is_mps",
        "is_mtia",
        "is_nested",
        "is_quantized",
        "is_sparse",
        "is_sparse_csr",
        "is_vulkan",
        "is_xla",
        "is_xpu",
        "itemsize",
        "layout",
        "mH",
        "mT",
        "name",
        "names",
        "nbytes",
        "ndim",
        "output_nr",
        "real",
        "requires_grad",
        "retains_grad",
        "shape",
        "volatile",
    ]
)


def check_state(m: Machine, state: Any, where: str) -> None:
    """Record a deviation for a Parameter or subclass state that sets a tensor field."""
    parts = state if isinstance(state, tuple) else (state,)
    for part in parts:
        if isinstance(part, dict):
            named = sorted(k for k in part if isinstance(k, str) and k in TENSOR_FIELDS)
            if named:
                m.deviate(f"{where} state sets the tensor's {named[0]!r}")
                return


#: Characters of a global's dotted name kept for reports; real names are far shorter.
_MAX_NAME = 200


def global_name(module: str, name: str) -> str:
    """The dotted name of a global as reports show it: escaped, and cut if absurdly long."""
    return shown(f"{module}.{name}", _MAX_NAME)


def is_shape(value: Any, max_dims: int) -> bool:
    """True for a tuple or list of at most ``max_dims`` sizes, each an int in [0, 2**63)."""
    return (
        isinstance(value, (tuple, list))
        and len(value) <= max_dims
        and all(type(v) is int and 0 <= v < _INT64_END for v in value)
    )


class Call:
    """An allowlisted callable: ``fn(machine, args)`` builds the safe stand-in for its result."""

    __slots__ = ("fn", "name")

    def __init__(self, name: str, fn: Callable[[Machine, tuple[Any, ...]], Any]) -> None:
        self.name = name
        self.fn = fn

    def __repr__(self) -> str:
        return f"<allowed {self.name}>"


class Machine:
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
        self.data = data
        self.path = path
        self.limits = limits
        self.resolve = resolve
        self.persistent_load = persistent_load
        self.pos = start
        self.stack: list[Any] = []
        self.metastack: list[list[Any]] = []
        self.memo: dict[int, Any] = {}
        self.items = 0
        #: Opcodes run, by this machine and the ones it nests (shared as items are).
        self.ops = 0
        self.globals_seen: dict[str, bool] = {}
        #: Every storage-backed tensor the pickle builds, kept or not: torch.load builds (and
        #: may fail on) each one, even those a later entry replaces.
        self.tensors_built: list[Any] = []
        self.protocol = 0
        self._op_pos = start
        #: Bytes copied by allowlisted constructors (bytearray, nested streams, ...).
        self.copied = 0
        # (id(container), hash) -> distinct keys with that hash: see check_key.
        self._buckets: dict[tuple[int, int], list[Any]] = {}
        self._held: dict[int, Any] = {}
        #: The first value the pickle builds that torch.save never writes (where, what, severe):
        #: see :mod:`ppaux.dump.grammar`.
        self.deviation: tuple[str, str, bool] | None = None
        #: ids of the dicts made by collections.OrderedDict (BUILD may set their attributes).
        self.ordered_dicts: set[int] = set()
        #: The OrderedDicts built as torch.save writes backward hooks (GLOBAL, EMPTY_TUPLE,
        #: REDUCE), by id; held so that no id is reused.
        self.torch_hooks: dict[int, Any] = {}
        #: (offset, hooks) of each tensor rebuilt with such hooks: torch keeps the dict itself,
        #: so one filled later in the pickle gives the tensor hooks (checked at STOP).
        self.hooks_given: list[tuple[int, Any]] = []
        #: Whether the pickle wanted bytes past the end of ``data`` (a cut pickle).
        self.ran_out = False

    # -- the writer's model ------------------------------------------------------------------
    def deviate(self, what: str, severe: bool = True) -> None:
        """Record (once, the first) a value that torch.save's pickler never writes."""
        if self.deviation is None:
            self.deviation = (f"byte {self._op_pos}", what, severe)

    # -- errors and limits -------------------------------------------------------------------
    def error(self, reason: str) -> DumpError:
        """A DumpError that names the byte offset of the opcode being run."""
        return DumpError(self.path, f"malformed pickle at byte {self._op_pos}: {reason}")

    def _count(self, n: int = 1) -> None:
        self.items += n
        if self.items > self.limits.max_items:
            raise LimitExceeded(
                self.path,
                "max_items",
                self.limits.max_items,
                "the pickle creates too many values",
            )

    def charge_items(self, n: int) -> None:
        """Account for ``n`` values an allowlisted call creates by copying a container."""
        self._count(n)

    def charge_bytes(self, n: int) -> None:
        """Account for ``n`` bytes an allowlisted call copies; a memo reference costs a few bytes
        of pickle but may be copied again and again, so all copies share max_pickle_bytes."""
        self.copied += n
        if self.copied > self.limits.max_pickle_bytes:
            raise LimitExceeded(
                self.path,
                "max_pickle_bytes",
                self.limits.max_pickle_bytes,
                "the pickle's values copy more bytes than that",
            )

    def check_key(self, container: Any, key: Any) -> None:
        """Make sure that hashing ``key`` into ``container`` (a dict or set) is cheap and safe.

        Python does not cache the hash of tuples or ints, so a memo reference can make it hash a
        huge key again and again: that work is charged to max_items. Deep tuples crash CPython's
        hash, and keys built to share one hash value make every insertion compare with all of
        them: both are refused.
        """
        if isinstance(key, (str, bytes)) or key is None:
            return  # str and bytes hashes are salted per process and cached on the object
        cost = 0
        stack = [(key, 0)]
        while stack:
            value, depth = stack.pop()
            if isinstance(value, (tuple, frozenset)):
                # Comparing two equal keys recurses through both (a frozenset's hash is cached,
                # its comparison is not): deep ones raise RecursionError.
                if depth >= _MAX_KEY_DEPTH:
                    raise self.error(
                        f"a dict key or set item nests more than {_MAX_KEY_DEPTH} tuples or "
                        "frozensets deep"
                    )
                cost += len(value)
                stack.extend((v, depth + 1) for v in value)
            elif isinstance(value, int):
                cost += value.bit_length() >> 6
            if self.items + cost > self.limits.max_items:
                raise LimitExceeded(
                    self.path,
                    "max_items",
                    self.limits.max_items,
                    "hashing the pickle's dict keys and set items takes too much work",
                )
        self.items += cost
        # Small ints hash to themselves and floats collide a few times at most; strings and the
        # reader's own objects hash unpredictably. Only these keys can be made to collide at will.
        if not (
            isinstance(key, (tuple, frozenset, complex))
            or (type(key) is int and key.bit_length() > 60)
        ):
            return
        try:
            digest = hash(key)
        except TypeError:
            return  # the caller reports the unhashable key
        self._held[id(container)] = container  # keeps the id from being reused meanwhile
        slot = (id(container), digest)
        held = self._buckets.get(slot)
        if held is None:
            self._buckets[slot] = [key]
        elif not any(k is key or k == key for k in held):
            held.append(key)
            if len(held) > self.limits.max_hash_collisions:
                raise LimitExceeded(
                    self.path,
                    "max_hash_collisions",
                    self.limits.max_hash_collisions,
                    f"malformed pickle at byte {self._op_pos}: more than "
                    f"{self.limits.max_hash_collisions} distinct dict keys or set items share one "
                    "hash value (keys chosen to collide)",
                )

    # -- reading ------------------------------------------------------------------------------
    def _read(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.data):
            self.ran_out = n >= 0
            raise DumpError(
                self.path,
                f"truncated pickle: {n} bytes wanted at byte {self.pos}, "
                f"{max(len(self.data) - self.pos, 0)} left",
            )
        chunk = self.data[self.pos : end]
        self.pos = end
        return chunk

    def _readline(self) -> bytes:
        end = self.data.find(b"\n", self.pos)
        if end < 0:
            self.ran_out = True
            raise DumpError(self.path, f"truncated pickle: line at byte {self.pos} never ends")
        line = self.data[self.pos : end]
        self.pos = end + 1
        return line

    def _u(self, n: int, fmt: str) -> int:
        value: int = struct.unpack(fmt, self._read(n))[0]
        return value

    # -- stack --------------------------------------------------------------------------------
    def _push(self, value: Any) -> None:
        self._count()
        self.stack.append(value)

    def _pop(self) -> Any:
        if not self.stack:
            raise self.error("stack underflow")
        return self.stack.pop()

    def _top(self) -> Any:
        if not self.stack:
            raise self.error("stack underflow")
        return self.stack[-1]

    def _mark(self) -> None:
        if len(self.metastack) >= self.limits.max_depth:
            raise LimitExceeded(
                self.path, "max_depth", self.limits.max_depth, "the pickle nests too deeply"
            )
        self.metastack.append(self.stack)
        self.stack = []

    def _pop_mark(self) -> list[Any]:
        if not self.metastack:
            raise self.error("no mark to pop")
        items = self.stack
        self.stack = self.metastack.pop()
        return items

    def _memo_put(self, index: int) -> None:
        if index not in self.memo and len(self.memo) >= self.limits.max_memo:
            raise LimitExceeded(
                self.path,
                "max_memo",
                self.limits.max_memo,
                "the pickle stores too many memo entries",
            )
        self.memo[index] = self._top()

    def _memo_get(self, index: int) -> None:
        try:
            value = self.memo[index]
        except KeyError:
            raise self.error(f"memo entry {index} was never stored") from None
        self._push(value)

    # -- calls --------------------------------------------------------------------------------
    def global_(self, module: str, name: str) -> Any:
        """Resolve a global through the allowlist, recording that it was used."""
        value = self.resolve(self, module, name)
        dotted = global_name(module, name)
        self.globals_seen[dotted] = self.globals_seen.get(dotted, False) or not isinstance(
            value, GlobalRef
        )
        return value

    def call(self, func: Any, args: Any, via: str = "call") -> Any:
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
        if isinstance(func, TypeRef) and func.name in _PARAMETER_TYPES:
            if via != "new":
                self.deviate(
                    "torch.nn.Parameter called by REDUCE (torch.save writes a Parameter "
                    "with _rebuild_parameter)"
                )
            return _new_parameter(self, args)
        if isinstance(func, GlobalRef):
            return Opaque(func.name, via, args)
        if isinstance(func, Opaque):
            # Calling a result again and again: the name stops growing (it would grow by five
            # characters per call, quadratic in all).
            name = func.name if len(func.name) > _MAX_NAME else f"{func.name}(...)"
            return Opaque(name, via, args)
        called = getattr(func, "name", None)
        if isinstance(called, str):  # an allowlisted type used as a constructor we do not model
            return Opaque(called, via, args)
        raise self.error(f"the pickle calls a {type(func).__name__} value")

    def build(self, obj: Any, state: Any) -> None:
        """Apply BUILD state to a stand-in object."""
        if isinstance(obj, TensorRef) and obj.storage is not None and obj.kind == "dense":
            if obj.subclass is None:
                _build_plain_tensor(self, state)
            _build_tensor(self, obj, state)
        elif isinstance(obj, (Opaque, TensorRef)):
            obj.state = state
        elif isinstance(obj, NdArrayRef):
            _build_ndarray(self, obj, state)
        elif isinstance(obj, NumpyDtype):
            if isinstance(state, tuple) and len(state) > 1 and isinstance(state[1], str):
                obj.byteorder = state[1]
                obj.built = True
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
        while True:
            self.ops += 1
            if self.ops > max_ops:
                raise LimitExceeded(
                    self.path, "max_ops", max_ops, "the pickle runs too many opcodes"
                )
            if self.pos >= len(data):
                self.ran_out = True
                raise DumpError(
                    self.path, f"truncated pickle: no STOP opcode before byte {self.pos}"
                )
            self._op_pos = self.pos
            op = data[self.pos]
            self.pos += 1
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
                if not self.stack or self.metastack:
                    raise self.error("STOP with an empty stack or an open mark")
                for offset, hooks in self.hooks_given:
                    if hooks and self.deviation is None:
                        what = "backward hooks filled after the tensor was rebuilt with them"
                        self.deviation = (f"byte {offset}", what, True)
                return self.stack.pop()


#: dtypes that can require gradients (torch: floating point and complex).
_GRAD_DTYPES = frozenset(
    {
        "float16",
        "bfloat16",
        "float32",
        "float64",
        "complex32",
        "complex64",
        "complex128",
        "float8_e4m3fn",
        "float8_e5m2",
        "float8_e4m3fnuz",
        "float8_e5m2fnuz",
        "float8_e8m0fnu",
    }
)


def set_requires_grad(m: Machine, tensor: TensorRef, value: Any, by: str) -> None:
    """Set ``tensor.requires_grad`` to ``value`` as torch's rebuild ``by`` does (torch 2.x).

    torch takes only a bool there (``tensor.requires_grad = value`` raises "requires_grad must
    be a bool"; ``Parameter``'s ``_make_subclass`` and ``empty_strided`` refuse any other type)
    and lets only floating point and complex tensors require gradients. Either way torch.load
    fails, and the file is refused with torch's reason rather than read with a guess.
    """
    from ppaux.errors import TorchRefuses

    if not isinstance(value, bool):
        raise TorchRefuses(
            m.path,
            f"torch.load refuses the file: {by} sets a tensor's requires_grad to a "
            f"value of type {type(value).__name__} (torch takes a bool)",
        )
    if value and tensor.dtype not in _GRAD_DTYPES:
        raise TorchRefuses(
            m.path,
            f"torch.load refuses the file: {by} makes a {tensor.dtype} tensor require "
            "gradients (only floating point and complex tensors can)",
        )
    tensor.requires_grad = value


def _build_plain_tensor(m: Machine, state: Any) -> None:
    """BUILD on a plain tensor, as torch's default (weights-only) loader runs it: torch 2.13's
    ``_weights_only_unpickler`` calls ``tensor.set_(*state)``, which replaces the tensor's
    storage and shape (an empty state makes it an empty tensor) or refuses arguments that are
    not a storage or tensor. torch.save never writes BUILD on a tensor (its reduction carries
    no state), so the file is refused, with torch's reason where set_ refuses."""
    from ppaux.errors import ReadMismatch, TorchRefuses

    if not isinstance(state, (tuple, list, dict, str, bytes)):
        raise TorchRefuses(
            m.path,
            f"torch.load refuses the file: BUILD on a tensor with a {type(state).__name__} "
            "state (torch's weights-only loader calls set_(*state))",
        )
    items = list(state)
    if items and not isinstance(items[0], (StorageRef, TensorRef)):
        raise TorchRefuses(
            m.path,
            "torch.load refuses the file: BUILD on a tensor calls set_(*state) with a "
            f"{type(items[0]).__name__} first (set_ takes a storage or a tensor)",
        )
    raise ReadMismatch(
        m.path,
        "BUILD on a tensor (torch's weights-only loader calls set_(*state), which replaces "
        "the tensor's storage and shape; torch.save never writes it): not modelled",
    )


def _build_tensor(m: Machine, tensor: TensorRef, state: Any) -> None:
    """BUILD on a Parameter (a plain tensor is refused first by :func:`_build_plain_tensor`),
    as torch's loader calls ``Tensor.__setstate__`` (torch 2.13): a state of 3
    items sets requires_grad and the backward hooks (a no-op for hooks None or empty); 4 items
    call ``set_`` and 5 replace the data, which ppaux does not model (refused, PP202); any
    other state makes torch fail (refused, PP117)."""
    from ppaux.errors import ReadMismatch, TorchRefuses

    if not isinstance(state, (tuple, list, dict, str, bytes)):
        raise TorchRefuses(
            m.path,
            f"torch.load refuses the file: BUILD on a tensor with a {type(state).__name__} "
            "state (Tensor.__setstate__ takes its length)",
        )
    if len(state) in (4, 5):
        raise ReadMismatch(
            m.path,
            f"BUILD on a tensor with a {len(state)}-item state (Tensor.__setstate__ "
            f"{'calls set_' if len(state) == 4 else 'replaces its data'}): not modelled",
        )
    if len(state) != 3 or isinstance(state, (dict, str, bytes)):
        raise TorchRefuses(
            m.path,
            f"torch.load refuses the file: BUILD on a tensor with a state of {len(state)} "
            "items (Tensor.__setstate__ unpacks 3)",
        )
    requires_grad, _, hooks = state
    set_requires_grad(m, tensor, requires_grad, "BUILD")
    if hooks is not None and not (isinstance(hooks, dict) and not hooks):
        raise ReadMismatch(
            m.path, "BUILD gives a tensor backward hooks: not modelled (torch keeps them)"
        )


def _build_ndarray(m: Machine, arr: NdArrayRef, state: Any) -> None:
    # numpy's __setstate__ tuple: (version, shape, dtype, is_fortran, data), version 0 or 1, or
    # the same without the version (numpy/_core/src/multiarray/methods.c, array_setstate).
    if not isinstance(state, tuple) or len(state) not in (4, 5):
        raise m.error("numpy array state is not numpy's")
    offset = 1 if len(state) == 5 else 0
    shape, dtype, fortran = state[offset], state[offset + 1], state[offset + 2]
    data = state[offset + 3]
    arr.problem = _ndarray_refusal(state, offset)
    if isinstance(shape, tuple) and is_shape(shape, m.limits.max_dims):
        arr.shape = shape
    if isinstance(dtype, NumpyDtype):
        arr.dtype = dtype.name
        arr.descr = dtype
    arr.fortran = bool(fortran) if isinstance(fortran, (bool, int)) else False
    if isinstance(data, (bytes, bytearray)):
        arr.raw = bytes(data)  # the array's bytes; an object array has a list
    elif isinstance(data, str) and max(data, default="\0") <= "\xff":
        arr.raw = data.encode("latin-1")  # numpy reads a str as its Latin-1 bytes


def _ndarray_refusal(state: tuple[Any, ...], offset: int) -> str | None:
    """Why numpy's ndarray.__setstate__ refuses ``state`` (as numpy 2.x parses it), or None."""
    if offset:
        version = state[0]
        if not isinstance(version, int) or version not in (0, 1):
            return f"its state version is {shown(repr(version), 40)}; numpy reads only 0 and 1"
    shape, dtype, fortran, data = state[offset : offset + 4]
    if not isinstance(shape, tuple) or not all(type(n) is int and n >= 0 for n in shape):
        return f"its shape {shown(repr(shape), 60)} is not a tuple of sizes; numpy refuses it"
    if not isinstance(dtype, NumpyDtype):
        return "its dtype is not a numpy dtype; numpy refuses it"
    if not isinstance(fortran, int):
        return "its is_fortran flag is not an int; numpy refuses it"
    if isinstance(data, bytearray):
        return "its data is a bytearray, not the bytes numpy reads; numpy refuses it"
    if isinstance(data, str) and max(data, default="\0") > "\xff":
        return "its data is a str past Latin-1; numpy refuses it"
    return None


# -- opcode handlers: each returns True only for STOP --------------------------------------------


def _decode_str(m: Machine, raw: bytes) -> str:
    # The C unpickler decodes BINUNICODE with 'surrogatepass': a lone surrogate stays in the
    # string (and two keys that differ only there stay two keys); reports escape it.
    try:
        return raw.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as exc:
        raise m.error(f"string is not UTF-8 ({exc.reason})") from None


def _decode_bytes_str(m: Machine, raw: bytes) -> str:
    # STRING, BINSTRING and SHORT_BINSTRING hold bytes that the unpickler decodes with its
    # encoding: torch.load passes encoding='utf-8' (errors 'strict').
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise m.error(
            f"a Python 2 string is not UTF-8 ({exc.reason}); torch.load's unpickler refuses it"
        ) from None


def _c_unpickled(m: Machine, opcode: bytes, line: bytes) -> Any:
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


def _op_proto(m: Machine) -> None:
    proto = m._read(1)[0]
    if proto > 5:  # torch's default reader reads on; its full unpickler refuses
        m.deviate(past_protocols(proto))
    m.protocol = proto


def _op_frame(m: Machine) -> None:
    m._read(8)  # frames only group opcodes for buffering; the data is read as it comes


def _op_stop(m: Machine) -> bool:
    return True


def _op_mark(m: Machine) -> None:
    m._mark()


def _op_pop(m: Machine) -> None:
    if m.stack:
        m.stack.pop()
    else:
        m._pop_mark()


def _op_pop_mark(m: Machine) -> None:
    m._pop_mark()


def _op_dup(m: Machine) -> None:
    m._push(m._top())


def _op_none(m: Machine) -> None:
    m._push(None)


def _op_true(m: Machine) -> None:
    m._push(True)


def _op_false(m: Machine) -> None:
    m._push(False)


def _op_int(m: Machine) -> None:
    # '00' and '01' are False and True; otherwise C's strtol, base 0, then int() for a number
    # past a C long: the unpickler itself parses the line.
    m._push(_c_unpickled(m, b"I", m._readline()))


def _op_long(m: Machine) -> None:
    m._push(_c_unpickled(m, b"L", m._readline()))


def _op_binint(m: Machine) -> None:
    m._push(m._u(4, "<i"))


def _op_binint1(m: Machine) -> None:
    m._push(m._read(1)[0])


def _op_binint2(m: Machine) -> None:
    m._push(m._u(2, "<H"))


def _op_long1(m: Machine) -> None:
    n = m._read(1)[0]
    m._push(int.from_bytes(m._read(n), "little", signed=True))


def _op_long4(m: Machine) -> None:
    n = m._u(4, "<i")
    if n < 0:
        raise m.error("LONG4 with a negative length")
    m._push(int.from_bytes(m._read(n), "little", signed=True))


def _op_float(m: Machine) -> None:
    # C's strtod as the unpickler calls it (no underscores, no trailing junk).
    m._push(_c_unpickled(m, b"F", m._readline()))


def _op_binfloat(m: Machine) -> None:
    m._push(m._u(8, ">d"))


def _op_string(m: Machine) -> None:
    m._push(_c_unpickled(m, b"S", m._readline()))


def _op_binstring(m: Machine) -> None:
    n = m._u(4, "<i")
    if n < 0:
        raise m.error("BINSTRING with a negative length")
    m._push(_decode_bytes_str(m, m._read(n)))


def _op_short_binstring(m: Machine) -> None:
    m._push(_decode_bytes_str(m, m._read(m._read(1)[0])))


def _op_unicode(m: Machine) -> None:
    m._push(_c_unpickled(m, b"V", m._readline()))


def _op_binunicode(m: Machine) -> None:
    m._push(_decode_str(m, m._read(m._u(4, "<I"))))


def _op_short_binunicode(m: Machine) -> None:
    m._push(_decode_str(m, m._read(m._read(1)[0])))


def _op_binunicode8(m: Machine) -> None:
    m._push(_decode_str(m, m._read(m._u(8, "<Q"))))


def _op_binbytes(m: Machine) -> None:
    m._push(bytes(m._read(m._u(4, "<I"))))


def _op_short_binbytes(m: Machine) -> None:
    m._push(bytes(m._read(m._read(1)[0])))


def _op_binbytes8(m: Machine) -> None:
    m._push(bytes(m._read(m._u(8, "<Q"))))


def _op_bytearray8(m: Machine) -> None:
    m._push(bytearray(m._read(m._u(8, "<Q"))))


def _op_buffer(m: Machine) -> None:
    raise m.error("the pickle expects out-of-band buffers, which a file cannot carry")


def _op_empty_list(m: Machine) -> None:
    m._push([])


def _op_empty_tuple(m: Machine) -> None:
    m._push(())


def _op_empty_dict(m: Machine) -> None:
    m._push({})


def _op_empty_set(m: Machine) -> None:
    m._push(set())


def _op_list(m: Machine) -> None:
    m._push(m._pop_mark())


def _op_tuple(m: Machine) -> None:
    m._push(tuple(m._pop_mark()))


def _tuple_n(n: int) -> Callable[[Machine], None]:
    def op(m: Machine) -> None:
        if len(m.stack) < n:
            raise m.error("stack underflow")
        values = tuple(m.stack[-n:])
        del m.stack[-n:]
        m._push(values)

    return op


def _setitem(m: Machine, target: Any, key: Any, value: Any) -> None:
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


def _op_dict(m: Machine) -> None:
    items = m._pop_mark()
    if len(items) % 2:
        raise m.error("DICT with an odd number of items")
    out: dict[str, Any] = {}
    for i in range(0, len(items), 2):
        _setitem(m, out, items[i], items[i + 1])
    m._push(out)


def _op_setitem(m: Machine) -> None:
    value = m._pop()
    key = m._pop()
    _setitem(m, m._top(), key, value)


def _op_setitems(m: Machine) -> None:
    items = m._pop_mark()
    if len(items) % 2:
        raise m.error("SETITEMS with an odd number of items")
    target = m._top()
    for i in range(0, len(items), 2):
        _setitem(m, target, items[i], items[i + 1])


def _append(m: Machine, target: Any, values: list[Any]) -> None:
    if isinstance(target, list):
        target.extend(values)
    elif isinstance(target, Opaque):
        target.appended.extend(values)
    else:
        raise m.error(f"APPEND on a {type(target).__name__} value")


def _op_append(m: Machine) -> None:
    value = m._pop()
    _append(m, m._top(), [value])


def _op_appends(m: Machine) -> None:
    values = m._pop_mark()
    _append(m, m._top(), values)


def _op_additems(m: Machine) -> None:
    values = m._pop_mark()
    target = m._top()
    if isinstance(target, Opaque):
        target.appended.extend(values)
        return
    if not isinstance(target, set):
        raise m.error(f"ADDITEMS on a {type(target).__name__} value")
    for value in values:
        m.check_key(target, value)
    try:
        target.update(values)
    except TypeError:
        raise m.error("set item is unhashable") from None


def _op_frozenset(m: Machine) -> None:
    items = m._pop_mark()
    token = object()  # stands for the frozenset being built
    for item in items:
        m.check_key(token, item)
    try:
        m._push(frozenset(items))
    except TypeError:
        raise m.error("frozenset item is unhashable") from None


def _op_global(m: Machine) -> None:
    module = _decode_str(m, m._readline())
    name = _decode_str(m, m._readline())
    m._push(m.global_(module, name))


def _op_stack_global(m: Machine) -> None:
    name = m._pop()
    module = m._pop()
    if not isinstance(module, str) or not isinstance(name, str):
        raise m.error("STACK_GLOBAL needs two strings")
    m._push(m.global_(module, name))


def _op_ext(n: int, fmt: str) -> Callable[[Machine], None]:
    def op(m: Machine) -> None:
        code = m._u(n, fmt)
        raise m.error(
            f"extension code {code} names a global through copyreg's registry, "
            "which no file can be trusted to use"
        )

    return op


def _op_reduce(m: Machine) -> None:
    args = m._pop()
    func = m._pop()
    result = m.call(func, args)
    if args == () and isinstance(func, Call) and func.name == "collections.OrderedDict":
        m.torch_hooks[id(result)] = result  # as torch.save writes a tensor's backward hooks
    m._push(result)


#: Names of torch.nn.Parameter, which NEWOBJ may create: Parameter.__new__(cls, data,
#: requires_grad=True) makes a tensor.
_PARAMETER_TYPES = {"torch.nn.parameter.Parameter", "torch.nn.Parameter"}


def _new_parameter(m: Machine, args: tuple[Any, ...]) -> TensorRef:
    if not args or not isinstance(args[0], TensorRef) or len(args) > 2:
        raise m.error("torch.nn.Parameter created from something that is not a tensor")
    tensor = args[0]
    tensor.subclass = "torch.nn.parameter.Parameter"
    set_requires_grad(m, tensor, args[1] if len(args) == 2 else True, "torch.nn.Parameter")
    return tensor


def _op_newobj(m: Machine) -> None:
    args = m._pop()
    cls = m._pop()
    m._push(m.call(cls, args, "new"))


def _op_newobj_ex(m: Machine) -> None:
    kwargs = m._pop()
    args = m._pop()
    cls = m._pop()
    result = m.call(cls, args, "new")
    if isinstance(result, Opaque) and kwargs:
        result.args = (*result.args, kwargs)
    m._push(result)


def _op_inst(m: Machine) -> None:
    module = _decode_str(m, m._readline())
    name = _decode_str(m, m._readline())
    args = tuple(m._pop_mark())
    m._push(m.call(m.global_(module, name), args, "object"))


def _op_obj(m: Machine) -> None:
    items = m._pop_mark()
    if not items:
        raise m.error("OBJ without a class")
    m._push(m.call(items[0], tuple(items[1:]), "object"))


def _op_build(m: Machine) -> None:
    state = m._pop()
    m.build(m._top(), state)


def _op_persid(m: Machine) -> None:
    pid = m._readline().decode("ascii", "replace")
    _persistent(m, pid)


def _op_binpersid(m: Machine) -> None:
    _persistent(m, m._pop())


def _persistent(m: Machine, pid: Any) -> None:
    if m.persistent_load is None:
        raise m.error("persistent id in a pickle that has no storage records")
    m._push(m.persistent_load(m, pid))


def _op_get(m: Machine) -> None:
    line = m._readline()
    try:
        m._memo_get(int(line))
    except ValueError:
        raise m.error("GET argument is not a number") from None


def _op_binget(m: Machine) -> None:
    m._memo_get(m._read(1)[0])


def _op_long_binget(m: Machine) -> None:
    m._memo_get(m._u(4, "<I"))


def _op_put(m: Machine) -> None:
    line = m._readline()
    try:
        m._memo_put(int(line))
    except ValueError:
        raise m.error("PUT argument is not a number") from None


def _op_binput(m: Machine) -> None:
    m._memo_put(m._read(1)[0])


def _op_long_binput(m: Machine) -> None:
    m._memo_put(m._u(4, "<I"))


def _op_memoize(m: Machine) -> None:
    m._memo_put(len(m.memo))


_DISPATCH: dict[int, Callable[[Machine], Any]] = {
    ord(k): v
    for k, v in {
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
        "P": _op_persid,
        "Q": _op_binpersid,
        "R": _op_reduce,
        "S": _op_string,
        "T": _op_binstring,
        "U": _op_short_binstring,
        "V": _op_unicode,
        "X": _op_binunicode,
        "a": _op_append,
        "b": _op_build,
        "c": _op_global,
        "d": _op_dict,
        "}": _op_empty_dict,
        "e": _op_appends,
        "g": _op_get,
        "h": _op_binget,
        "i": _op_inst,
        "j": _op_long_binget,
        "l": _op_list,
        "]": _op_empty_list,
        "o": _op_obj,
        "p": _op_put,
        "q": _op_binput,
        "r": _op_long_binput,
        "s": _op_setitem,
        "t": _op_tuple,
        ")": _op_empty_tuple,
        "u": _op_setitems,
        "G": _op_binfloat,
        "\x80": _op_proto,
        "\x81": _op_newobj,
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
        "\x92": _op_newobj_ex,
        "\x93": _op_stack_global,
        "\x94": _op_memoize,
        "\x95": _op_frame,
        "\x96": _op_bytearray8,
        "\x97": _op_buffer,
        "\x98": _op_buffer,
    }.items()
}
