"""The globals the safe reader understands, and the stand-ins it builds for them.

Only torch's tensor rebuild functions (:mod:`ppaux.dump.tensor_rebuilds`), storage classes,
dtypes, layouts and devices, numpy's array reconstruction, ``collections.OrderedDict`` and a few
builtin containers are interpreted. Each is re-implemented as a function that *describes* the
result (a :class:`~ppaux.dump.model.TensorRef` and the like). Any other name resolves to a
:class:`~ppaux.dump.model.GlobalRef`: recorded, never imported. Argument layouts follow
``torch/_utils.py`` and ``torch/serialization.py`` of torch 2.x.
"""

from __future__ import annotations

import re
from typing import Any

from ppaux.dump.build_state import is_shape
from ppaux.dump.jagged import JAGGED_TYPE, new_dim_range
from ppaux.dump.model import (
    DTYPE_ITEMSIZE,
    STORAGE_DTYPES,
    DtypeRef,
    EmptySize,
    GlobalRef,
    NdArrayRef,
    NumpyDtype,
    NumpyScalar,
    Opaque,
    StorageType,
    TorchValue,
    TypeRef,
)
from ppaux.dump.numpy_dtype_refusals import spec_verdict
from ppaux.dump.numpy_subtypes import reconstruct_subtype
from ppaux.dump.numpy_writer import (
    bool_bytes_deviation,
    buffer_refusal,
    dtype_args_deviation,
    fortran_deviation,
    reconstruct_deviation,
    reconstruct_shape_refusal,
)
from ppaux.dump.pickle_vm import Call, Machine, global_name
from ppaux.dump.tensor_rebuilds import (
    DTYPE_ALIASES,
    LAYOUTS,
    QSCHEMES,
    TENSOR_CALLS,
    as_shape,
    name_of,
)
from ppaux.text import cut

__all__ = ["ALLOWED_NAMES", "resolve"]

_DEVICE_TYPES = (
    "cpu|cuda|mps|meta|xpu|hpu|mtia|privateuseone|ipu|xla|lazy|vulkan|mkldnn|opengl|opencl|"
    "ideep|hip|ve|fpga|maia"
)
_DEVICE_STRING = re.compile(rf"(?:{_DEVICE_TYPES})(?::(?:0|[1-9][0-9]*))?")
_DEVICE_TYPE = re.compile(_DEVICE_TYPES)


def _torch_device(m: Machine, args: tuple[Any, ...]) -> TorchValue:
    # torch.device parses its string in C++: a type it knows, then ':N' without a leading zero;
    # with an explicit index, a bare type and an index from 0 to 2**63 - 1. Anything else makes
    # torch.load fail, so the file is refused with torch's reason.
    from ppaux.errors import TorchRefuses

    if len(args) == 1 and isinstance(args[0], str):
        if _DEVICE_STRING.fullmatch(args[0]) is None:
            raise TorchRefuses(
                m.path,
                f"torch.load refuses the file: invalid device string {cut(args[0], 60)} "
                "in torch.device",
            )
        return TorchValue("torch.device", args[0])
    if len(args) == 2 and isinstance(args[0], str) and type(args[1]) is int:
        if _DEVICE_TYPE.fullmatch(args[0]) is None or not 0 <= args[1] < 2**63:
            raise TorchRefuses(
                m.path,
                f"torch.load refuses the file: invalid device {cut(args[0], 60)}, "
                f"index {args[1] if abs(args[1]) < 10**20 else 'out of range'} in torch.device",
            )
        return TorchValue("torch.device", f"{args[0]}:{args[1]}")
    raise m.error("torch.device arguments are not a device")


def _torch_size(m: Machine, args: tuple[Any, ...]) -> tuple[Any, ...]:
    size = tuple([*as_shape(m, args[0] if args else (), "size")])  # a new tuple, unless ()
    if not size:
        size = EmptySize()  # not the shared (): torch.Size(()) as a scalar's size is told apart
    m.torch_sizes[id(size)] = size
    return size


def _ordered_dict(m: Machine, args: tuple[Any, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    m.ordered_dicts.add(id(out))
    if args:
        if not isinstance(args[0], (list, tuple, dict)):
            raise m.error("OrderedDict argument is not a list of pairs")
        m.charge_items(len(args[0]))
        for pair in args[0]:
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise m.error("OrderedDict item is not a pair")
            m.check_key(out, pair[0])
            out[pair[0]] = pair[1]
    return out


def _container(kind: type) -> Any:
    def build(m: Machine, args: tuple[Any, ...]) -> Any:
        if not args:
            return kind()
        if kind is complex:
            if not all(isinstance(a, (int, float)) for a in args):
                raise m.error("complex arguments are not numbers")
            return complex(*args)
        source = args[0]
        if kind in (bytes, bytearray) and isinstance(source, str) and len(args) == 2:
            source = _encoded(m, kind, source, args[1])  # bytearray(text, 'latin1'), as Python
            # CPython's pickler writes bytearray(_codecs.encode(text, 'latin1')), and bytes as
            # the _codecs.encode alone: never a str and its encoding given to the class.
            m.deviate(f"{kind.__name__}(text, {cut(repr(args[1][:80]))})", False)
        if not isinstance(source, (list, tuple, set, frozenset, str, bytes, dict)):
            raise m.error(f"{kind.__name__} argument is not a container")
        # Each call copies its argument, and a memo reference lets a pickle repeat the call
        # for a few bytes: every copy is charged.
        if kind in (set, frozenset):
            m.charge_items(len(source))
            token = object()
            for item in source:
                m.check_key(token, item)
        else:
            m.charge_bytes(len(source))
        built = kind(source)
        if kind in (set, frozenset) and len(built) != len(source):
            m.deviate("a set item repeated, where the pickler writes each item once", False)
        return built

    return build


#: The text encodings ``bytes(text, encoding)`` and ``bytearray(text, encoding)`` are read
#: with, as Python's codec registry names them (any other name is refused, never looked up).
_TEXT_ENCODINGS = {
    "latin1": "latin-1",
    "latin-1": "latin-1",
    "iso-8859-1": "latin-1",
    "iso8859-1": "latin-1",
    "l1": "latin-1",
    "utf-8": "utf-8",
    "utf8": "utf-8",
    "ascii": "ascii",
    "us-ascii": "ascii",
}


def _encoded(m: Machine, kind: type, text: str, encoding: object) -> bytes:
    """``text`` encoded as ``kind(text, encoding)`` encodes it, for the encodings above."""
    name = _text_encoding(m, f"{kind.__name__}(text, ...)", encoding)
    m.charge_bytes(len(text))
    try:
        return text.encode(name)
    except UnicodeEncodeError as exc:
        raise m.error(
            f"{kind.__name__} of a str that {name} cannot encode ({exc.reason})"
        ) from None


def _text_encoding(m: Machine, call: str, encoding: object) -> str:
    """The codec ``encoding`` names among those above. Another name is outside what
    torch.save writes (bytes as ``_codecs.encode(text, 'latin1')``, a bytearray as
    ``bytearray(text, 'latin-1')``): torch.load looks it up and runs that codec, which ppaux
    never does, so the file is not as written, at error (a name that is not a str, which
    Python refuses, is malformed)."""
    if not isinstance(encoding, str):
        raise m.error(f"{call} with an encoding that is a {type(encoding).__name__}, not a str")
    name = _TEXT_ENCODINGS.get(encoding.lower().replace("_", "-"))
    if name is None:
        from ppaux.errors import NotAsWritten

        raise NotAsWritten(
            m.path,
            f"not as torch.save writes it: pickle byte {m.op_pos}: {call} in the encoding "
            f"{cut(repr(encoding[:80]))}, outside what torch.save writes (Latin-1; ppaux "
            "reads Latin-1, UTF-8 and ASCII): torch.load runs that codec, which ppaux does not",
        )
    return name


def _codecs_encode(m: Machine, args: tuple[Any, ...]) -> bytes:
    """Protocol 2 pickles spell bytes as ``_codecs.encode(text, 'latin1')``. Another encoding
    ppaux reads (UTF-8, ASCII, another spelling of Latin-1) is read as Python reads it, not
    as torch.save writes it; any other is refused as :func:`_text_encoding` says. A third
    argument (the codec's error handling) torch.save never writes: torch.load passes it on,
    and what 'ignore' or 'replace' make of the text ppaux does not model, so the file is not
    as written, at error."""
    if len(args) == 3 and isinstance(args[0], str) and isinstance(args[1], str):
        from ppaux.errors import NotAsWritten

        raise NotAsWritten(
            m.path,
            f"not as torch.save writes it: pickle byte {m.op_pos}: _codecs.encode(text, "
            f"{cut(repr(args[1][:80]))}, {cut(repr(args[2])[:80])}), where the pickler writes "
            "two arguments (text, 'latin1'): torch.load passes the third to the codec, which "
            "ppaux does not run",
        )
    text, encoding = args
    if not isinstance(text, str):
        raise m.error("_codecs.encode is allowed only as a latin-1 bytes literal")
    name = _text_encoding(m, "_codecs.encode(text, ...)", encoding)
    if m.protocol >= 3:
        # From protocol 3 the pickler writes bytes as BINBYTES, never through _codecs.
        m.deviate(f"_codecs.encode for bytes in a protocol {m.protocol} pickle", severe=False)
    if encoding != "latin1":
        m.deviate(
            f"_codecs.encode(text, {cut(repr(encoding[:80]))}), where the pickler writes 'latin1'",
            False,
        )
    m.charge_bytes(len(text))
    try:
        return text.encode(name)
    except UnicodeEncodeError as exc:
        raise m.error(f"_codecs.encode of a str that {name} cannot encode ({exc.reason})") from None


def _reconstructor(m: Machine, args: tuple[Any, ...]) -> Opaque:
    cls = args[0]
    return Opaque(name_of(cls), "object")


def _np_reconstruct(m: Machine, args: tuple[Any, ...]) -> NdArrayRef:
    # _reconstruct(subtype, shape, dtype): numpy makes an empty array of subtype, refusing a
    # subtype that is not an ndarray subclass (see ppaux.dump.numpy_subtypes).
    arr = NdArrayRef()
    if args:
        arr.subtype, arr.refusal = reconstruct_subtype(args[0], cut(name_of(args[0]), 80))
        arr.problem = arr.refusal
    if len(args) == 3 and arr.refusal is None:
        # numpy makes an empty array of the shape and of a dtype of the third argument,
        # (0,) and b'b' as numpy writes them.
        arr.refusal = reconstruct_shape_refusal(args[1]) or _reconstruct_dtype(m, args[2])
        arr.problem = arr.refusal
        deviation = reconstruct_deviation(args[1], args[2])
        if deviation is not None:
            m.deviate(deviation, severe=False)
    return arr


def _reconstruct_dtype(m: Machine, spec: object) -> str | None:
    if isinstance(spec, bytes):
        if not spec.isascii():
            return "numpy's _reconstruct is given a dtype of bytes past ASCII (numpy: TypeError)"
        spec = spec.decode("ascii")
    refusal, known = spec_verdict(spec)
    if not known:
        m.deviate(f"numpy's _reconstruct is given the dtype {cut(repr(spec), 40)}, not b'b'")
    return refusal


def _np_frombuffer(m: Machine, args: tuple[Any, ...]) -> NdArrayRef:
    # numpy's protocol-5 form of a contiguous array: _frombuffer(buffer, dtype, shape, order),
    # the buffer (in-band: bytes, or a bytearray for a writable array) read as a flat array of
    # the dtype, then reshaped in that order ('C' rows first, 'F' columns first).
    arr = NdArrayRef()
    if len(args) != 4:
        arr.problem = f"numpy's _frombuffer is given {len(args)} arguments, not 4; numpy refuses it"
        return arr
    buffer, dtype, shape, order = args
    if isinstance(shape, tuple) and is_shape(shape, m.limits.max_dims):
        arr.shape = shape
    else:
        arr.problem = f"its shape {cut(repr(shape), 60)} is not a tuple of sizes; numpy refuses it"
    if isinstance(dtype, NumpyDtype):
        arr.dtype = dtype.name
        arr.descr = dtype
        arr.refusal = arr.refusal or dtype.refusal
        arr.problem = arr.refusal or arr.problem
    else:
        arr.problem = "its dtype is not a numpy dtype; ppaux does not read it"
    if order not in ("C", "F"):
        arr.problem = f"its order {cut(repr(order), 40)} is not 'C' or 'F', as numpy writes"
    arr.fortran = order == "F"
    if isinstance(buffer, (bytes, bytearray)):
        # A memo reference lets a pickle repeat the call for a few bytes: each copy is charged.
        m.charge_bytes(len(buffer))
        arr.raw = bytes(buffer)
    else:
        arr.problem = "its buffer is not bytes; numpy refuses it"
    # numpy reads the buffer as a flat array and reshapes it, refusing another count of items.
    arr.problem = arr.problem or buffer_refusal(arr)
    deviation = fortran_deviation(arr.shape, arr.fortran)
    if deviation is None and arr.raw is not None and arr.descr is not None:
        deviation = bool_bytes_deviation(arr.descr.spec, arr.raw)
    if deviation is not None:
        m.deviate(deviation, severe=False)
    return arr


def _np_dtype(m: Machine, args: tuple[Any, ...]) -> NumpyDtype:
    spec = args[0] if args else "?"
    dtype = NumpyDtype(spec if isinstance(spec, str) else "?")
    dtype.refusal, known = spec_verdict(spec)
    # numpy pickles a dtype of a void subclass (numpy.record) by its class, not a spec.
    if not known and not isinstance(spec, GlobalRef):
        m.deviate(f"numpy.dtype({cut(repr(spec), 40)}): a spec numpy's pickler never writes")
    elif not isinstance(spec, GlobalRef):
        deviation = dtype_args_deviation(args)
        if deviation is not None:
            m.deviate(deviation, severe=False)  # numpy makes the same dtype of either
    return dtype


def _np_scalar(m: Machine, args: tuple[Any, ...]) -> NumpyScalar:
    from ppaux.errors import TorchRefuses

    dtype = args[0] if args else None
    if isinstance(dtype, NumpyDtype) and dtype.refusal is not None:
        raise TorchRefuses(
            m.path, f"torch.load refuses the file: a numpy scalar's dtype: {dtype.refusal}"
        )
    return NumpyScalar(dtype.name if isinstance(dtype, NumpyDtype) else "?")


def _load_from_bytes(m: Machine, args: tuple[Any, ...]) -> Any:
    (payload,) = args
    if not isinstance(payload, (bytes, bytearray)):
        raise m.error("torch.storage._load_from_bytes argument is not bytes")
    from ppaux.dump.legacy import read_inner_storage  # a nested legacy torch.save, parsed safely

    # A memo reference can hand the same stream over again and again: each read is charged.
    m.charge_bytes(len(payload))
    return read_inner_storage(m, bytes(payload))


_CALLS = {
    **TENSOR_CALLS,
    "torch.storage._load_from_bytes": _load_from_bytes,
    "torch.device": _torch_device,
    "torch.Size": _torch_size,
    "collections.OrderedDict": _ordered_dict,
    "builtins.set": _container(set),
    "builtins.frozenset": _container(frozenset),
    "builtins.bytearray": _container(bytearray),
    "builtins.bytes": _container(bytes),
    "builtins.complex": _container(complex),
    "_codecs.encode": _codecs_encode,
    "copyreg._reconstructor": _reconstructor,
    "numpy.core.multiarray._reconstruct": _np_reconstruct,
    "numpy._core.multiarray._reconstruct": _np_reconstruct,
    "numpy.core.numeric._frombuffer": _np_frombuffer,
    "numpy._core.numeric._frombuffer": _np_frombuffer,
    "numpy.dtype": _np_dtype,
    "numpy.core.multiarray.scalar": _np_scalar,
    "numpy._core.multiarray.scalar": _np_scalar,
    "torch._dynamo.decorators._DimRange": new_dim_range,
}

_TYPES = {
    "torch.Tensor",
    "torch._tensor.Tensor",
    "torch.nn.parameter.Parameter",
    "torch.nn.Parameter",
    "numpy.ndarray",
    "builtins.object",
    JAGGED_TYPE,
}

#: Every dotted name the reader interprets; anything else is reported, never imported.
ALLOWED_NAMES = frozenset(
    set(_CALLS)
    | _TYPES
    | {"torch.storage.UntypedStorage"}
    | {f"torch.{n}" for n in STORAGE_DTYPES}
    | {f"torch.cuda.{n}" for n in STORAGE_DTYPES if not n.startswith(("Q", "U"))}
    | {f"torch.{n}" for n in DTYPE_ITEMSIZE}
    | {f"torch.{n}" for n in DTYPE_ALIASES}
    | {f"torch.{n}" for n in LAYOUTS}
    | {f"torch.{n}" for n in QSCHEMES}
)

_PY2_MODULES = {"__builtin__": "builtins", "copy_reg": "copyreg"}


def resolve(m: Machine, module: str, name: str) -> Any:
    """The stand-in for global ``module.name``: an allowed call or value, else a GlobalRef."""
    module = _PY2_MODULES.get(module, module)
    dotted = f"{module}.{name}"
    call = _CALLS.get(dotted)
    if call is not None:
        return Call(dotted, call)
    if dotted in _TYPES:
        return TypeRef(dotted)
    if dotted == "torch.storage.UntypedStorage":  # how new dtypes' byte storages are named
        return StorageType("UntypedStorage", "uint8")
    if module == "torch.cuda" and name in STORAGE_DTYPES and not name.startswith(("Q", "U")):
        # torch.load takes only a storage class's dtype from the persistent id (the location
        # says the device); torch.save 2.x names every storage class torch.<Kind>Storage.
        m.deviate(f"storage class {dotted}, which torch.save names torch.{name}", False)
        return StorageType(name, STORAGE_DTYPES[name])
    if module == "torch":
        if name == "UntypedStorage":
            m.deviate(
                "storage class torch.UntypedStorage, which torch.save names "
                "torch.storage.UntypedStorage"
            )
        if name in STORAGE_DTYPES:
            return StorageType(name, STORAGE_DTYPES[name])
        if name in DTYPE_ITEMSIZE or name in DTYPE_ALIASES:
            return DtypeRef(DTYPE_ALIASES.get(name, name))
        if name in LAYOUTS:
            return TorchValue("torch.layout", dotted)
        if name in QSCHEMES:
            return TorchValue("torch.qscheme", dotted)
    return GlobalRef(global_name(module, name))
