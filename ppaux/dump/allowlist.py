"""The globals the safe reader understands, and the stand-ins it builds for them.

Only torch's tensor rebuild functions, storage classes, dtypes, layouts and devices, numpy's array
reconstruction, ``collections.OrderedDict`` and a few builtin containers are interpreted. Each is
re-implemented here as a function that *describes* the result (a
:class:`~ppaux.dump.model.TensorRef`
and the like). Any other name resolves to a :class:`~ppaux.dump.model.GlobalRef`: recorded, never
imported. Argument layouts follow ``torch/_utils.py`` and ``torch/serialization.py`` of torch 2.x.
"""

from __future__ import annotations

import re
from typing import Any

from ppaux.dump.model import (
    DTYPE_ITEMSIZE,
    STORAGE_DTYPES,
    DtypeRef,
    GlobalRef,
    NdArrayRef,
    NumpyDtype,
    NumpyScalar,
    Opaque,
    StorageRef,
    StorageType,
    TensorRef,
    TorchValue,
    TypeRef,
)
from ppaux.dump.pickle_vm import (
    Call,
    Machine,
    check_state,
    global_name,
    is_shape,
    set_requires_grad,
)
from ppaux.errors import LimitExceeded
from ppaux.text import shown

__all__ = ["ALLOWED_NAMES", "resolve"]

# Aliases torch.<name> -> canonical dtype name.
_DTYPE_ALIASES = {
    "float": "float32",
    "double": "float64",
    "half": "float16",
    "long": "int64",
    "int": "int32",
    "short": "int16",
    "cfloat": "complex64",
    "cdouble": "complex128",
    "chalf": "complex32",
}
_LAYOUTS = {
    "strided",
    "sparse_coo",
    "sparse_csr",
    "sparse_csc",
    "sparse_bsr",
    "sparse_bsc",
    "jagged",
}
_QSCHEMES = {
    "per_tensor_affine",
    "per_channel_affine",
    "per_tensor_symmetric",
    "per_channel_symmetric",
    "per_channel_affine_float_qparams",
}


def _as_shape(m: Machine, value: Any, what: str) -> tuple[int, ...]:
    max_dims = m.limits.max_dims
    if is_shape(value, max_dims):
        return tuple(value)
    if isinstance(value, (tuple, list)) and len(value) > max_dims:
        raise LimitExceeded(
            m.path,
            "max_dims",
            max_dims,
            f"tensor {what} has {len(value)} dimensions (more than {max_dims})",
        )
    raise m.error(f"tensor {what} is not a tuple of integers in [0, 2**63)")


def _dtype_name(m: Machine, value: Any) -> str:
    if isinstance(value, DtypeRef):
        return value.name
    raise m.error("tensor dtype is not a torch dtype")


def _device(value: Any) -> str:
    if isinstance(value, TorchValue):
        return shown(value.name, 200)
    return shown(value, 200) if isinstance(value, str) else _name_of(value)


def _name_of(value: Any) -> str:
    # Never repr() a value from the file: a shared or deep structure makes that explode.
    name = getattr(value, "name", None)
    if isinstance(name, str):
        return name
    return f"<{type(value).__name__}>"


def _storage(m: Machine, value: Any) -> StorageRef:
    if isinstance(value, StorageRef):
        return value
    raise m.error("tensor storage is not a storage record")


def _size_stride(m: Machine, size: Any, stride: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    shape, strides = _as_shape(m, size, "size"), _as_shape(m, stride, "stride")
    if len(shape) != len(strides):
        raise m.error(f"tensor size has {len(shape)} dimensions but its stride {len(strides)}")
    return shape, strides


def _strided(m: Machine, args: tuple[Any, ...], dtype: str | None = None) -> TensorRef:
    storage = _storage(m, args[0])
    offset = args[1]
    if type(offset) is not int or not 0 <= offset < 2**63:
        raise m.error("tensor storage offset is not an integer in [0, 2**63)")
    shape, strides = _size_stride(m, args[2], args[3])
    tensor = TensorRef(
        dtype or storage.dtype,
        shape,
        strides,
        storage.location,
        offset=offset,
        storage=storage,
    )
    m.tensors_built.append(tensor)
    return tensor


def _rebuild_tensor(m: Machine, args: tuple[Any, ...]) -> TensorRef:
    return _strided(m, args[:4])


def _check_hooks(m: Machine, hooks: Any) -> None:
    """torch.save writes a tensor's backward hooks as ``OrderedDict()`` (GLOBAL
    'collections OrderedDict', EMPTY_TUPLE, REDUCE), whatever hooks the tensor has."""
    if id(hooks) not in m.torch_hooks or hooks:
        m.deviate("backward hooks that are not the empty OrderedDict() torch.save writes")


def _check_shape_tuples(m: Machine, args: tuple[Any, ...]) -> None:
    """torch.save writes a tensor's size and stride as tuples."""
    if not isinstance(args[2], tuple) or not isinstance(args[3], tuple):
        m.deviate("a tensor's size or stride that is not the tuple torch.save writes")


def _rebuild_tensor_v2(m: Machine, args: tuple[Any, ...]) -> TensorRef:
    if not 6 <= len(args) <= 7:
        raise TypeError(f"{len(args)} arguments, expected 6 or 7")
    _check_hooks(m, args[5])
    _check_shape_tuples(m, args)
    tensor = _strided(m, args)
    set_requires_grad(m, tensor, args[4], "_rebuild_tensor_v2")
    if len(args) == 7:
        tensor.bits = _view_bits(m, tensor, args[6])
    return tensor


def _rebuild_tensor_v3(m: Machine, args: tuple[Any, ...]) -> TensorRef:
    if not 7 <= len(args) <= 8:
        raise TypeError(f"{len(args)} arguments, expected 7 or 8")
    _check_hooks(m, args[5])
    _check_shape_tuples(m, args)
    tensor = _strided(m, args, _dtype_name(m, args[6]))
    set_requires_grad(m, tensor, args[4], "_rebuild_tensor_v3")
    if len(args) == 8:
        tensor.bits = _view_bits(m, tensor, args[7])
    return tensor


#: Values torch._C._set_tensor_metadata takes for a bit (pybind's bool: None and numbers too).
_BIT_VALUES = (bool, int, float, type(None))


def _view_bits(m: Machine, tensor: TensorRef, metadata: Any) -> tuple[str, ...]:
    """The view bits torch sets from a tensor's saved ``metadata`` (torch 2.x,
    ``torch._utils._rebuild_tensor_v2``): nothing when it is empty or false; otherwise it must
    be a dict of strings to booleans, and a 'conj' key sets the conjugate bit, a 'neg' key the
    negative bit, whatever their values (``torch._C._set_tensor_metadata``). Anything else makes
    torch.load fail, and the reader refuses the file as torch would."""
    if (
        metadata is None
        or metadata is False
        or (isinstance(metadata, (dict, int)) and not metadata)
    ):
        return ()
    if not isinstance(metadata, dict):
        raise m.error("tensor metadata is not a dict; torch.load fails on it")
    if not all(type(k) is str and isinstance(v, _BIT_VALUES) for k, v in metadata.items()):
        raise m.error("tensor metadata is not a dict of names to booleans; torch.load fails on it")
    bits = tuple(bit for bit in ("conj", "neg") if bit in metadata)
    if "conj" in bits and not tensor.dtype.startswith("complex"):
        raise m.error(f"a {tensor.dtype} tensor has the conjugate bit; torch.load fails on it")
    return bits


def _tensor_arg(m: Machine, value: Any, what: str) -> TensorRef:
    if isinstance(value, TensorRef):
        return value
    raise m.error(f"{what} is not a tensor")


def _rebuild_parameter(m: Machine, args: tuple[Any, ...]) -> TensorRef:
    if len(args) not in (3, 4):
        raise TypeError(f"{len(args)} arguments, expected 3 or 4")
    _check_hooks(m, args[2])
    tensor = _tensor_arg(m, args[0], "parameter data")
    tensor.subclass = "torch.nn.parameter.Parameter"
    set_requires_grad(m, tensor, args[1], "Parameter")
    if len(args) == 4:
        check_state(m, args[3], "_rebuild_parameter_with_state")
        tensor.state = args[3]
    return tensor


def _rebuild_sparse_tensor(m: Machine, args: tuple[Any, ...]) -> TensorRef:
    layout, data = args
    if not isinstance(data, tuple) or len(data) < 3:
        raise m.error("sparse tensor data is not a tuple")
    coo = _device(layout) == "torch.sparse_coo"  # coo: (indices, values, size[, coalesced])
    if not coo and len(data) < 4:
        raise m.error("compressed sparse tensor data is too short")
    values = _tensor_arg(m, data[1] if coo else data[2], "sparse tensor values")
    size = data[2] if coo else data[3]
    tensor = TensorRef(
        values.dtype,
        _as_shape(m, size, "size"),
        None,
        values.device,
        kind="sparse",
        layout=_device(layout),
    )
    # Kept as saved so that replay can rebuild the tensor; nothing here is checked or used.
    if coo:
        tensor.parts = {
            "indices": data[0],
            "values": values,
            "coalesced": data[3] if len(data) > 3 else None,
        }
    else:
        tensor.parts = {"compressed_indices": data[0], "plain_indices": data[1], "values": values}
    return tensor


def _rebuild_qtensor(m: Machine, args: tuple[Any, ...]) -> TensorRef:
    if len(args) != 7:
        raise TypeError(f"{len(args)} arguments, expected 7")
    tensor = _strided(m, args)
    tensor.kind = "quantized"
    tensor.parts = {"quantizer": args[4]}  # (qscheme, scale, zero_point[, axis]) as saved
    set_requires_grad(m, tensor, args[5], "_rebuild_qtensor")
    return tensor


def _rebuild_meta(m: Machine, args: tuple[Any, ...]) -> TensorRef:
    dtype, size, stride, requires_grad = args
    tensor = TensorRef(_dtype_name(m, dtype), *_size_stride(m, size, stride), "meta", kind="meta")
    set_requires_grad(m, tensor, requires_grad, "_rebuild_meta_tensor_no_storage")
    return tensor


def _rebuild_wrapper_subclass(m: Machine, args: tuple[Any, ...]) -> TensorRef:
    cls, dtype, size, stride, offset, layout, device, _requires_grad = args
    tensor = TensorRef(
        _dtype_name(m, dtype),
        *_size_stride(m, size, stride),
        _device(device),
        offset=offset if type(offset) is int and 0 <= offset < 2**63 else 0,
        layout=_device(layout),
    )
    tensor.subclass = _name_of(cls)
    return tensor


def _rebuild_device_tensor(m: Machine, args: tuple[Any, ...]) -> TensorRef:
    data, dtype, device, requires_grad = args
    if isinstance(data, (TensorRef, NdArrayRef)):
        shape, stride = data.shape, None
    else:
        raise m.error("device tensor data is neither a tensor nor an array")
    return TensorRef(
        _dtype_name(m, dtype),
        shape,
        stride,
        _device(device),
        requires_grad=bool(requires_grad) if isinstance(requires_grad, bool) else False,
    )


def _rebuild_nested(m: Machine, args: tuple[Any, ...]) -> TensorRef:
    buffer = _tensor_arg(m, args[0], "nested tensor buffer")
    tensor = TensorRef(
        buffer.dtype, buffer.shape, None, buffer.device, kind="nested", storage=buffer.storage
    )
    if len(args) == 4:
        tensor.parts = {"buffer": buffer, "sizes": args[1], "strides": args[2], "offsets": args[3]}
    return tensor


def _rebuild_from_type(m: Machine, args: tuple[Any, ...]) -> Any:
    func, new_type, inner_args, state = args
    if isinstance(func, Call) and func.fn is _rebuild_from_type:
        # torch wraps a rebuild function once; a chain of these only recurses.
        raise m.error(f"{func.name} wraps another _rebuild_from_type")
    if not isinstance(inner_args, (tuple, list)):
        raise m.error("_rebuild_from_type arguments are not a tuple")
    m.charge_items(len(inner_args))
    result = m.call(func, tuple(inner_args))
    if isinstance(result, TensorRef):
        name = _name_of(new_type)
        if name not in ("torch.Tensor", "torch._tensor.Tensor"):
            result.subclass = name
        if state:
            check_state(m, state, "_rebuild_from_type_v2")
            result.state = state
    return result


def _get_layout(m: Machine, args: tuple[Any, ...]) -> TorchValue:
    (name,) = args
    if not isinstance(name, str):
        raise m.error("layout name is not a string")
    return TorchValue("torch.layout", name)


#: The device types torch 2.13's ``torch.device`` parses (observed: anything else is refused).
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
                f"torch.load refuses the file: invalid device string {shown(args[0], 60)} "
                "in torch.device",
            )
        return TorchValue("torch.device", args[0])
    if len(args) == 2 and isinstance(args[0], str) and type(args[1]) is int:
        if _DEVICE_TYPE.fullmatch(args[0]) is None or not 0 <= args[1] < 2**63:
            raise TorchRefuses(
                m.path,
                f"torch.load refuses the file: invalid device {shown(args[0], 60)}, "
                f"index {args[1] if abs(args[1]) < 10**20 else 'out of range'} in torch.device",
            )
        return TorchValue("torch.device", f"{args[0]}:{args[1]}")
    raise m.error("torch.device arguments are not a device")


def _torch_size(m: Machine, args: tuple[Any, ...]) -> tuple[Any, ...]:
    return _as_shape(m, args[0] if args else (), "size")


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
        return kind(source)

    return build


def _codecs_encode(m: Machine, args: tuple[Any, ...]) -> bytes:
    # Protocol 2 pickles spell bytes as _codecs.encode(text, 'latin1'); only that is allowed.
    text, encoding = args
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise m.error("_codecs.encode is allowed only as a latin-1 bytes literal")
    m.charge_bytes(len(text))
    return text.encode("latin-1")


def _reconstructor(m: Machine, args: tuple[Any, ...]) -> Opaque:
    cls = args[0]
    return Opaque(_name_of(cls), "object")


def _np_reconstruct(m: Machine, args: tuple[Any, ...]) -> NdArrayRef:
    return NdArrayRef()


def _np_dtype(m: Machine, args: tuple[Any, ...]) -> NumpyDtype:
    spec = args[0] if args else "?"
    return NumpyDtype(spec if isinstance(spec, str) else "?")


def _np_scalar(m: Machine, args: tuple[Any, ...]) -> NumpyScalar:
    dtype = args[0] if args else None
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
    "torch._utils._rebuild_tensor": _rebuild_tensor,
    "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
    "torch._utils._rebuild_tensor_v3": _rebuild_tensor_v3,
    "torch._utils._rebuild_parameter": _rebuild_parameter,
    "torch._utils._rebuild_parameter_with_state": _rebuild_parameter,
    "torch._utils._rebuild_sparse_tensor": _rebuild_sparse_tensor,
    "torch._utils._rebuild_qtensor": _rebuild_qtensor,
    "torch._utils._rebuild_meta_tensor_no_storage": _rebuild_meta,
    "torch._utils._rebuild_wrapper_subclass": _rebuild_wrapper_subclass,
    "torch._utils._rebuild_device_tensor_from_cpu_tensor": _rebuild_device_tensor,
    "torch._utils._rebuild_device_tensor_from_numpy": _rebuild_device_tensor,
    "torch._utils._rebuild_xla_tensor": _rebuild_device_tensor,
    "torch._utils._rebuild_nested_tensor": _rebuild_nested,
    "torch._tensor._rebuild_from_type_v2": _rebuild_from_type,
    "torch._tensor._rebuild_from_type": _rebuild_from_type,
    "torch.serialization._get_layout": _get_layout,
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
    "numpy.dtype": _np_dtype,
    "numpy.core.multiarray.scalar": _np_scalar,
    "numpy._core.multiarray.scalar": _np_scalar,
}

_TYPES = {
    "torch.Tensor",
    "torch._tensor.Tensor",
    "torch.nn.parameter.Parameter",
    "torch.nn.Parameter",
    "numpy.ndarray",
    "builtins.object",
}

#: Every dotted name the reader interprets; anything else is reported, never imported.
ALLOWED_NAMES = frozenset(
    set(_CALLS)
    | _TYPES
    | {"torch.storage.UntypedStorage"}
    | {f"torch.{n}" for n in STORAGE_DTYPES}
    | {f"torch.{n}" for n in DTYPE_ITEMSIZE}
    | {f"torch.{n}" for n in _DTYPE_ALIASES}
    | {f"torch.{n}" for n in _LAYOUTS}
    | {f"torch.{n}" for n in _QSCHEMES}
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
    if module == "torch":
        if name == "UntypedStorage":
            m.deviate(
                "storage class torch.UntypedStorage, which torch.save names "
                "torch.storage.UntypedStorage"
            )
        if name in STORAGE_DTYPES:
            return StorageType(name, STORAGE_DTYPES[name])
        if name in DTYPE_ITEMSIZE or name in _DTYPE_ALIASES:
            return DtypeRef(_DTYPE_ALIASES.get(name, name))
        if name in _LAYOUTS:
            return TorchValue("torch.layout", dotted)
        if name in _QSCHEMES:
            return TorchValue("torch.qscheme", dotted)
    return GlobalRef(global_name(module, name))
