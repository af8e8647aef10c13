"""What torch's weights-only unpickler allows, as data: its opcodes, blocked modules, Python 2
renames and allowed globals (``_get_allowed_globals()`` as torch 2.13.0 evaluates it, and what
torch 2.14 adds). :mod:`ppaux.dump.weights_only` walks a pickle against it.
"""

from __future__ import annotations

__all__ = [
    "ALLOWED_FROM_2_14",
    "ALLOWED_GLOBALS",
    "BLOCKED_MODULES",
    "BUILDABLE",
    "IMPORT_MAPPING",
    "NAME_MAPPING",
    "OPCODES",
    "TENSOR_MAKERS",
]

#: The opcodes the weights-only unpickler runs (any other: "Unsupported operand N"). It has no
#: protocol 4 opcode (FRAME, MEMOIZE, STACK_GLOBAL, SHORT_BINUNICODE), no BINBYTES, no LONG4,
#: no POP, POP_MARK or DUP, no text opcode of protocols 0 and 1.
OPCODES: dict[int, str] = {
    0x63: "GLOBAL",
    0x81: "NEWOBJ",
    0x52: "REDUCE",
    0x62: "BUILD",
    0x61: "APPEND",
    0x65: "APPENDS",
    0x73: "SETITEM",
    0x75: "SETITEMS",
    0x28: "MARK",
    0x74: "TUPLE",
    0x85: "TUPLE1",
    0x86: "TUPLE2",
    0x87: "TUPLE3",
    0x4E: "NONE",
    0x89: "NEWFALSE",
    0x88: "NEWTRUE",
    0x29: "EMPTY_TUPLE",
    0x5D: "EMPTY_LIST",
    0x7D: "EMPTY_DICT",
    0x8F: "EMPTY_SET",
    0x4A: "BININT",
    0x4B: "BININT1",
    0x4D: "BININT2",
    0x47: "BINFLOAT",
    0x58: "BINUNICODE",
    0x55: "SHORT_BINSTRING",
    0x51: "BINPERSID",
    0x68: "BINGET",
    0x6A: "LONG_BINGET",
    0x71: "BINPUT",
    0x72: "LONG_BINPUT",
    0x8A: "LONG1",
    0x80: "PROTO",
    0x2E: "STOP",
}

#: Modules never resolved, whatever a user allowlists.
BLOCKED_MODULES = frozenset({"sys", "os", "posix", "nt"})

#: torch/_utils.py's module renames, applied when the (module, name) pair has no NAME_MAPPING.
IMPORT_MAPPING: dict[str, str] = {
    "__builtin__": "builtins",
    "copy_reg": "copyreg",
    "Queue": "queue",
    "repr": "reprlib",
    "_abcoll": "collections.abc",
    "UserDict": "collections",
    "UserList": "collections",
    "UserString": "collections",
    "whichdb": "dbm",
    "StringIO": "io",
    "cStringIO": "io",
}

#: torch/_utils.py's (module, name) renames, applied first.
NAME_MAPPING: dict[tuple[str, str], tuple[str, str]] = {
    ("__builtin__", "xrange"): ("builtins", "range"),
    ("__builtin__", "reduce"): ("functools", "reduce"),
    ("__builtin__", "intern"): ("sys", "intern"),
    ("__builtin__", "unichr"): ("builtins", "chr"),
    ("__builtin__", "unicode"): ("builtins", "str"),
    ("__builtin__", "long"): ("builtins", "int"),
    ("itertools", "izip"): ("builtins", "zip"),
    ("itertools", "imap"): ("builtins", "map"),
    ("itertools", "ifilter"): ("builtins", "filter"),
    ("itertools", "ifilterfalse"): ("itertools", "filterfalse"),
    ("itertools", "izip_longest"): ("itertools", "zip_longest"),
    ("UserDict", "IterableUserDict"): ("collections", "UserDict"),
    ("UserList", "UserList"): ("collections", "UserList"),
    ("UserString", "UserString"): ("collections", "UserString"),
    ("__builtin__", "basestring"): ("builtins", "str"),
    ("exceptions", "StandardError"): ("builtins", "Exception"),
    ("UserDict", "UserDict"): ("collections", "UserDict"),
}

_TENSOR_KINDS = [
    "BFloat16",
    "Bool",
    "Byte",
    "Char",
    "Double",
    "Float",
    "Half",
    "Int",
    "Long",
    "Short",
]
_SPARSE_KINDS = [k for k in _TENSOR_KINDS if k != "Bool"]
_STORAGE_KINDS = [*_TENSOR_KINDS, "ComplexDouble", "ComplexFloat"]
_QSTORAGE_KINDS = ["QInt32", "QInt8", "QUInt2x4", "QUInt4x2", "QUInt8"]
_REBUILDS = [
    "_rebuild_device_tensor_from_cpu_tensor",
    "_rebuild_device_tensor_from_numpy",
    "_rebuild_meta_tensor_no_storage",
    "_rebuild_nested_tensor",
    "_rebuild_parameter",
    "_rebuild_parameter_with_state",
    "_rebuild_qtensor",
    "_rebuild_sparse_tensor",
    "_rebuild_tensor",
    "_rebuild_tensor_v2",
    "_rebuild_tensor_v3",
    "_rebuild_wrapper_subclass",
]
_DTYPES = [
    "bfloat16",
    "bits16",
    "bits1x8",
    "bits2x4",
    "bits4x2",
    "bits8",
    "bool",
    "complex128",
    "complex32",
    "complex64",
    "float16",
    "float32",
    "float4_e2m1fn_x2",
    "float64",
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
    "qint32",
    "qint8",
    "quint2x4",
    "quint4x2",
    "quint8",
    *(f"int{n}" for n in (1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 64)),
    *(f"uint{n}" for n in (1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 64)),
]
_QSCHEMES = [
    "per_channel_affine",
    "per_channel_affine_float_qparams",
    "per_channel_symmetric",
    "per_tensor_affine",
    "per_tensor_symmetric",
]

#: The classes whose instances BUILD may set state into (the explicit Tensor, Parameter and
#: OrderedDict, and ``type(inst) in _get_allowed_globals().values()``).
BUILDABLE = frozenset(
    {
        "torch.Tensor",
        "torch.nn.parameter.Parameter",
        "collections.OrderedDict",
        "collections.Counter",
        "torch.Size",
        "torch.device",
        "builtins.bytearray",
        "builtins.set",
        "builtins.complex",
        "torch.storage.TypedStorage",
        "torch.storage.UntypedStorage",
    }
)

#: ``_get_allowed_globals()`` of torch 2.13.0, by the dotted name GLOBAL resolves (144 names).
ALLOWED_GLOBALS = frozenset(
    {
        "_codecs.encode",
        "builtins.bytearray",
        "builtins.complex",
        "builtins.set",
        "collections.Counter",
        "collections.OrderedDict",
        "torch.Size",
        "torch.Tensor",
        "torch.device",
        "torch.nn.parameter.Parameter",
        "torch.serialization._get_layout",
        "torch.storage.TypedStorage",
        "torch.storage.UntypedStorage",
        "torch._tensor._rebuild_from_type_v2",
        *(f"torch._utils.{name}" for name in _REBUILDS),
        *(f"torch.{name}" for name in _DTYPES + _QSCHEMES),
        *(f"{m}.{k}Tensor" for m in ("torch", "torch.cuda") for k in _TENSOR_KINDS),
        *(f"{m}.{k}Tensor" for m in ("torch.sparse", "torch.cuda.sparse") for k in _SPARSE_KINDS),
        *(f"torch.{k}Storage" for k in _STORAGE_KINDS + _QSTORAGE_KINDS),
        *(f"torch.cuda.{k}Storage" for k in _STORAGE_KINDS),
    }
)

#: Globals torch 2.14 allows and 2.13 refuses: dtypes new in 2.14 (``torch.storage._new_dtypes()``
#: of 2.14.1). A file holding one is refused by torch 2.13 and earlier, and PP119 says so, naming
#: the release that reads it.
ALLOWED_FROM_2_14 = frozenset({"torch.bcomplex32"})

#: The allowed globals a REDUCE turns into a tensor.
TENSOR_MAKERS = frozenset(
    {f"torch._utils.{name}" for name in _REBUILDS if name != "_rebuild_parameter"}
    | {name for name in ALLOWED_GLOBALS if name.endswith("Tensor")}
)
